package io.lockstep.worker;

import io.lockstep.redis.RedisAdmin;
import io.lockstep.scheduler.config.Durations;
import io.lockstep.scheduler.config.LockstepConfig;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code pause --config FILE (--job NAME | --all) [--note TEXT] [--for D]}: cluster-wide, stored in
 * Redis; from each job's next slot on, every worker sees it in the claim itself, and each paused
 * slot is reported {@code slot_skipped} (reason {@code paused}) by exactly one worker. A manual run
 * ({@code trigger}) still runs.
 */
@Command(name = "pause", mixinStandardHelpOptions = true,
        description = "Pauses a job (or all) on every worker from its next slot; each paused slot is reported once.")
final class PauseCommand extends AdminCommand {

    /** Which jobs: one by name, or all of the config's. */
    static final class Which {
        @Option(names = "--job", required = true, paramLabel = "NAME", description = "the job")
        String job;

        @Option(names = "--all", required = true, description = "every job of the config")
        boolean all;

        /** The jobs meant; empty (after one line on {@code err}) when the job is unknown. */
        Optional<List<String>> resolve(LockstepConfig config, PrintWriter err) {
            if (all) {
                return Optional.of(config.jobs().stream().map(j -> j.name()).toList());
            }
            if (!knows(config, job)) {
                unknownJob(config, job, err);
                return Optional.empty();
            }
            return Optional.of(List.of(job));
        }
    }

    @ArgGroup(exclusive = true, multiplicity = "1")
    Which which;

    @Option(names = "--note", paramLabel = "TEXT", defaultValue = "", description = "why (shown by status)")
    String note;

    @Option(names = "--for", paramLabel = "D", description = "ends by itself after this long (250ms, 30s, 5m, 2h, 1d)")
    String duration;

    @Option(names = "--json", description = "one JSON document: {\"paused\":[{\"job\",\"note\",\"until\"}]}")
    boolean json;

    @Override
    int run(LockstepConfig config, RedisAdmin admin, PrintWriter out, PrintWriter err) {
        Optional<Duration> until = Optional.empty();
        if (duration != null) {
            Optional<Duration> d = Durations.parse(duration);
            if (d.isEmpty() || d.get().toMillis() < 1) {
                err.println("error: --for must be a positive duration such as 30s, 5m or 2h, but was \"" + duration + "\"");
                return WorkerMain.BAD_INPUT;
            }
            until = d;
        }
        Optional<List<String>> jobs = which.resolve(config, err);
        if (jobs.isEmpty()) {
            return WorkerMain.BAD_INPUT;
        }
        String by = operator();
        com.fasterxml.jackson.databind.node.ObjectNode result = new com.fasterxml.jackson.databind.ObjectMapper().createObjectNode();
        com.fasterxml.jackson.databind.node.ArrayNode paused = result.putArray("paused");
        java.time.Instant now = java.time.Instant.ofEpochMilli(admin.serverTimeMillis());
        for (String job : jobs.get()) {
            admin.pause(job, note, until, by);
            paused.addObject().put("job", job).put("note", note).put("until", until.map(d -> now.plus(d).toString()).orElse(null));
            if (!json) {
                out.println("paused " + job + until.map(d -> " for " + Durations.format(d)).orElse(" until resumed")
                        + (note.isEmpty() ? "" : " (" + note + ")"));
            }
        }
        if (json) {
            out.println(result);
        }
        return WorkerMain.OK;
    }

    /** Who runs a command of this CLI, as its records name them: {@code <user>@<host>}. */
    static String operator() {
        return System.getProperty("user.name", "") + "@" + hostName();
    }

    static String hostName() {
        try {
            return java.net.InetAddress.getLocalHost().getHostName();
        } catch (Exception e) {
            return "unknown";
        }
    }
}
