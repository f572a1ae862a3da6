package io.lockstep.benchmarks;

import io.lockstep.redis.LocalRedisServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import redis.clients.jedis.RedisClient;

/**
 * Writes the measured figures into {@code BENCHMARKS.md} between the markers
 * {@value #START} and {@value #END} (the hand-written text around them is kept), and draws the
 * charts ({@link Charts}).
 */
final class Report {

    static final String START = "<!-- figures:start (written by the benchmark harness; do not edit) -->";
    static final String END = "<!-- figures:end -->";

    private Report() {}

    static void write(Path dir, LocalRedisServer redis, List<LockCycles.Row> locks, RunAll.Scale scale, List<RunAll.Steady> steady,
            ScaleRun.Result replicated, ScaleRun.Result idle, RunAll.Memory memory, Duration took, boolean quick) throws IOException {
        Charts.lateness(dir.resolve("lateness.png"), scale);
        Charts.redisTime(dir.resolve("redis-time.png"), scale);
        Charts.workers(dir.resolve("workers.png"), scale);
        Charts.capacity(dir.resolve("capacity.png"), scale);
        StringBuilder md = new StringBuilder(START).append("\n\n");
        md.append(String.format(Locale.ROOT, "Run of %s, %d s in all%s.%n%n", Instant.now().truncatedTo(ChronoUnit.SECONDS),
                took.toSeconds(), quick ? " (**--quick**: short windows, not the published figures)" : ""));
        machine(md, redis);
        lockTable(md, locks);
        scaleTable(md, scale);
        steadyTable(md, steady);
        waitReplicas(md, scale.byLoad().get(0), replicated);
        idle(md, idle);
        memory(md, memory);
        targets(md, locks, scale, steady, idle);
        md.append(END).append('\n');

        Path file = dir.resolve("BENCHMARKS.md");
        String text = Files.exists(file) ? Files.readString(file) : "# Benchmarks\n\n" + START + "\n" + END + "\n";
        int a = text.indexOf(START);
        int b = text.indexOf(END);
        if (a < 0 || b < a) {
            text = text + "\n" + START + "\n" + END + "\n";
            a = text.indexOf(START);
            b = text.indexOf(END);
        }
        Files.writeString(file, text.substring(0, a) + md + text.substring(b + END.length() + 1));
    }

    private static void machine(StringBuilder md, LocalRedisServer redis) throws IOException {
        String cpu = Files.exists(Path.of("/proc/cpuinfo")) ? Files.readAllLines(Path.of("/proc/cpuinfo")).stream()
                .filter(l -> l.startsWith("model name")).map(l -> l.substring(l.indexOf(':') + 1).trim()).findFirst().orElse("?") : "?";
        String version;
        try (RedisClient client = RedisClient.create(redis.host(), redis.port())) {
            version = client.info("server").lines().filter(l -> l.startsWith("redis_version:")).map(l -> l.substring(14).trim())
                    .findFirst().orElse("?");
        }
        md.append("### Machine\n\n| | |\n|---|---|\n");
        md.append(String.format(Locale.ROOT, "| CPU | %s, %d cores visible to the JVM |%n", cpu, Runtime.getRuntime().availableProcessors()));
        md.append(String.format(Locale.ROOT, "| OS | %s %s %s |%n", System.getProperty("os.name"), System.getProperty("os.version"),
                System.getProperty("os.arch")));
        md.append(String.format(Locale.ROOT, "| JVM | %s %s |%n", System.getProperty("java.vm.name"), System.getProperty("java.version")));
        md.append(String.format(Locale.ROOT, "| Redis | %s on loopback (`%s`), no persistence |%n%n", version, redis.binary()));
    }

    private static void lockTable(StringBuilder md, List<LockCycles.Row> rows) {
        md.append("### Lock cycle: acquire + release of an uncontended lock (JMH)\n\n");
        md.append("| threads | implementation | cycles/s | vs floor | Lockstep vs this | p50 µs | p99 µs |\n|---|---|---|---|---|---|---|\n");
        for (int threads : new int[] {1, 8}) {
            double floor = ops(rows, "floor", threads);
            double lockstep = ops(rows, "lockstep", threads);
            for (String impl : List.of("floor", "lockstep", "redisson", "redlock-3", "redlock-5")) {
                if (rows.stream().noneMatch(r -> r.impl().equals(impl) && r.threads() == threads)) {
                    continue;
                }
                LockCycles.Row r = row(rows, impl, threads);
                md.append(String.format(Locale.ROOT, "| %d | %s | %,.0f ± %,.0f | %.2fx | %s | %.0f | %.0f |%n", threads, label(impl),
                        r.opsPerSecond(), r.opsError(), r.opsPerSecond() / floor,
                        impl.equals("lockstep") ? "" : String.format(Locale.ROOT, "%.2fx", lockstep / r.opsPerSecond()),
                        r.p50Micros(), r.p99Micros()));
            }
        }
        md.append("\n");
    }

