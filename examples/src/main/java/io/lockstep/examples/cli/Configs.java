package io.lockstep.examples.cli;

import io.lockstep.redis.RedisLockProvider;
import io.lockstep.scheduler.config.ConfigException;
import io.lockstep.scheduler.config.ConfigLoader;
import io.lockstep.scheduler.config.ConfigProblem;
import io.lockstep.scheduler.config.LockstepConfig;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Optional;

/** What {@code run} and {@code validate} share: loading a file and printing its problems. */
final class Configs {

    private Configs() {}

    /** The config, or empty after printing one line per problem to {@code err}. */
    static Optional<LockstepConfig> load(Path file, PrintWriter err) {
        try {
            return Optional.of(ConfigLoader.defaults().load(file));
        } catch (ConfigException e) {
            for (ConfigProblem problem : e.problems()) {
                err.println(problem);
            }
            err.println(e.problems().size() + (e.problems().size() == 1 ? " problem" : " problems") + " in " + file);
            return Optional.empty();
        }
    }

    /** A provider for the config's redis section (one server, Sentinel or Cluster; ACL; TLS); it owns its client. */
    static RedisLockProvider provider(LockstepConfig config) {
        return RedisLockProvider.builder().settings(config.redis()).historyKeep(config.historyKeep()).build();
    }
}
