package io.lockstep.worker.audit;

import io.lockstep.scheduler.Fingerprints;
import io.lockstep.scheduler.JobDefinition;
import io.lockstep.scheduler.config.LockstepConfig;
import io.lockstep.worker.audit.Ledger.Life;
import io.lockstep.worker.audit.Ledger.Segment;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;
import java.util.TreeSet;

/**
 * Which slots should have been decided, by the job definitions each worker had in force. A worker logs the hash of
 * its job definitions ({@code config_hash}, {@link Fingerprints#hash}) in {@code worker_started} and, after a reload,
 * in {@code schedule_updated}; each config given to the audit is matched by the same hash. A life that logged no hash
 * (a log written before the field) ran the first config given. A hash no given config matches makes the slots only
 * it could say unverified ("config not given"), never violations.
 *
 * <p>Around a reload the worker's two configs may both answer for a slot: a slot due up to the reload is still decided
 * under the definition it fell due under, and new definitions start at their next slot. A worker logs the instant
 * that splits them ({@code effective_at} in {@code schedule_updated}, cluster time): slots up to it are checked
 * against the old config, slots after it against the new one, exactly. For a log without that field the reload's
 * time is read through the worker's clock (its offset measured over a round trip, and the update's own work before
 * the line), so within 500 ms of it a slot one config schedules and the other does not is unverified for that worker.
 */
final class Targets {

    /** How far a reload's logged time may be from the moment it took effect, by Redis time. */
    static final long RELOAD_UNCERTAINTY_MS = 500;

    /** A slot to check under {@code def}; or, when {@code def} is null, one the log cannot settle and why. */
    record Target(JobDefinition def, String unverified) {}

    private final List<LockstepConfig> configs;
    private final Map<String, LockstepConfig> byHash = new LinkedHashMap<>();
    /** The hashes lives logged that no given config matches. */
    final Set<String> notGiven = new TreeSet<>();
    /** The hashes lives logged that a given config matches. */
    final Set<String> matched = new TreeSet<>();

    Targets(List<LockstepConfig> configs) {
        this.configs = List.copyOf(configs);
        for (LockstepConfig c : configs) {
            byHash.putIfAbsent(hash(c), c);
        }
    }

    /** The hash a worker logs for {@code config}'s job definitions (disabled ones included, as the worker's). */
    static String hash(LockstepConfig config) {
        return Fingerprints.hash(Fingerprints.describe(config.jobs()));
    }

    /** Notes which logged hashes match a given config; call once with every life. */
    void see(List<Life> lives) {
        for (Life l : lives) {
            for (Segment s : l.configs()) {
                if (s.hash() != null) {
                    (byHash.containsKey(s.hash()) ? matched : notGiven).add(s.hash());
                }
            }
        }
    }

    /** The config that {@code hash} stands for: the first given for null, null when not given. */
    private LockstepConfig config(String hash) {
        return hash == null ? configs.get(0) : byHash.get(hash);
    }

    /** The jobs enabled in any given config, in the order the configs list them. */
    List<String> jobs() {
        Set<String> names = new LinkedHashSet<>();
        configs.forEach(c -> c.jobs().stream().filter(JobDefinition::enabled).forEach(d -> names.add(d.name())));
        return List.copyOf(names);
    }

    /** Every job name of every given config, enabled or not. */
    Set<String> known() {
        Set<String> names = new TreeSet<>();
        configs.forEach(c -> c.jobs().forEach(d -> names.add(d.name())));
        return names;
    }

    /** The every-worker jobs (enabled in some given config): each worker's instance of one is checked on its own. */
    Set<String> everyWorker() {
        Set<String> names = new TreeSet<>();
        configs.forEach(c -> c.jobs().stream().filter(d -> d.enabled() && d.runOn().everyWorker()).forEach(d -> names.add(d.name())));
        return names;
    }

    /** A definition of {@code job} from the given configs (enabled first): for manual runs, which no schedule places. */
    JobDefinition anyDef(String job) {
        JobDefinition disabled = null;
        for (LockstepConfig c : configs) {
            for (JobDefinition d : c.jobs()) {
                if (d.name().equals(job)) {
                    if (d.enabled()) {
                        return d;
                    }
                    disabled = disabled == null ? d : disabled;
                }
            }
        }
        return disabled;
    }

    /**
     * The enabled definition of {@code job} in {@code c}; for an every-worker job's instance ({@code <job>@<worker>}),
     * its job's definition under the instance's name (what that worker ran).
     */
    private static JobDefinition enabled(LockstepConfig c, String job) {
        String name = io.lockstep.scheduler.RunOn.jobOf(job);
        for (JobDefinition d : c.jobs()) {
            if (d.name().equals(name) && d.enabled()) {
                if (!name.equals(job)) {
                    return d.runOn().everyWorker() ? d.instanceFor(job.substring(name.length() + 1)) : null;
                }
                return d.runOn().everyWorker() ? null : d; // an every-worker job's own name has no slots: its instances do
            }
        }
        return null;
    }

    private static boolean scheduled(JobDefinition d, long slot) {
        return d != null && d.schedule().next(Instant.ofEpochMilli(slot - 1)).map(i -> i.toEpochMilli() == slot).orElse(false);
    }