    private static String label(String impl) {
        return switch (impl) {
            case "floor" -> "floor: raw Jedis `SET NX PX` + `EVALSHA` delete";
            case "lockstep" -> "**Lockstep** `tryAcquire` + `release`";
            case "redlock-3" -> "Lockstep Redlock, 3 masters (all in parallel; vote + fence raise)";
            case "redlock-5" -> "Lockstep Redlock, 5 masters";
            default -> "Redisson `RLock` `tryLock(0, lease)` + `unlock`";
        };
    }

    private static void scaleTable(StringBuilder md, RunAll.Scale scale) {
        md.append("### Scheduler at scale: every job due every second, all at the top of the second\n\n");
        md.append("Lateness: the job's first line (this machine's clock) minus its slot. p99/s: the p99 of each second of the window, "
                + "min / median / max over the window's seconds (the spread of one run). Wake floor: the same number of runs, "
                + "spread over the same number of JVMs, each JVM's handed by one timer thread to a pool of " + RunAll.THREADS
                + " threads at the same instants, with nothing else running (`WakeFloor`): what starting that many runs at once "
                + "the way the scheduler does costs on this machine.\n\n");
        md.append("| setup | load | window | started once | twice | not started: skipped / missed / no record | lateness p50 / p99 / max ms | "
                + "p99/s min / median / max ms | wake floor p50 / p99 ms | commands executed per slot | Redis µs per slot | "
                + "CPU per worker (cores) | worker heap after GC |\n");
        md.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (int i = 0; i < scale.byLoad().size(); i++) {
            row(md, "3 workers, one Redis", scale.byLoad().get(i), scale.floors().get(i));
        }
        for (ScaleRun.Result r : scale.byWorkers()) {
            row(md, r.workers() + (r.workers() == 1 ? " worker" : " workers") + ", one Redis", r, null);
        }
        for (ScaleRun.Result r : scale.cluster()) {
            row(md, "3 workers, Redis Cluster of 3 masters", r, null);
        }
        if (scale.clusterSkipped() != null) {
            md.append("\nNo Redis Cluster run: ").append(scale.clusterSkipped()).append('\n');
        }
        ScaleRun.Result first = scale.byLoad().get(0);
        md.append(String.format(Locale.ROOT, "%nWhere the Redis work goes at %,d slots/s (commands executed per fired slot, by name, all workers): ",
                first.jobs()));
        first.executedByCommand().entrySet().stream().filter(e -> !e.getKey().equals("usec"))
                .sorted(Map.Entry.<String, Long>comparingByValue().reversed())
                .forEach(e -> md.append(String.format(Locale.ROOT, "`%s` %.2f, ", e.getKey(), (double) e.getValue() / first.started())));
        md.setLength(md.length() - 2);
        md.append(".\n\n![lateness against load](lateness.png)\n\n![Redis time per slot against load](redis-time.png)\n\n"
                + "![against the number of workers](workers.png)\n\n");
        capacity(md, scale);
    }

    /**
     * The capacity model: a Redis master is one core, so at {@code u} µs of Redis time per slot it
     * decides at most 1,000,000 / u slots per second; a Cluster of N masters N times that, as long as
     * a slot costs the same there. Beside it, what the runs started per second and how busy Redis was.
     */
    private static void capacity(StringBuilder md, RunAll.Scale scale) {
        ScaleRun.Result base = scale.byLoad().get(0);
        double u = base.redisMicrosPerSlot();
        md.append("### Capacity model\n\n");
        md.append(String.format(Locale.ROOT, "A master runs scripts on one core: at %.0f µs of Redis time per slot (one Redis, %,d slots/s above) "
                + "one Redis decides at most %,.0f slots/s, a Cluster of N masters N times that if a slot costs as much there. "
                + "Measured runs (slots started per second, and the share of one core Redis spent in scripts):%n%n", u, base.jobs(), 1e6 / u));
        md.append("| setup | slots due per second | started per second | Redis µs per slot | Redis busy (scripts), share of one core per master | model capacity (slots/s) |\n");
        md.append("|---|---|---|---|---|---|\n");
        for (ScaleRun.Result r : scale.byLoad()) {
            capacityRow(md, "one Redis", 1, r);
        }
        for (ScaleRun.Result r : scale.cluster()) {
            capacityRow(md, "Cluster of 3 masters", 3, r);
        }
        md.append("\n![capacity model](capacity.png)\n\n");
    }

