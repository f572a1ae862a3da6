package io.lockstep.examples;

import io.lockstep.redis.LocalRedisServer;
import io.lockstep.redis.RedisLockProvider;
import io.lockstep.scheduler.Job;
import io.lockstep.scheduler.JobDefinition;
import io.lockstep.scheduler.Overlap;
import io.lockstep.scheduler.Scheduler;
import io.lockstep.scheduler.config.ConfigLoader;
import io.lockstep.scheduler.cron.CronSchedule;
import io.lockstep.worker.WorkerMain;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code demo [--workers N] [--duration D]}: a real {@code redis-server} (from PATH, else the one
 * embedded in the jar) and N schedulers in this JVM, each with its own Redis connections, racing
 * for per-second example jobs. Every run is written down as it starts; the closing table says, per
 * job, how many slots fell in the window, which worker ran them, and how many ran twice or never.
 *
 * <p>Its limits: every worker is in this one JVM on one machine, so it shows the claim protocol and
 * how wins spread, not fault tolerance (the ITs kill real worker processes for that); the embedded
 * Redis lives as long as the demo. Each worker has 2 job threads, so that even a short demo shows
 * the slots of a second spread over the workers rather than all won by the quickest.
 */
@Command(name = "demo", mixinStandardHelpOptions = true, description = "Runs N workers on an embedded Redis for a while and prints who ran which slot.")
final class DemoCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Option(names = "--workers", defaultValue = "3", description = "how many workers (default: ${DEFAULT-VALUE})")
    int workers;

    @Option(names = "--duration", defaultValue = "20s", converter = DurationConverter.class,
            description = "how long to run, e.g. 20s or 2m (default: ${DEFAULT-VALUE})")
    Duration duration;

    @Option(names = "--jobs", defaultValue = "5", description = "how many per-second jobs (default: ${DEFAULT-VALUE})")
    int jobs;

    /** Who started which (job, slot), written by the job wrapper as each run starts. */
    private final Map<String, List<String>> ledger = new ConcurrentHashMap<>();

    @Override
    public Integer call() throws InterruptedException {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        if (workers < 1 || workers > 32 || jobs < 1 || jobs > 1000 || duration.compareTo(Duration.ofSeconds(3)) < 0) {
            err.println("error: need 1..32 workers, 1..1000 jobs and a duration of at least 3s");
            return WorkerMain.BAD_INPUT;
        }
        List<JobDefinition> definitions = new ArrayList<>();
        for (int i = 0; i < jobs; i++) {
            definitions.add(new JobDefinition(String.format("heartbeat-%02d", i),
                    CronSchedule.of("* * * * * *", ZoneOffset.UTC), HeartbeatJob.class.getName(),
                    Map.of("workMillis", 20 + 40 * (i % 5)), Duration.ofSeconds(5), Duration.ofSeconds(2),
                    Overlap.SKIP, Duration.ZERO, true));
        }
        try (LocalRedisServer redis = LocalRedisServer.start()) {
            err.println("demo: redis-server " + redis.binary() + " on port " + redis.port() + ", " + workers
                    + (workers == 1 ? " worker, " : " workers, ") + jobs + (jobs == 1 ? " job" : " jobs")
                    + " firing every second, for " + duration.toSeconds() + " s (all in this JVM: for the real thing, "
                    + "run one worker JAR per host)");
            List<RedisLockProvider> providers = new CopyOnWriteArrayList<>();
            List<Scheduler> schedulers = new ArrayList<>();
            try {
                for (int w = 1; w <= workers; w++) {
                    RedisLockProvider provider = RedisLockProvider.builder().uri(redis.uri()).build();
                    providers.add(provider);
                    String id = "demo-" + w;
                    schedulers.add(Scheduler.builder(provider).workerId(id).threads(2)
                            .shutdownTimeout(Duration.ofSeconds(5))
                            .jobFactory(definition -> recording(id, new HeartbeatJob()))
                            .jobs(definitions).build());
                }
                for (Scheduler s : schedulers) {
                    s.start();
                }
                Instant windowStart = Instant.now().plusSeconds(1);
                new CountDownLatch(1).await(duration.toMillis(), TimeUnit.MILLISECONDS);
                Instant windowEnd = Instant.now().minusSeconds(1);
                for (Scheduler s : schedulers) {
                    s.close();
                }
                return report(out, definitions, schedulers, windowStart, windowEnd);
            } finally {
                providers.forEach(RedisLockProvider::close);
            }
        }
    }

    private Job recording(String workerId, Job delegate) {
        return context -> {
            ledger.computeIfAbsent(context.jobName() + "@" + context.scheduledTime(), k -> new CopyOnWriteArrayList<>())
                    .add(workerId);
            delegate.execute(context);
        };
    }

    private int report(PrintWriter out, List<JobDefinition> definitions, List<Scheduler> schedulers,
            Instant from, Instant to) {
        List<String> ids = schedulers.stream().map(Scheduler::workerId).toList();
        StringBuilder header = new StringBuilder(String.format("%-14s %6s", "job", "slots"));
        ids.forEach(id -> header.append(String.format(" %8s", id)));
        header.append(String.format(" %10s %6s", "duplicates", "misses"));
        out.println();
        out.println(header);
        int totalDuplicates = 0;
        int totalMisses = 0;
        int totalSlots = 0;
        for (JobDefinition d : definitions) {
            int slots = 0;
            int duplicates = 0;
            int misses = 0;
            Map<String, Integer> perWorker = new ConcurrentHashMap<>();
            // Every slot that ran (the log shows each), and every slot of the window, in which
            // all workers were up: only there is a slot that did not run a miss.
            java.util.SortedSet<Instant> all = new java.util.TreeSet<>();
            String prefix = d.name() + "@";
            ledger.keySet().stream().filter(k -> k.startsWith(prefix)).forEach(k -> all.add(Instant.parse(k.substring(prefix.length()))));
            Optional<Instant> slot = d.schedule().next(from.minusMillis(1));
            while (slot.isPresent() && !slot.get().isAfter(to)) {
                all.add(slot.get());
                slot = d.schedule().next(slot.get());
            }
            for (Instant s : all) {
                slots++;
                List<String> runs = ledger.getOrDefault(prefix + s, List.of());
                if (runs.isEmpty()) {
                    misses++;
                } else if (runs.size() > 1) {
                    duplicates++;
                }
                runs.forEach(w -> perWorker.merge(w, 1, Integer::sum));
            }
            StringBuilder row = new StringBuilder(String.format("%-14s %6d", d.name(), slots));
            ids.forEach(id -> row.append(String.format(" %8d", perWorker.getOrDefault(id, 0))));
            row.append(String.format(" %10d %6d", duplicates, misses));
            out.println(row);
            totalSlots += slots;
            totalDuplicates += duplicates;
            totalMisses += misses;
        }
        out.printf("%ntotal: %d slots, %d duplicates, %d misses%n", totalSlots, totalDuplicates, totalMisses);
        return totalDuplicates == 0 && totalMisses == 0 ? WorkerMain.OK : WorkerMain.RUNTIME_FAILURE;
    }

    /** Reads {@code 20s}, {@code 2m}, {@code PT20S}: the config's duration syntax. */
    static final class DurationConverter implements ITypeConverter<Duration> {
        @Override
        public Duration convert(String value) {
            return ConfigLoader.parseDuration(value).orElseThrow(() ->
                    new IllegalArgumentException("must be a duration like 20s, 2m or PT20S, but was \"" + value + "\""));
        }
    }
}
