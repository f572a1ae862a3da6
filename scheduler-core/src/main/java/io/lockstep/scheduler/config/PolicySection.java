package io.lockstep.scheduler.config;

import io.lockstep.scheduler.CatchUp;
import io.lockstep.scheduler.JobDefinition;
import io.lockstep.scheduler.Overlap;
import io.lockstep.scheduler.Recover;
import io.lockstep.scheduler.Retry;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.yaml.snakeyaml.nodes.Node;

/**
 * Reads the policy keys that {@code defaults} and every job share ({@code zone lease misfireGrace
 * overlap timeout retry recover catchUp catchUpWindow jitter jitterSeed}), each over the values it inherits: a job's
 * over {@code defaults}, {@code defaults} over the built-in ones ({@link Policies#BUILT_IN}). A key
 * left out keeps the inherited value; a value out of bounds is reported with its line and path and
 * replaced by the bound (or the inherited value), so that the rest of the file is still read and
 * every problem found. Not thread-safe: one per load, like the {@link ConfigNodes} it reads through.
 */
final class PolicySection {

    /** The policy keys, in the order the docs list them; {@code defaults} takes exactly these, a job these and its own. */
    static final List<String> KEYS = List.of("zone", "lease", "misfireGrace", "overlap", "timeout",
            "retry", "recover", "catchUp", "catchUpWindow", "jitter", "jitterSeed");
    static final Set<String> RETRY_KEYS = Set.of("maxAttempts", "backoff", "maxBackoff");

    private final ConfigNodes nodes;

    PolicySection(ConfigNodes nodes) {
        this.nodes = nodes;
    }

    /** A {@code defaults}-like mapping at {@code path}, keys outside {@code allowed} reported; {@code inherited} when absent. */
    Policies read(Node node, String path, Policies inherited, Set<String> allowed) {
        if (node == null) {
            return inherited;
        }
        return read(nodes.mapping(node, path, allowed).orElse(Map.of()), path, inherited);
    }

    /** The policy keys of a mapping already read (its unknown keys already reported), over {@code inherited}. */
    Policies read(Map<String, Node> m, String path, Policies inherited) {
        ZoneId zone = inherited.zone();
        if (m.containsKey("zone")) {
            Optional<String> text = nodes.string(m.get("zone"), path + ".zone");
            if (text.isPresent()) {
                try {
                    zone = ZoneId.of(text.get());
                } catch (DateTimeException e) {
                    nodes.problem(m.get("zone"), path + ".zone", "unknown time zone \"" + text.get() + "\" (use a region id such as Europe/Lisbon or UTC)");
                }
            }
        }
        Duration lease = nodes.duration(m.get("lease"), path + ".lease").orElse(inherited.lease());
        if (m.containsKey("lease") && lease.compareTo(JobDefinition.MIN_LEASE) < 0) {
            nodes.problem(m.get("lease"), path + ".lease", "must be at least 1s, but was " + Durations.format(lease));
            lease = JobDefinition.MIN_LEASE;
        }
        Duration grace = nodes.duration(m.get("misfireGrace"), path + ".misfireGrace").orElse(inherited.misfireGrace());
        if (m.containsKey("misfireGrace") && grace.compareTo(JobDefinition.MIN_MISFIRE_GRACE) < 0) {
            nodes.problem(m.get("misfireGrace"), path + ".misfireGrace", "must be at least " + Durations.format(JobDefinition.MIN_MISFIRE_GRACE)
                    + ": a slot starts some milliseconds after its time (more under load), so a shorter grace reports slots "
                    + "missed that were only a little late; was " + Durations.format(grace));
            grace = JobDefinition.MIN_MISFIRE_GRACE;
        }
        Overlap overlap = choice(m.get("overlap"), path + ".overlap", Overlap.class).orElse(inherited.overlap());
        Duration timeout = nodes.duration(m.get("timeout"), path + ".timeout").orElse(inherited.timeout());
        Retry retry = readRetry(m.get("retry"), path + ".retry", inherited.retry());
        Recover recover = choice(m.get("recover"), path + ".recover", Recover.class).orElse(inherited.recover());
        CatchUp catchUp = choice(m.get("catchUp"), path + ".catchUp", CatchUp.class).orElse(inherited.catchUp());
        Duration window = nodes.duration(m.get("catchUpWindow"), path + ".catchUpWindow").orElse(inherited.catchUpWindow());
        if (m.containsKey("catchUpWindow") && window.compareTo(JobDefinition.MAX_CATCH_UP_WINDOW) > 0) {
            nodes.problem(m.get("catchUpWindow"), path + ".catchUpWindow", "must be at most 7d, but was " + Durations.format(window));
            window = JobDefinition.MAX_CATCH_UP_WINDOW;
        }
        Duration jitter = nodes.duration(m.get("jitter"), path + ".jitter").orElse(inherited.jitter());
        if (m.containsKey("jitter") && !jitter.isZero() && jitter.compareTo(Duration.ofSeconds(1)) < 0) {
            nodes.problem(m.get("jitter"), path + ".jitter", "must be at least 1s (or 0s for none), but was " + Durations.format(jitter));
            jitter = inherited.jitter();
        }
        String seed = inherited.jitterSeed();
        if (m.containsKey("jitterSeed")) {
            Optional<String> text = nodes.string(m.get("jitterSeed"), path + ".jitterSeed");
            if (text.isPresent() && text.get().isBlank()) {
                nodes.problem(m.get("jitterSeed"), path + ".jitterSeed", "must not be empty (leave it out to hash the job's name)");
            } else if (text.isPresent()) {
                seed = text.get();
            }
        }
        return new Policies(zone, lease, grace, overlap, timeout, retry, recover, catchUp, window, jitter, seed,
                m.containsKey("jitter") ? m.get("jitter") : inherited.jitterNode());
    }

