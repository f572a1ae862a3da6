package io.lockstep.worker;

import io.lockstep.redis.RedisLockProvider;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.lockstep.scheduler.JobFactory;
import io.lockstep.scheduler.LockstepException;
import io.lockstep.scheduler.Scheduler;
import io.lockstep.scheduler.config.LockstepConfig;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.concurrent.Callable;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import sun.misc.Signal;
import sun.misc.SignalHandler;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code run --config FILE [--worker-id ID]}: runs until SIGTERM or SIGINT, then drains within
 * {@code worker.shutdownTimeout}; or until a drain ({@code lockstep drain --worker ID}, or SIGUSR1:
 * within an hour), then exits 0 once its running jobs ended (a SIGTERM during a drain gives them
 * no more than {@code worker.shutdownTimeout} from then); reloads the file's jobs on SIGHUP ({@link ConfigReload}); traces runs
 * when the OTEL_* environment asks for it ({@link Telemetry}).
 *
 * <p>Nothing starts unless everything is in order: the config is valid, every job class loads,
 * and Redis answers and accepts the credentials. Otherwise one line on stderr and exit 2 (config)
 * or 1 (Redis).
 */
@Command(name = "run", mixinStandardHelpOptions = true, description = "Runs the jobs of a config file until SIGTERM or SIGINT, then drains running jobs.")
final class RunCommand implements Callable<Integer> {

    /** The request SIGTERM and SIGINT put in the main thread's queue (the others are reloads, named by their trigger). */
    private static final String STOP = "stop";
    /** A drain: {@code DRAIN} then how long its running jobs may take, in ms ({@code lockstep drain}, SIGUSR1). */
    private static final String DRAIN = "drain ";
    /** The drain ended: the worker exits. */
    private static final String DRAINED = "drained";

    @Spec
    CommandSpec spec;

    @Option(names = "--config", required = true, paramLabel = "FILE", description = "the YAML file")
    Path config;

    @Option(names = "--worker-id", paramLabel = "ID", description = "this worker's id (default: worker.id, else <hostname>-<pid>)")
    String workerId;

    @Option(names = "--label", paramLabel = "LABEL", description = "a label this worker offers to jobs with runOn: {labels: [...]},"
            + " added to worker.labels (repeatable)")
    List<String> labels = new ArrayList<>();

    @Mixin
    JobsDirectory jobs;

    @Override
    public Integer call() throws Exception {
        for (String l : labels) {
            if (!io.lockstep.scheduler.JobDefinition.NAME.matcher(l).matches()) {
                spec.commandLine().getErr().println("error: --label must match " + io.lockstep.scheduler.JobDefinition.NAME
                        + " (like gpu or region-eu), but was \"" + l + "\"");
                return WorkerMain.BAD_INPUT;
            }
        }
        return jobs.run(spec.commandLine().getErr(), this::runWorker);
    }

    private int runWorker() {
        // Signals first (a SIGHUP before its handler would end the JVM): SIGTERM/SIGINT always drain once
        // the worker has started, SIGHUP reloads then. The JVM's own handlers are back when this returns
        // (a worker that did not start exits as before; an in-process caller keeps its Ctrl-C).
        BlockingQueue<String> requests = new LinkedBlockingQueue<>();
        List<Signal> signals = List.of(new Signal("TERM"), new Signal("INT"), new Signal("HUP"), new Signal("USR1"));
        List<SignalHandler> before = new ArrayList<>();
        for (Signal signal : signals) {
            before.add(Signal.handle(signal, s -> requests.add(switch (s.getName()) {
                case "HUP" -> "SIGHUP";
                case "USR1" -> DRAIN + Scheduler.DEFAULT_DRAIN.toMillis(); // a drain within the default (lockstep drain's)
                default -> STOP;
            })));
        }
        try {
            return runWorker(requests);
        } finally {
            for (int i = 0; i < signals.size(); i++) {
                Signal.handle(signals.get(i), before.get(i));
            }
        }
    }