    private static void capacityRow(StringBuilder md, String setup, int masters, ScaleRun.Result r) {
        if (r.started() == 0) {
            md.append(String.format(Locale.ROOT, "| %s | %,d | 0 | | | |%n", setup, r.jobs()));
            return;
        }
        double u = r.redisMicrosPerSlot();
        md.append(String.format(Locale.ROOT, "| %s | %,d | %,.0f | %.0f | %.0f %% | %,.0f |%n", setup, r.jobs(), r.firedPerSecond(), u,
                r.redisBusyMsPerSecond() / 10.0 / masters, masters * 1e6 / u));
    }

    private static void row(StringBuilder md, String setup, ScaleRun.Result r, WakeFloor.Result floor) {
        double[] spread = r.p99Spread();
        boolean none = r.started() == 0; // nothing started in the window: no lateness, no per-slot cost to show
        md.append(String.format(Locale.ROOT, "| %s | %,d slots/s | %d s | %,d of %,d | %d | %,d / %,d / %,d | %s | %s | %s | %s | %s | %.2f | %,d MB |%n",
                setup, r.jobs(), r.windowSeconds(), r.started() - r.duplicates(), r.expected(), r.duplicates(), r.notStarted().skipped(),
                r.notStarted().missed(), r.notStarted().unrecorded(),
                none ? "—" : String.format(Locale.ROOT, "%.1f / %.1f / %.1f", r.p50Ms(), r.p99Ms(), r.maxMs()),
                none ? "—" : String.format(Locale.ROOT, "%.1f / %.1f / %.1f", spread[0], spread[1], spread[2]),
                floor == null ? "" : String.format(Locale.ROOT, "%.1f / %.1f", floor.p50Ms(), floor.p99Ms()),
                none ? "—" : String.format(Locale.ROOT, "%.1f", r.executedPerSlot()),
                none ? "—" : String.format(Locale.ROOT, "%.0f", r.redisMicrosPerSlot()),
                r.cpuCoresPerWorker(), r.heapAfterGcKb() / 1024));
    }

    private static double median(List<RunAll.Steady> steady) {
        double[] ratios = steady.stream().mapToDouble(RunAll.Steady::ratio).sorted().toArray();
        return ratios.length % 2 == 1 ? ratios[ratios.length / 2] : (ratios[ratios.length / 2 - 1] + ratios[ratios.length / 2]) / 2;
    }

    private static void steadyTable(StringBuilder md, List<RunAll.Steady> steady) {
        md.append("### Start lateness in the steady state: 1,000 slots/s, 3 workers, one Redis\n\n");
        md.append("Each worker runs 45 s before a 30 s window (the JIT has compiled the run path: a run's code reaches its "
                + "last compilation after some 10,000 runs); the wake floor is measured right after each run over as many instants "
                + "as the window has. A worker's first minute is in the 1,000 slots/s row above.\n\n");
        md.append("| run | started once | lateness p50 / p99 / max ms | p99/s min / median / max ms | wake floor p50 / p99 ms | p99 against the floor |\n"
                + "|---|---|---|---|---|---|\n");
        for (int i = 0; i < steady.size(); i++) {
            ScaleRun.Result r = steady.get(i).run();
            WakeFloor.Result f = steady.get(i).floor();
            double[] spread = r.p99Spread();
            md.append(String.format(Locale.ROOT, "| %d | %,d of %,d | %.1f / %.1f / %.1f | %.1f / %.1f / %.1f | %.1f / %.1f | %.2fx |%n", i + 1,
                    r.started() - r.duplicates(), r.expected(), r.p50Ms(), r.p99Ms(), r.maxMs(), spread[0], spread[1], spread[2],
                    f.p50Ms(), f.p99Ms(), steady.get(i).ratio()));
        }
        double[] ratios = steady.stream().mapToDouble(RunAll.Steady::ratio).sorted().toArray();
        md.append(String.format(Locale.ROOT, "%np99 against the floor: median %.2fx, min %.2fx, max %.2fx over %d runs.%n%n", median(steady),
                ratios[0], ratios[ratios.length - 1], ratios.length));
    }