    /** {@code retry: { maxAttempts, backoff, maxBackoff }}; keys left out keep the inherited values. */
    private Retry readRetry(Node node, String path, Retry inherited) {
        if (node == null) {
            return inherited;
        }
        Map<String, Node> m = nodes.mapping(node, path, RETRY_KEYS).orElse(Map.of());
        int attempts = nodes.integer(m.get("maxAttempts"), path + ".maxAttempts").orElse(inherited.maxAttempts());
        if (attempts < 1 || attempts > 100) {
            nodes.problem(m.get("maxAttempts"), path + ".maxAttempts", "must be between 1 and 100, but was " + attempts);
            return inherited;
        }
        Duration backoff = nodes.duration(m.get("backoff"), path + ".backoff").orElse(inherited.backoff());
        Duration max = nodes.duration(m.get("maxBackoff"), path + ".maxBackoff").orElse(
                m.containsKey("backoff") && backoff.compareTo(inherited.maxBackoff()) > 0 ? backoff : inherited.maxBackoff());
        if (max.compareTo(backoff) < 0) {
            nodes.problem(m.get("maxBackoff"), path + ".maxBackoff", "must be at least backoff (" + Durations.format(backoff)
                    + "), but was " + Durations.format(max));
            return inherited;
        }
        return new Retry(attempts, backoff, max);
    }

    /** One of an enum's constants, written in lower case. */
    private <E extends Enum<E>> Optional<E> choice(Node node, String path, Class<E> type) {
        if (node == null) {
            return Optional.empty();
        }
        Optional<String> text = nodes.string(node, path);
        if (text.isEmpty()) {
            return Optional.empty();
        }
        for (E constant : type.getEnumConstants()) {
            if (constant.name().equalsIgnoreCase(text.get())) {
                return Optional.of(constant);
            }
        }
        List<String> names = new ArrayList<>();
        for (E constant : type.getEnumConstants()) {
            names.add(constant.name().toLowerCase(Locale.ROOT));
        }
        String allowed = names.size() == 2 ? names.get(0) + " or " + names.get(1)
                : String.join(", ", names.subList(0, names.size() - 1)) + " or " + names.get(names.size() - 1);
        nodes.problem(node, path, "must be " + allowed + ", but was \"" + text.get() + "\"");
        return Optional.empty();
    }

    /**
     * The policy keys shared by {@code defaults} and each job, resolved; {@code jitterSeed} null
     * hashes the job's name; {@code jitterNode} is where the jitter was set (null: built in), for a
     * problem the job's schedule finds with it.
     */
    record Policies(ZoneId zone, Duration lease, Duration misfireGrace, Overlap overlap, Duration timeout,
            Retry retry, Recover recover, CatchUp catchUp, Duration catchUpWindow, Duration jitter, String jitterSeed,
            Node jitterNode) {
        static final Policies BUILT_IN = new Policies(ZoneId.of("UTC"), JobDefinition.DEFAULT_LEASE,
                JobDefinition.DEFAULT_MISFIRE_GRACE, JobDefinition.DEFAULT_OVERLAP, JobDefinition.DEFAULT_TIMEOUT,
                JobDefinition.DEFAULT_RETRY, JobDefinition.DEFAULT_RECOVER, JobDefinition.DEFAULT_CATCH_UP,
                JobDefinition.DEFAULT_CATCH_UP_WINDOW, Duration.ZERO, null, null);
    }
}
