package io.lockstep.worker;

import io.lockstep.redis.RedisAdmin;
import io.lockstep.redis.RedisLockProvider;
import io.lockstep.scheduler.config.LockstepConfig;
import io.lockstep.scheduler.lock.LockException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * What the operator commands ({@code status}, {@code history}, {@code trigger}, {@code pause},
 * {@code resume}) share: they read the same YAML as the workers (for Redis and the job list), need
 * no worker of their own, and fail with one line: exit 2 for a bad config or usage (an unknown
 * job), 1 when Redis cannot be reached. They never load a job class (nor run its constructor): an
 * operator's machine needs Lockstep, the YAML and Redis, not the application; {@code validate}
 * and {@code run} check the classes.
 */
abstract class AdminCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Option(names = "--config", required = true, paramLabel = "FILE", description = "the workers' YAML file")
    Path config;

    /** Runs the command against Redis; answers the exit code. */
    abstract int run(LockstepConfig config, RedisAdmin admin, PrintWriter out, PrintWriter err);

    @Override
    public final Integer call() {
        PrintWriter err = spec.commandLine().getErr();
        Optional<LockstepConfig> loaded = Configs.load(config, err, false, false);
        if (loaded.isEmpty()) {
            return WorkerMain.BAD_INPUT;
        }
        RedisLockProvider provider;
        try {
            provider = Configs.provider(loaded.get());
        } catch (IllegalArgumentException e) {
            err.println(config + ": redis: " + e.getMessage());
            return WorkerMain.BAD_INPUT;
        }
        try (provider) {
            provider.ping();
            return run(loaded.get(), RedisAdmin.of(provider), spec.commandLine().getOut(), err);
        } catch (LockException e) {
            err.println("error: " + e.getMessage());
            return WorkerMain.RUNTIME_FAILURE;
        }
    }

    /** One line naming an unknown job, and the exit code for it. */
    static int unknownJob(LockstepConfig config, String job, PrintWriter err) {
        err.println("error: no job named \"" + job + "\" in " + config.source() + " (jobs: "
                + String.join(", ", config.jobs().stream().map(j -> j.name()).toList()) + ")");
        return WorkerMain.BAD_INPUT;
    }

    static boolean knows(LockstepConfig config, String job) {
        return config.jobs().stream().anyMatch(j -> j.name().equals(job));
    }

    /** {@code t} relative to {@code now}, as a person says it: "in 4 s", "12 s ago", "3 h ago". */
    static String relative(Instant t, Instant now) {
        Duration d = Duration.between(now, t);
        boolean future = !d.isNegative();
        long s = Math.abs(d.toSeconds());
        String amount = s < 1 ? "now" : s < 120 ? s + " s" : s < 7_200 ? s / 60 + " min" : s < 172_800 ? s / 3_600 + " h" : s / 86_400 + " d";
        return s < 1 ? "now" : future ? "in " + amount : amount + " ago";
    }
}