    /** The slots of {@code job} in [from, to] that any given config schedules, in order, each once (lazily: a month of seconds is long). */
    Iterator<Long> candidates(String job, long from, long to) {
        Map<String, JobDefinition> bySchedule = new LinkedHashMap<>();
        for (LockstepConfig c : configs) {
            JobDefinition d = enabled(c, job);
            if (d != null) {
                bySchedule.putIfAbsent(d.schedule().toString(), d); // expressions as hashed, zone and offset
            }
        }
        List<JobDefinition> defs = new ArrayList<>(bySchedule.values());
        long[] next = new long[defs.size()];
        for (int i = 0; i < next.length; i++) {
            next[i] = defs.get(i).schedule().next(Instant.ofEpochMilli(from - 1)).map(Instant::toEpochMilli).orElse(Long.MAX_VALUE);
        }
        return new Iterator<>() {
            private long min() {
                long m = Long.MAX_VALUE;
                for (long n : next) {
                    m = Math.min(m, n);
                }
                return m;
            }

            @Override
            public boolean hasNext() {
                return min() <= to;
            }

            @Override
            public Long next() {
                long m = min();
                if (m > to) {
                    throw new NoSuchElementException();
                }
                for (int i = 0; i < next.length; i++) {
                    if (next[i] == m) {
                        next[i] = defs.get(i).schedule().next(Instant.ofEpochMilli(m)).map(Instant::toEpochMilli).orElse(Long.MAX_VALUE);
                    }
                }
                return m;
            }
        };
    }

    /**
     * The config hashes {@code l} may have had in force for {@code slot}, the one at the slot first: with a reload
     * whose instant the worker logged ({@code effective_at}), exactly the one at the slot; with one read from the
     * line's time, also the configs on both sides of it when it lies within {@link #RELOAD_UNCERTAINTY_MS}.
     */
    private static List<String> around(Life l, long slot) {
        List<String> hashes = new ArrayList<>();
        hashes.add(l.configAt(slot));
        List<Segment> segments = l.configs();
        for (int i = 0; i < segments.size(); i++) {
            Segment s = segments.get(i);
            if (!s.exact() && s.from() > slot - RELOAD_UNCERTAINTY_MS && s.from() <= slot + RELOAD_UNCERTAINTY_MS) {
                if (i > 0 && !hashes.contains(segments.get(i - 1).hash())) { // hashes may be null (not logged)
                    hashes.add(segments.get(i - 1).hash());
                }
                if (!hashes.contains(s.hash())) {
                    hashes.add(s.hash());
                }
            }
        }
        return hashes;
    }

    /**
     * Whether worker life {@code l} answers for slot {@code slot} of {@code job}: a target with its definition; null when
     * its config does not schedule it; unverified when its config was not given, or it reloaded within
     * {@link #RELOAD_UNCERTAINTY_MS} of the slot to a config that disagrees about it.
     */
    Target of(Life l, String job, long slot) {
        List<String> hashes = around(l, slot);
        JobDefinition def = null;
        int scheduling = 0;
        for (String h : hashes) {
            LockstepConfig c = config(h);
            if (c == null) {
                return new Target(null, "config " + h + " of " + l.worker() + " not given (--config)");
            }
            JobDefinition d = enabled(c, job);
            if (scheduled(d, slot)) {
                scheduling++;
                def = def == null ? d : def;
            }
        }
        if (scheduling == 0) {
            return null;
        }
        if (scheduling < hashes.size()) {
            return new Target(null, l.worker() + " reloaded its config within " + RELOAD_UNCERTAINTY_MS + " ms of it");
        }
        return new Target(def, null);
    }

    /**
     * Whether slot {@code slot} of {@code job} is a target: some worker alive at it had a config (within a reload's
     * uncertainty) that schedules it; unverified when only configs not given could say. When no worker was alive, the
     * config last in force before it (or the first one logged) says.
     */
    Target at(String job, long slot, List<Life> lives) {
        String unverified = null;
        boolean covered = false;
        Life before = null, first = null;
        for (Life l : lives) {
            if (slot >= l.startCluster() && slot <= l.untilCluster()) {
                covered = true;
                for (String h : around(l, slot)) {
                    LockstepConfig c = config(h);
                    if (c == null) {
                        unverified = unverified != null ? unverified : "config " + h + " of " + l.worker() + " not given (--config)";
                    } else if (scheduled(enabled(c, job), slot)) {
                        return new Target(enabled(c, job), null);
                    }
                }
            } else if (l.untilCluster() < slot && (before == null || l.untilCluster() > before.untilCluster())) {
                before = l;
            } else if (first == null || l.startCluster() < first.startCluster()) {
                first = l;
            }
        }
        if (covered) {
            return unverified == null ? null : new Target(null, unverified);
        }
        Life reference = before != null ? before : first;
        LockstepConfig c = reference == null ? configs.get(0) : config(reference.configAt(slot));
        JobDefinition d = c == null ? null : enabled(c, job);
        return scheduled(d, slot) ? new Target(d, null) : null;
    }
}
