package io.lockstep.worker;

import io.lockstep.redis.RedisLockProvider;
import io.lockstep.scheduler.JobFactory;
import io.lockstep.scheduler.config.ConfigException;
import io.lockstep.scheduler.config.ConfigLoader;
import io.lockstep.scheduler.config.ConfigProblem;
import io.lockstep.scheduler.config.LockstepConfig;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;

/** What {@code run} and {@code validate} share: loading a file and printing its problems. */
final class Configs {

    private Configs() {}

    /**
     * A schedule as people read it: the expressions as written (several joined by {@code ; }),
     * what {@code H} hashed to, the zone, and the jitter's stable offset.
     */
    static String schedule(io.lockstep.scheduler.cron.CronSchedule s) {
        String text = s.expression();
        if (!s.expanded().equals(s.expressions())) {
            text += " = " + String.join("; ", s.expanded());
        }
        text += " " + s.zone().getId();
        if (!s.jitter().isZero()) {
            text += " +" + io.lockstep.scheduler.config.Durations.format(s.offset())
                    + " (jitter " + io.lockstep.scheduler.config.Durations.format(s.jitter()) + ")";
        }
        return text;
    }

    /**
     * The config, or empty after printing one line per problem to {@code err}. With
     * {@code checkClasses} every job class must load and be a concrete {@code Job}, and, unless the
     * application brings a {@link JobFactory} ({@code factory}), have a public no-arg constructor,
     * which is run once; without, no job class is loaded at all.
     */
    static Optional<LockstepConfig> load(Path file, PrintWriter err, boolean checkClasses, boolean factory) {
        try {
            return Optional.of(ConfigLoader.defaults().checkingClasses(checkClasses).builtByReflection(!factory).load(file));
        } catch (ConfigException e) {
            print(e, file, err);
            return Optional.empty();
        }
    }

    /** One line per problem, then how many there are in {@code file}. */
    static void print(ConfigException e, Path file, PrintWriter err) {
        for (ConfigProblem problem : e.problems()) {
            err.println(problem);
        }
        err.println(e.problems().size() + (e.problems().size() == 1 ? " problem" : " problems") + " in " + file);
    }

    /**
     * Whether the application's factory builds every job of {@code config} with params that fit
     * its type, as {@code run} will check them; else false after printing why (the problems placed
     * in {@code file}), the factory closed in any case. A factory that cannot be created here (its
     * constructor needs what only the worker's hosts have: a system property, a database) is one
     * warning line, and its jobs' params go unchecked: {@code validate} runs where {@code run}'s
     * environment may not be, as in a build; {@code run} still refuses such params.
     */
    static boolean builtByFactory(Path file, LockstepConfig config, ServiceLoader.Provider<JobFactory> type, PrintWriter err) {
        JobFactory factory;
        try {
            factory = RunCommand.newFactory(type);
        } catch (io.lockstep.scheduler.LockstepException e) {
            err.println("warning: " + e.getMessage() + "; its jobs' typed params were not checked (run checks them)");
            return true;
        }
        try {
            JobFactory.check(factory, config.jobs());
            return true;
        } catch (ConfigException e) {
            print(io.lockstep.scheduler.config.ConfigLoader.located(file, e), file, err);
            return false;
        } catch (io.lockstep.scheduler.LockstepException e) {
            err.println("error: " + e.getMessage());
            return false;
        } catch (RuntimeException e) { // a job's paramsType() or close() that throws, or a bug: still one line
            err.println("error: building the jobs with " + type.type().getName() + " failed: " + e);
            return false;
        } finally {
            RunCommand.close(factory, err);
        }
    }

    /**
     * The application's {@link JobFactory}, found with {@link ServiceLoader} (a jobs JAR names its
     * class in {@code META-INF/services/io.lockstep.scheduler.JobFactory}): empty when there is none,
     * and one line on {@code err} with a null answer when there are several (keep one) or one cannot
     * be loaded. Not instantiated here: {@link ServiceLoader.Provider#get()} does that.
     */
    static Optional<ServiceLoader.Provider<JobFactory>> factory(PrintWriter err) {
        List<ServiceLoader.Provider<JobFactory>> found;
        try {
            found = ServiceLoader.load(JobFactory.class, Thread.currentThread().getContextClassLoader()).stream().toList();
        } catch (ServiceConfigurationError | LinkageError e) { // not found, or a class it needs is missing
            err.println("error: a job factory named in META-INF/services/" + JobFactory.class.getName() + " cannot be loaded: "
                    + e.getMessage());
            return null;
        }
        if (found.size() > 1) {
            err.println("error: more than one job factory on the class path (" + String.join(", ", found.stream()
                    .map(p -> p.type().getName()).toList()) + "); keep one");
            return null;
        }
        return found.stream().findFirst();
    }

    /** A provider for the config's redis section (one server, Sentinel or Cluster; ACL; TLS); it owns its client. */
    static RedisLockProvider provider(LockstepConfig config) {
        return RedisLockProvider.builder().settings(config.redis()).historyKeep(config.historyKeep()).build();
    }
}
