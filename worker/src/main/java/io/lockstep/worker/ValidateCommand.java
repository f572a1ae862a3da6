package io.lockstep.worker;

import io.lockstep.scheduler.JobDefinition;
import io.lockstep.scheduler.JobFactory;
import io.lockstep.scheduler.config.LockstepConfig;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code validate --config FILE}: every check that needs no Redis; prints each job's next fire times. */
@Command(name = "validate", mixinStandardHelpOptions = true, description = "Checks a config file without running it and prints each job's next fire times.")
final class ValidateCommand implements Callable<Integer> {


    @Spec
    CommandSpec spec;

    @Option(names = "--config", required = true, paramLabel = "FILE", description = "the YAML file")
    Path config;

    @Option(names = "--next", paramLabel = "N", defaultValue = "3", description = "how many next fire times to print per job (default: ${DEFAULT-VALUE})")
    int next;

    @Mixin
    JobsDirectory jobs;

    @Override
    public Integer call() throws Exception {
        return jobs.run(spec.commandLine().getErr(), this::validate);
    }

    private int validate() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        Optional<ServiceLoader.Provider<JobFactory>> factory = Configs.factory(err);
        if (factory == null) {
            return WorkerMain.BAD_INPUT;
        }
        Optional<LockstepConfig> loaded = Configs.load(config, err, true, factory.isPresent());
        if (loaded.isEmpty()) {
            return WorkerMain.BAD_INPUT;
        }
        LockstepConfig c = loaded.get();
        if (factory.isPresent() && !Configs.builtByFactory(config, c, factory.get(), err)) {
            return WorkerMain.BAD_INPUT; // its jobs' params checked as run checks them (F4 of the 2026-12-04 trial)
        }
        out.println(config + ": valid, " + c.jobs().size() + (c.jobs().size() == 1 ? " job" : " jobs")
                + ", redis " + c.redis().describe() + factory.map(f -> ", jobs built by " + f.type().getName()).orElse(""));
        if (next < 1 || next > 1000) {
            err.println("--next must be between 1 and 1000, but was " + next);
            return WorkerMain.BAD_INPUT;
        }
        Instant now = Instant.now();
        for (JobDefinition job : c.jobs()) {
            List<String> fires = new ArrayList<>();
            Instant cursor = now;
            for (int i = 0; i < next; i++) {
                Optional<Instant> fire = job.schedule().next(cursor);
                if (fire.isEmpty()) {
                    break;
                }
                cursor = fire.get();
                fires.add(ZonedDateTime.ofInstant(cursor, job.schedule().zone()).toOffsetDateTime().toString());
            }
            out.printf("  %-24s %-38s %s%s%n", job.name(), Configs.schedule(job.schedule()),
                    fires.isEmpty() ? "never fires again" : "next " + String.join(", ", fires),
                    job.enabled() ? "" : " (disabled)");
        }
        return WorkerMain.OK;
    }
}