    /** The same load with and without {@code waitReplicas: 1}: what a replica's acknowledgement costs. */
    private static void waitReplicas(StringBuilder md, ScaleRun.Result plain, ScaleRun.Result replicated) {
        md.append(String.format(Locale.ROOT, "### What `waitReplicas: 1` costs: %,d jobs/s, one replica in sync%n%n", plain.jobs()));
        md.append("| redis | started once | twice | not started | lateness p50 / p99 / max ms | calls sent per slot | "
                + "`WAIT` sent per slot | commands executed per slot | Redis busy (scripts) per second |\n|---|---|---|---|---|---|---|---|---|\n");
        for (ScaleRun.Result r : List.of(plain, replicated)) {
            md.append(String.format(Locale.ROOT, "| %s | %,d of %,d | %d | %d | %.1f / %.1f / %.1f | %.3f | %.3f | %.1f | %.0f ms |%n",
                    r == plain ? "no replica, `waitReplicas: 0`" : "one replica, `waitReplicas: 1`", r.started() - r.duplicates(),
                    r.expected(), r.duplicates(), r.missing(), r.p50Ms(), r.p99Ms(), r.maxMs(), r.sentPerSlot(),
                    (double) r.sentByCommand().getOrDefault("wait", 0L) / r.started(), r.executedPerSlot(), r.redisBusyMsPerSecond()));
        }
        md.append("\n");
    }

    private static void idle(StringBuilder md, ScaleRun.Result idle) {
        md.append(String.format(Locale.ROOT, "### Idle cluster: 3 workers, %,d jobs that do not fall due, %d s%n%n", idle.jobs(), idle.windowSeconds()));
        long total = idle.sentByCommand().values().stream().mapToLong(Long::longValue).sum();
        md.append(String.format(Locale.ROOT, "Commands sent by all workers: %d in %d s (%.2f/s)", total, idle.windowSeconds(),
                (double) total / idle.windowSeconds()));
        if (!idle.sentByCommand().isEmpty()) {
            md.append(": ");
            new TreeMap<>(idle.sentByCommand()).forEach((k, v) -> md.append('`').append(k).append("` ").append(v).append(", "));
            md.setLength(md.length() - 2);
        }
        md.append(".\n\n");
    }

    static final String AUDIT_START = "<!-- audit:start (written by the benchmark harness, --only audit or a whole run; do not edit) -->";
    static final String AUDIT_END = "<!-- audit:end -->";

    /** The audit's figures, in their own block of BENCHMARKS.md (so that {@code --only audit} can write them alone). */
    static void writeAudit(Path dir, AuditBench.Result r) throws IOException {
        List<Double> vsParse = r.runs().stream().map(x -> x.auditMs() / (double) x.parseMs()).sorted().toList();
        List<Long> ms = r.runs().stream().map(AuditBench.Run::auditMs).sorted().toList();
        List<Long> heap = r.runs().stream().map(AuditBench.Run::peakHeapMb).sorted().toList();
        StringBuilder md = new StringBuilder(AUDIT_START).append("\n\n");
        md.append(String.format(Locale.ROOT, "### `lockstep audit`: %,d events (%d MB), %d runs, each a fresh JVM with -Xmx512m (%s)%n%n",
                r.events(), r.fileMb(), r.runs().size(), Instant.now().truncatedTo(ChronoUnit.SECONDS)));
        md.append("| run | audit | floor: parse every line (Jackson tree) | audit / parse | floor: read the lines | peak heap | every check holds |\n"
                + "|---|---|---|---|---|---|---|\n");
        int i = 1;
        for (AuditBench.Run x : r.runs()) {
            md.append(String.format(Locale.ROOT, "| %d | %,d ms | %,d ms | %.2fx | %,d ms | %d MB | %s |%n", i++, x.auditMs(), x.parseMs(),
                    x.auditMs() / (double) x.parseMs(), x.readMs(), x.peakHeapMb(), x.holds() ? "yes" : "**no**"));
        }
        md.append(String.format(Locale.ROOT, "%nMedian %,d ms (range %,d-%,d), %.2fx the parse floor (range %.2f-%.2f); peak heap median %d MB "
                + "(max %d). Target: under 20 s and 512 MB: **%s**.%n%n", ms.get(ms.size() / 2), ms.get(0), ms.get(ms.size() - 1),
                vsParse.get(vsParse.size() / 2), vsParse.get(0), vsParse.get(vsParse.size() - 1), heap.get(heap.size() / 2),
                heap.get(heap.size() - 1), ms.get(ms.size() - 1) < 20_000 && heap.get(heap.size() - 1) < 512 ? "met" : "not met"));
        md.append(AUDIT_END).append('\n');
        Path file = dir.resolve("BENCHMARKS.md");
        String text = Files.readString(file);
        int a = text.indexOf(AUDIT_START), b = text.indexOf(AUDIT_END);
        text = a < 0 || b < a ? text + "\n" + md : text.substring(0, a) + md + text.substring(b + AUDIT_END.length() + 1);
        Files.writeString(file, text);
    }

