package io.lockstep.benchmarks;

import io.lockstep.redis.LocalRedisServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Runs every benchmark against one redis-server it starts itself, and writes
 * {@code docs/BENCHMARKS.md} with {@code docs/lateness.png}:
 * <pre>
 *   java -jar benchmarks/target/lockstep-benchmarks.jar [--quick] [--out DIR] [--only lock|redlock-faults|scale|load|steady|idle|memory|audit|scripts|extras]
 * </pre>
 * {@code --quick} shortens every window (a smoke run; its figures are not the published ones).
 * {@code --only} runs one part and prints its figures without writing the report (to check a
 * change in a minute or two; the published figures come from a whole run).
 */
public final class RunAll {

    static final int WORKERS = 3;
    /**
     * Job threads per worker: runs at once. Claims made ahead no longer park a thread until their
     * slot (the start timer hands each run to the pool at its instant), so a modest pool carries
     * thousands of short runs per second.
     */
    static final int THREADS = 512;
    /** The audit benchmark's input: a million events (issue 24: under 20 s and 512 MB of heap). */
    static final int AUDIT_EVENTS = 1_000_000;

    private RunAll() {}

    public static void main(String[] args) throws Exception {
        boolean quick = false;
        Path out = Path.of("docs");
        String only = null;
        int jobs = 1_000;
        boolean onCluster = false;
        int workers = WORKERS;
        int threads = THREADS;
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--quick")) {
                quick = true;
            } else if (args[i].equals("--out") && i + 1 < args.length) {
                out = Path.of(args[++i]);
            } else if (args[i].equals("--only") && i + 1 < args.length && List.of("lock", "redlock-faults", "scale", "load", "steady", "idle", "memory", "audit", "scripts", "extras").contains(args[i + 1])) {
                only = args[++i];
            } else if (args[i].equals("--jobs") && i + 1 < args.length && args[i + 1].matches("[1-9][0-9]{0,5}")) {
                jobs = Integer.parseInt(args[++i]);
            } else if (args[i].equals("--workers") && i + 1 < args.length && args[i + 1].matches("[1-9]")) {
                workers = Integer.parseInt(args[++i]);
            } else if (args[i].equals("--threads") && i + 1 < args.length && args[i + 1].matches("[1-9][0-9]{0,3}")) {
                threads = Integer.parseInt(args[++i]);
            } else if (args[i].equals("--cluster")) {
                onCluster = true;
            } else {
                System.err.println("unknown argument \"" + args[i] + "\"; usage: java -jar lockstep-benchmarks.jar [--quick] [--out DIR] "
                        + "[--only lock|redlock-faults|scale|load|idle|memory|audit|scripts|extras] [--jobs N] [--workers N] [--threads N] [--cluster]");
                System.exit(2);
            }
        }
        if (only != null) {
            runOnly(only, quick, jobs, workers, threads, onCluster);
            return;
        }
        System.setProperty("java.awt.headless", "true");
        Files.createDirectories(out);
        Path work = Files.createTempDirectory("lockstep-bench-");
        long started = System.nanoTime();
        try (LocalRedisServer redis = LocalRedisServer.start()) {
            log("redis-server " + redis.binary() + " on port " + redis.port() + "; work files in " + work);

            List<LockCycles.Row> locks = lockCycles(redis, quick);

            Scale scale = scale(redis, work, quick);
            List<Steady> steady = steady(redis, work, quick);
            Duration warmup = Duration.ofSeconds(quick ? 3 : 15);
            Duration window = Duration.ofSeconds(quick ? 10 : 60);

            log("waitReplicas: 1 (one replica), " + scale.byLoad().get(0).jobs() + " jobs every second, " + window.toSeconds() + " s");
            ScaleRun.Result replicated;
            try (LocalRedisServer replica = LocalRedisServer.start("--replicaof", redis.host(), Integer.toString(redis.port()),
                    "--repl-diskless-sync-delay", "0")) {
                awaitInSync(replica);
                replicated = ScaleRun.run("waitReplicas", ScaleRun.Target.of(redis), "  waitReplicas: 1\n", work.resolve("replicated"),
                        WORKERS, scale.byLoad().get(0).jobs(), THREADS, warmup, window, "* * * * * *");
            }
            log("  " + replicated);

            log("idle cluster: " + WORKERS + " workers, 1000 jobs that do not fire, 30 s");
            ScaleRun.Result idle = ScaleRun.run("idle", ScaleRun.Target.of(redis), work.resolve("idle"), WORKERS, 1_000, THREADS,
                    Duration.ofSeconds(quick ? 2 : 5), Duration.ofSeconds(quick ? 10 : 30), "0 0 0 1 1 *");
            log("  " + idle);

            log("memory: 10,000 job definitions in one worker");
            Memory memory = memory(redis, work.resolve("memory"), 10_000);
            log("  " + memory);

            log("audit: " + AUDIT_EVENTS + " events, 5 fresh JVMs with -Xmx512m");
            AuditBench.Result audit = AuditBench.run(work.resolve("audit"), AUDIT_EVENTS, quick ? 1 : 5);
            log(AuditBench.describe(audit));

            Duration took = Duration.ofNanos(System.nanoTime() - started);
            Report.write(out, redis, locks, scale, steady, replicated, idle, memory, took, quick);
            Report.writeAudit(out, audit);
            log("wrote " + out.resolve("BENCHMARKS.md") + " and " + out.resolve("lateness.png") + " in " + took.toSeconds() + " s");
        }
    }

    /**
     * The lock cycles: Lockstep, the raw Jedis floor and Redisson on {@code redis}; Redlock on 3 and
     * 5 masters of its own, started first so that they are past the restart quarantine by then.
     */
    private static List<LockCycles.Row> lockCycles(LocalRedisServer redis, boolean quick) throws Exception {
        List<LocalRedisServer> masters = new ArrayList<>();
        try {
            for (int i = 0; i < 5; i++) {
                masters.add(LocalRedisServer.start());
            }
            log("lock cycle (JMH): Lockstep, raw Jedis floor, Redisson; then Redlock over 3 and 5 masters; 1 and 8 threads");
            awaitUptime(masters, RedlockCycleBenchmark.LEASE);
            return LockCycles.run(redis.port(), masters.stream().map(LocalRedisServer::port).toList(), quick);
        } finally {
            masters.forEach(LocalRedisServer::close);
        }
    }

    /** The Redlock lock cycle over 5 masters of its own, 2 of them killed or stalled ({@link RedlockFaultBenchmark}). */
    private static List<LockCycles.Row> redlockFaults(boolean quick) throws Exception {
        List<LocalRedisServer> masters = new ArrayList<>();
        try {
            for (int i = 0; i < 5; i++) {
                masters.add(LocalRedisServer.start());
            }
            log("Redlock lock cycle (JMH) over 5 masters: none out, 2 killed, 2 stalled (SIGSTOP); 1 and 8 threads");
            awaitUptime(masters, RedlockCycleBenchmark.LEASE);
            return LockCycles.redlockFaults(masters.stream().map(LocalRedisServer::port).toList(), quick);
        } finally {
            masters.forEach(LocalRedisServer::close);
        }
    }

    /** Waits until every master has been up {@code uptime}: past Redlock's restart quarantine. */
    private static void awaitUptime(List<LocalRedisServer> masters, Duration uptime) throws InterruptedException {
        for (LocalRedisServer m : masters) {
            while (m.uptimeSeconds() <= uptime.toSeconds()) {
                Thread.sleep(200);
            }
        }
    }

    /** {@code --only}: one part, its figures printed, no report written. */
    private static void runOnly(String part, boolean quick, int jobs, int workers, int threads, boolean onCluster) throws Exception {
        Path work = Files.createTempDirectory("lockstep-bench-");
        try (LocalRedisServer redis = LocalRedisServer.start()) {
            Duration warmup = Duration.ofSeconds(quick ? 3 : 15);
            Duration window = Duration.ofSeconds(quick ? 10 : 60);
            switch (part) {
                case "lock" -> (Boolean.getBoolean("bench.floorOnly") ? LockCycles.floorOnly(redis.port())
                        : lockCycles(redis, quick)).forEach(r -> log(String.format(java.util.Locale.ROOT,
                        "%-10s %d threads: %,.0f ± %,.0f cycles/s, p50 %.0f µs, p99 %.0f µs", r.impl(), r.threads(), r.opsPerSecond(),
                        r.opsError(), r.p50Micros(), r.p99Micros())));
                case "redlock-faults" -> redlockFaults(quick).forEach(r -> log(String.format(java.util.Locale.ROOT,
                        "%-22s %d threads: %,.0f ± %,.0f cycles/s, p50 %.0f µs, p99 %.0f µs", r.impl(), r.threads(), r.opsPerSecond(),
                        r.opsError(), r.p50Micros(), r.p99Micros())));
                case "scale" -> scale(redis, work, quick);
                case "load" -> load(redis, work, jobs, workers, threads, onCluster, quick);
                case "steady" -> steady(redis, work, quick);
                case "idle" -> log("  " + ScaleRun.run("idle", ScaleRun.Target.of(redis), work.resolve("idle"), WORKERS, 1_000, THREADS,
                        Duration.ofSeconds(quick ? 2 : 5), Duration.ofSeconds(quick ? 10 : 30), "0 0 0 1 1 *"));
                case "scripts" -> {
                    for (int run = 1; run <= (quick ? 1 : 5); run++) {
                        ScriptCost.Result r = ScriptCost.run(redis, jobs, quick ? 5 : 20);
                        log(String.format(java.util.Locale.ROOT, "  run %d: claim.lua %.1f µs a slot, complete.lua %.1f µs a slot, "
                                + "%.1f commands executed a slot, Redis CPU %.1f µs a slot (used_cpu, parsing included)", run, r.claimMicros(),
                                r.completeMicros(), r.commandsPerSlot(), r.cpuMicros()));
                    }
                }
                case "extras" -> {
                    for (int run = 1; run <= (quick ? 1 : 5); run++) {
                        ExtrasCost.Result r = ExtrasCost.run(redis, quick ? 2_000 : 10_000);
                        log(String.format(java.util.Locale.ROOT, "  run %d: Redis µs a call: lock acquire+release %.1f (the floor); "
                                + "permit try+release %.1f (%.2fx) of 2, %.1f (%.2fx) of 20; expect.lua look %.1f quiet, %.1f reading a new run",
                                run, r.lockCycle(), r.permitCycle2(), r.permitCycle2() / r.lockCycle(), r.permitCycle20(),
                                r.permitCycle20() / r.lockCycle(), r.quietLook(), r.lookWithARun()));
                        ExtrasCost.Round round = ExtrasCost.round(redis, 100, quick ? 50 : 200);
                        log(String.format(java.util.Locale.ROOT, "  run %d: a worker's round of %d quiet looks, ms (median): one call each %.2f, "
                                + "one batched call %.2f (%.2fx); floor: %d PINGs one by one %.2f, pipelined %.2f (%.2fx)", run, round.jobs(),
                                round.oneByOne(), round.batched(), round.batched() / round.oneByOne(), round.jobs(), round.pings(),
                                round.pipelinedPings(), round.pipelinedPings() / round.pings()));
                    }
                }
                case "audit" -> {
                    AuditBench.Result audit = AuditBench.run(work.resolve("audit"), AUDIT_EVENTS, quick ? 1 : 5);
                    log(AuditBench.describe(audit));
                    if (!quick) {
                        Report.writeAudit(Path.of("docs"), audit); // its own block of BENCHMARKS.md
                    }
                }
                default -> log("  " + memory(redis, work.resolve("memory"), 10_000));
            }
        }
    }

    /** The scale runs: against load (3 workers), against workers, on a 3-master Redis Cluster, and the machine's wake floor. */
    record Scale(List<ScaleRun.Result> byLoad, List<WakeFloor.Result> floors, List<ScaleRun.Result> byWorkers,
            List<ScaleRun.Result> cluster, String clusterSkipped) {}

    /**
     * Every scale run, each printed as it ends. Loads of 1,000 to 10,000 slots per second on 3 worker
     * JVMs; 1 and 6 workers at 1,000; the two highest loads again on a Redis Cluster of 3 masters;
     * and per load the wake floor (the same number of threads parked to the same instants, nothing else).
     */
    private static Scale scale(LocalRedisServer redis, Path work, boolean quick) throws Exception {
        // Three JVMs starting at once on a small machine take a while to reach their steady state.
        Duration warmup = Duration.ofSeconds(quick ? 3 : 15);
        Duration window = Duration.ofSeconds(quick ? 10 : 60);
        Duration shorter = Duration.ofSeconds(quick ? 10 : 40);
        int[] loads = quick ? new int[] {500, 1_000} : new int[] {1_000, 2_000, 5_000, 10_000};
        List<ScaleRun.Result> byLoad = new ArrayList<>();
        List<WakeFloor.Result> floors = new ArrayList<>();
        for (int jobs : loads) {
            log("scheduler at scale: " + WORKERS + " worker JVMs, " + jobs + " jobs every second, " + window.toSeconds() + " s");
            byLoad.add(ScaleRun.run(jobs + "/s", ScaleRun.Target.of(redis), work.resolve("scale-" + jobs), WORKERS, jobs, THREADS,
                    warmup, window, "* * * * * *"));
            log("  " + byLoad.get(byLoad.size() - 1));
            floors.add(WakeFloor.run(work.resolve("floor"), jobs, WORKERS, quick ? 3 : 10));
            log("  wake floor: " + floors.get(floors.size() - 1));
        }
        List<ScaleRun.Result> byWorkers = new ArrayList<>();
        for (int workers : new int[] {1, 6}) {
            log("scheduler at scale: " + workers + " worker JVM(s), " + loads[0] + " jobs every second, " + shorter.toSeconds() + " s");
            byWorkers.add(ScaleRun.run(workers + " workers", ScaleRun.Target.of(redis), work.resolve("workers-" + workers), workers,
                    loads[0], THREADS, warmup, shorter, "* * * * * *"));
            log("  " + byWorkers.get(byWorkers.size() - 1));
        }
        List<ScaleRun.Result> cluster = new ArrayList<>();
        java.util.Optional<String> unavailable = io.lockstep.redis.LocalCluster.unavailable();
        if (unavailable.isEmpty()) {
            try (io.lockstep.redis.LocalCluster c = io.lockstep.redis.LocalCluster.start(3, 0)) {
                for (int jobs : new int[] {loads[loads.length - 2], loads[loads.length - 1]}) {
                    log("scheduler at scale on a Redis Cluster of 3 masters: " + jobs + " jobs every second, " + shorter.toSeconds() + " s");
                    cluster.add(ScaleRun.run("cluster " + jobs + "/s", ScaleRun.Target.of(c), work.resolve("cluster-" + jobs), WORKERS,
                            jobs, THREADS, warmup, shorter, "* * * * * *"));
                    log("  " + cluster.get(cluster.size() - 1));
                }
            }
        } else {
            log("no Redis Cluster run: " + unavailable.get());
        }
        return new Scale(byLoad, floors, byWorkers, cluster, unavailable.orElse(null));
    }

    /** One steady-state run at 1,000 slots/s and the wake floor measured right after it. */
    record Steady(ScaleRun.Result run, WakeFloor.Result floor) {
        double ratio() {
            return run.p99Ms() / floor.p99Ms();
        }
    }

    /**
     * Start lateness at 1,000 slots/s on 3 workers in their steady state, against the wake floor,
     * three times over (the spread): each worker runs 45 s before the 30 s window, long enough for
     * the JIT to compile the run path (a run's code reaches C2 after some 10,000 runs, 30 s at 333
     * runs a second per worker); the floor is measured over as many instants as the window has,
     * right after it. The first seconds of a worker are in the scale table's 1,000 slots/s row.
     */
    private static List<Steady> steady(LocalRedisServer redis, Path work, boolean quick) throws Exception {
        int reps = Integer.getInteger("bench.steadyRuns", quick ? 1 : 3);
        Duration warmup = Duration.ofSeconds(Long.getLong("bench.steadyWarmup", quick ? 5 : 45));
        Duration window = Duration.ofSeconds(quick ? 10 : 30);
        List<Steady> runs = new ArrayList<>();
        for (int rep = 1; rep <= reps; rep++) {
            log("steady state " + rep + " of " + reps + ": " + WORKERS + " worker JVMs, 1000 jobs every second, " + warmup.toSeconds()
                    + " s warm-up, " + window.toSeconds() + " s");
            ScaleRun.Result r = ScaleRun.run("steady 1000/s", ScaleRun.Target.of(redis), work.resolve("steady-" + rep), WORKERS, 1_000,
                    THREADS, warmup, window, "* * * * * *");
            WakeFloor.Result floor = WakeFloor.run(work.resolve("steady-floor-" + rep), 1_000, WORKERS, (int) window.toSeconds());
            runs.add(new Steady(r, floor));
            log(String.format(java.util.Locale.ROOT, "  lateness p50 %.1f, p99 %.1f ms; wake floor p50 %.1f, p99 %.1f ms: %.2fx; %d of %d started",
                    r.p50Ms(), r.p99Ms(), floor.p50Ms(), floor.p99Ms(), r.p99Ms() / floor.p99Ms(), r.started(), r.expected()));
        }
        return runs;
    }

    /**
     * {@code --only load}: one load ({@code --jobs N} every second, 1,000 by default) on 3 workers
     * of {@code --threads N} job threads (512 by default; with {@code -Dbench.events=true} and
     * {@code --threads 8}, the worker's defaults),
     * 30 s measured, on one Redis with its wake floor, or with {@code --cluster} on a Redis Cluster of
     * 3 masters: to look at one figure while working on it (the full run is what gets published).
     */
    private static void load(LocalRedisServer redis, Path work, int jobs, int workers, int threads, boolean onCluster, boolean quick)
            throws Exception {
        Duration warmup = Duration.ofSeconds(quick ? 3 : 10);
        Duration window = Duration.ofSeconds(quick ? 10 : 30);
        log("scheduler at scale: " + workers + " worker JVMs, " + jobs + " jobs every second, " + window.toSeconds() + " s"
                + ", " + threads + " job threads each" + (ScaleRun.EVENTS ? ", events at INFO" : "")
                + (onCluster ? " on a Redis Cluster of 3 masters" : ""));
        if (onCluster) {
            java.util.Optional<String> unavailable = io.lockstep.redis.LocalCluster.unavailable();
            if (unavailable.isPresent()) {
                log("no Redis Cluster run: " + unavailable.get());
                return;
            }
            try (io.lockstep.redis.LocalCluster c = io.lockstep.redis.LocalCluster.start(3, 0)) {
                log("  " + ScaleRun.run("cluster " + jobs + "/s", ScaleRun.Target.of(c), work.resolve("cluster"), workers, jobs, threads,
                        warmup, window, "* * * * * *"));
            }
            return;
        }
        ScaleRun.Result r = ScaleRun.run(jobs + "/s", ScaleRun.Target.of(redis), work.resolve("load"), workers, jobs, threads, warmup,
                window, "* * * * * *");
        log("  " + r);
        log(String.format(java.util.Locale.ROOT, "  lateness p50 %.1f, p99 %.1f, max %.1f ms; p99 of each second: %s", r.p50Ms(), r.p99Ms(),
                r.maxMs(), java.util.Arrays.stream(r.p99PerSecond()).mapToObj(v -> String.format(java.util.Locale.ROOT, "%.1f", v))
                        .collect(java.util.stream.Collectors.joining(" "))));
        log("  wake floor (a plain executor of " + threads + " threads per JVM): "
                + WakeFloor.run(work.resolve("floor"), jobs, workers, quick ? 3 : 10, threads));
    }

    /** Waits until the replica's link to its master is up (a worker with waitReplicas refuses to start before). */
    private static void awaitInSync(LocalRedisServer replica) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        try (redis.clients.jedis.RedisClient r = redis.clients.jedis.RedisClient.create(replica.host(), replica.port())) {
            while (!r.info("replication").contains("master_link_status:up")) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("the benchmark's replica did not sync within 30 s");
                }
                Thread.sleep(50);
            }
        }
    }

    /** What {@link MemoryProbe} printed. */
    record Memory(int jobs, long loadMs, long startMs, long heapBeforeKb, long heapAfterKb, long sinceJvmStartMs) {}

    private static Memory memory(LocalRedisServer redis, Path dir, int jobs) throws Exception {
        Files.createDirectories(dir);
        StringBuilder yaml = new StringBuilder("redis:\n  uri: " + redis.uri() + "\njobs:\n");
        for (int i = 0; i < jobs; i++) {
            yaml.append("  - { name: daily-").append(i).append(", cron: \"").append(i % 60).append(' ').append(i / 60 % 24)
                    .append(" * * *\", zone: Europe/Lisbon, class: io.lockstep.examples.DailyReportJob,")
                    .append(" params: { recipients: [ops@example.com] } }\n");
        }
        Path config = dir.resolve("jobs.yaml");
        Files.writeString(config, yaml);
        Process p = new ProcessBuilder(Bench.java(), "-Xmx1g", "-Dlogback.configurationFile=" + quietLogback(dir), "-cp", Bench.jar(),
                MemoryProbe.class.getName(), config.toString()).redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes());
        if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IllegalStateException("memory probe failed: " + output);
        }
        String[] f = output.strip().lines().reduce((a, b) -> b).orElseThrow().split(" ");
        return new Memory(jobs, Long.parseLong(f[0]), Long.parseLong(f[1]), Long.parseLong(f[2]), Long.parseLong(f[3]),
                Long.parseLong(f[4]));
    }

    static Path quietLogback(Path dir) throws java.io.IOException {
        Path logback = dir.resolve("logback-quiet.xml");
        Files.writeString(logback, "<configuration><appender name=\"OUT\" class=\"ch.qos.logback.core.ConsoleAppender\">"
                + "<encoder><pattern>%level %msg %kvp%n</pattern></encoder></appender>"
                + "<root level=\"WARN\"><appender-ref ref=\"OUT\"/></root></configuration>");
        return logback;
    }

    static void log(String line) {
        System.out.println("[bench] " + line);
    }
}