    private int runWorker(BlockingQueue<String> requests) {
        PrintWriter err = spec.commandLine().getErr();
        String loadedVersion = ConfigReload.version(config);
        Optional<ServiceLoader.Provider<JobFactory>> factoryType = Configs.factory(err);
        if (factoryType == null) {
            return WorkerMain.BAD_INPUT;
        }
        Optional<LockstepConfig> loaded = Configs.load(config, err, true, factoryType.isPresent());
        if (loaded.isEmpty()) {
            return WorkerMain.BAD_INPUT;
        }
        LockstepConfig c = loaded.get();
        java.util.Set<String> offered = c.worker().withLabels(labels).labels();
        RedisLockProvider provider;
        try {
            provider = Configs.provider(c);
        } catch (IllegalArgumentException e) {
            err.println(config + ": redis: " + e.getMessage());
            return WorkerMain.BAD_INPUT;
        }
        OpenTelemetrySdk otel;
        try {
            otel = Telemetry.fromEnvironment();
        } catch (RuntimeException e) { // the OTEL_* environment names something the SDK cannot configure
            err.println("error: OpenTelemetry (OTEL_* environment): " + e.getMessage());
            provider.close();
            return WorkerMain.BAD_INPUT;
        }
        Scheduler scheduler = null;
        JobFactory factory = null;
        WorkerHttp http = null;
        ConfigReload reload = null;
        // Meters only when something can read them (worker.http); otherwise they cost the slot path for nothing.
        PrometheusMeterRegistry registry = c.worker().httpPort() > 0 ? new PrometheusMeterRegistry(PrometheusConfig.DEFAULT) : null;
        try {
            provider.ping();
            String id = workerId != null ? workerId : c.worker().id();
            Scheduler.Builder builder = Scheduler.builder(provider);
            if (factoryType.isPresent()) {
                factory = newFactory(factoryType.get());
                builder.jobFactory(factory);
            }
            if (registry != null) {
                builder.meterRegistry(registry);
            }
            if (otel != null) {
                builder.openTelemetry(otel);
            }
            scheduler = builder
                    .onDrainRequest(within -> requests.add(DRAIN + within.toMillis())) // lockstep drain: drained, then exit 0
                    .workerId(id)
                    .threads(c.worker().threads())
                    .labels(offered)
                    .shutdownTimeout(c.worker().shutdownTimeout())
                    .jobs(c.jobs())
                    .alerts(c.alerts())
                    .build();
            LoggerFactory.getLogger("io.lockstep.events").atInfo()
                    .addKeyValue("event", "config_loaded").addKeyValue("worker", scheduler.workerId())
                    .addKeyValue("config", config.toString()).addKeyValue("jobs", c.jobs().size())
                    .addKeyValue("job_names", c.jobs().stream().filter(j -> j.enabled()).map(j -> j.name()).toList())
                    .addKeyValue("redis", c.redis().describe()).addKeyValue("key_prefix", c.redis().keyPrefix())
                    .addKeyValue("threads", c.worker().threads()).addKeyValue("labels", new java.util.TreeSet<>(offered))
                    .log("config loaded");
            if (registry != null) {
                http = startHttp(c, scheduler, provider, registry);
            }
            scheduler.start();
            WorkerHttp served = http;
            reload = new ConfigReload(config, scheduler, factoryType.isPresent(), c, served == null ? null : served::replaceUsers);
            if (c.worker().watch()) {
                reload.watch(requests, "file changed", loadedVersion);
            }
        } catch (LockstepException | java.io.IOException | java.io.UncheckedIOException e) {
            // Redis down or refusing us, a job class that cannot be created, or the HTTP port taken
            if (e instanceof io.lockstep.scheduler.config.ConfigException problems) { // params a factory's job refused: file:line
                Configs.print(io.lockstep.scheduler.config.ConfigLoader.located(config, problems), config, err);
            } else {
                err.println("error: " + e.getMessage());
            }
            if (http != null) {
                http.close();
            }
            if (scheduler != null) {
                scheduler.close(); // built, maybe part started: its jobs are closed before their factory
            }
            close(factory, err);
            Telemetry.close(otel);
            provider.close();
            // A job refusing its params is a bad config (do not restart it); the rest may pass.
            return e instanceof io.lockstep.scheduler.config.ConfigException ? WorkerMain.BAD_INPUT : WorkerMain.RUNTIME_FAILURE;
        }
        Thread drainer = null;
        try {
            for (String request = requests.take(); !request.equals(STOP) && !request.equals(DRAINED); request = requests.take()) {
                if (request.startsWith(DRAIN)) {
                    if (drainer == null) { // no new claims; the running jobs may finish within the drain's deadline
                        java.time.Duration within = java.time.Duration.ofMillis(Long.parseLong(request.substring(DRAIN.length())));
                        Scheduler draining = scheduler;
                        drainer = new Thread(() -> {
                            draining.drain(within);
                            requests.add(DRAINED);
                        }, "lockstep-drain");
                        drainer.start();
                    }
                } else if (drainer == null) {
                    reload.reload(request); // no reload during a drain: nothing new is claimed anyway
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally { // whatever ends the loop (a VM error in a reload included), the worker drains
            reload.close();
            // Drains, writes every outcome, then closes the jobs that are AutoCloseable; after a drain, returns
            // at once; during one (a SIGTERM), gives its running jobs no more than the shutdown timeout.
            scheduler.close();
            close(factory, err);
            Telemetry.close(otel); // the last spans go out
            if (http != null) {
                http.close();
            }
            provider.close();
        }
        return WorkerMain.OK;
    }

    /** The application's factory; a constructor that throws is the worker's start failing, in one line. */
    static JobFactory newFactory(ServiceLoader.Provider<JobFactory> type) {
        try {
            return type.get();
        } catch (java.util.ServiceConfigurationError | LinkageError e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            throw new LockstepException("the job factory " + type.type().getName() + " could not be created: " + cause, cause);
        }
    }

    /** Closes the application's factory when it is {@link AutoCloseable}: after the jobs, before Redis. */
    static void close(JobFactory factory, PrintWriter err) {
        if (factory instanceof AutoCloseable closeable) {
            try {
                closeable.close();
            } catch (Exception e) {
                if (e instanceof InterruptedException) {
                    Thread.currentThread().interrupt();
                }
                LoggerFactory.getLogger("io.lockstep.events").atError().addKeyValue("event", "job_factory_close_failed")
                        .addKeyValue("factory", factory.getClass().getName()).addKeyValue("error", String.valueOf(e))
                        .log("closing the job factory failed");
            }
        }
    }

    /** {@code /metrics}, health and the status page ({@code worker.http}); the status read at most every 2 s. */
    private static WorkerHttp startHttp(LockstepConfig c, Scheduler scheduler, RedisLockProvider provider,
            PrometheusMeterRegistry registry) {
        new JvmMemoryMetrics().bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        new UptimeMetrics().bindTo(registry);
        provider.bindMetrics(registry);
        return WorkerHttp.start(c, scheduler, provider, registry);
    }
}