    private static void memory(StringBuilder md, RunAll.Memory m) {
        md.append(String.format(Locale.ROOT, "### Memory and start-up: %,d job definitions in one worker%n%n", m.jobs()));
        md.append("| heap after GC, before loading | after start | per job | config load | scheduler start | JVM start to started |\n|---|---|---|---|---|---|\n");
        md.append(String.format(Locale.ROOT, "| %,d KB | %,d KB | %,d bytes | %,d ms | %,d ms | %,d ms |%n%n", m.heapBeforeKb(), m.heapAfterKb(),
                (m.heapAfterKb() - m.heapBeforeKb()) * 1024 / m.jobs(), m.loadMs(), m.startMs(), m.sinceJvmStartMs()));
    }

    private static void targets(StringBuilder md, List<LockCycles.Row> locks, RunAll.Scale scale, List<RunAll.Steady> steady,
            ScaleRun.Result idle) {
        md.append("### Targets\n\n| target | measured | met |\n|---|---|---|\n");
        target(md, "Lockstep ≥ 0.9x the floor, 1 thread", ops(locks, "lockstep", 1) / ops(locks, "floor", 1), 0.9);
        target(md, "Lockstep ≥ 0.9x the floor, 8 threads", ops(locks, "lockstep", 8) / ops(locks, "floor", 8), 0.9);
        target(md, "Lockstep ≥ 1.8x Redisson, 1 thread", ops(locks, "lockstep", 1) / ops(locks, "redisson", 1), 1.8);
        target(md, "Lockstep ≥ 4x Redisson, 8 threads", ops(locks, "lockstep", 8) / ops(locks, "redisson", 8), 4.0);
        for (ScaleRun.Result r : scale.byLoad()) {
            boolean once = r.duplicates() == 0 && r.missing() == 0;
            if (r.jobs() == 1_000) {
                md.append(String.format(Locale.ROOT, "| p99 lateness ≤ 10 ms at 1,000 slots/s, 3 workers | %.1f ms | %s |%n", r.p99Ms(),
                        r.p99Ms() <= 10 ? "yes" : "**no**"));
                md.append(String.format(Locale.ROOT, "| Redis commands executed per fired slot ≤ 10 at 1,000 slots/s (inside scripts, all workers) "
                        + "| %.1f | %s |%n", r.executedPerSlot(), r.executedPerSlot() <= 10 ? "yes" : "**no**"));
                md.append(String.format(Locale.ROOT, "| Redis time per fired slot ≤ 40 µs at 1,000 slots/s | %.0f µs | %s |%n",
                        r.redisMicrosPerSlot(), r.redisMicrosPerSlot() <= 40 ? "yes" : "**no**"));
                ScaleRun.Result six = scale.byWorkers().stream().filter(w -> w.workers() == 6).findFirst().orElse(null);
                if (six != null && six.started() > 0) {
                    md.append(String.format(Locale.ROOT, "| 6 workers within 1.2x of 3 at 1,000 slots/s: p99 lateness; Redis time per slot "
                            + "| %.2fx (%.1f / %.1f ms); %.2fx (%.0f / %.0f µs) | %s |%n", six.p99Ms() / r.p99Ms(), six.p99Ms(), r.p99Ms(),
                            six.redisMicrosPerSlot() / r.redisMicrosPerSlot(), six.redisMicrosPerSlot(), r.redisMicrosPerSlot(),
                            six.p99Ms() <= 1.2 * r.p99Ms() && six.redisMicrosPerSlot() <= 1.2 * r.redisMicrosPerSlot() ? "yes" : "**no**"));
                }
            }
            ScaleRun.Result onCluster = scale.cluster().stream().filter(c -> c.jobs() == r.jobs() && c.started() > 0).findFirst().orElse(null);
            // Compared where both kept up (a run that fell behind measures its backlog, not a slot's cost).
            if (onCluster != null && r.started() >= 0.99 * r.expected() && onCluster.started() >= 0.99 * onCluster.expected()) {
                double ratio = onCluster.redisMicrosPerSlot() / r.redisMicrosPerSlot();
                md.append(String.format(Locale.ROOT, "| Redis Cluster of 3: Redis time per slot ≤ 1.2x one Redis at %,d slots/s | %.2fx (%.0f / %.0f µs) "
                        + "| %s |%n", r.jobs(), ratio, onCluster.redisMicrosPerSlot(), r.redisMicrosPerSlot(), ratio <= 1.2 ? "yes" : "**no**"));
            }
            if (onCluster != null && r.jobs() == 10_000) {
                boolean clusterOnce = onCluster.duplicates() == 0 && onCluster.missing() == 0;
                md.append(String.format(Locale.ROOT, "| Redis Cluster of 3: every slot once at 10,000 slots/s | %,d of %,d started once, %d twice | %s |%n",
                        onCluster.started() - onCluster.duplicates(), onCluster.expected(), onCluster.duplicates(), clusterOnce ? "yes" : "**no**"));
            }
            if (r.jobs() == 5_000) {
                md.append(String.format(Locale.ROOT, "| p99 lateness ≤ 50 ms and 0 slots not started at 5,000 slots/s, 3 workers | "
                        + "%.1f ms, %d not started | %s |%n", r.p99Ms(), r.missing(), r.p99Ms() <= 50 && r.missing() == 0 ? "yes" : "**no**"));
            }
            md.append(String.format(Locale.ROOT, "| every slot exactly once, %,d slots/s | %d twice, %,d not started (%,d skipped, %,d missed, "
                    + "%,d without a record) | %s |%n", r.jobs(), r.duplicates(), r.missing(), r.notStarted().skipped(), r.notStarted().missed(),
                    r.notStarted().unrecorded(), once ? "yes" : "**no**"));
        }
        double median = median(steady);
        md.append(String.format(Locale.ROOT, "| p99 lateness ≤ 1.25x the wake floor at 1,000 slots/s, steady state (median of %d runs) | "
                + "%.2fx | %s |%n", steady.size(), median, median <= 1.25 ? "yes" : "**no**"));
        // Idle workers send their heartbeat (one script call every 3 s each) and nothing else.
        Map<String, Long> other = new TreeMap<>(idle.sentByCommand());
        long heartbeats = other.getOrDefault("evalsha", 0L) + other.getOrDefault("eval", 0L);
        other.remove("evalsha");
        other.remove("eval");
        long allowed = (long) idle.workers() * (idle.windowSeconds() / 3 + 1);
        boolean met = other.isEmpty() && heartbeats <= allowed;
        md.append(String.format(Locale.ROOT, "| idle workers send only their heartbeat (at most %d calls in %d s) | %d script calls%s | %s |%n%n",
                allowed, idle.windowSeconds(), heartbeats, other.isEmpty() ? "" : ", also " + other, met ? "yes" : "**no**"));
    }

    private static void target(StringBuilder md, String what, double ratio, double goal) {
        md.append(String.format(Locale.ROOT, "| %s | %.2fx | %s |%n", what, ratio, ratio >= goal ? "yes" : "**no**"));
    }

    private static double ops(List<LockCycles.Row> rows, String impl, int threads) {
        return row(rows, impl, threads).opsPerSecond();
    }

    private static LockCycles.Row row(List<LockCycles.Row> rows, String impl, int threads) {
        return rows.stream().filter(r -> r.impl().equals(impl) && r.threads() == threads).findFirst().orElseThrow();
    }

}
