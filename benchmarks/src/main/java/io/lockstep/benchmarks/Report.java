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
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.style.markers.SeriesMarkers;
import redis.clients.jedis.RedisClient;

/**
 * Writes the measured figures into {@code BENCHMARKS.md} between the markers
 * {@value #START} and {@value #END} (the hand-written text around them is kept), and draws
 * {@code lateness.png}.
 */
final class Report {

    static final String START = "<!-- figures:start (written by the benchmark harness; do not edit) -->";
    static final String END = "<!-- figures:end -->";

    private Report() {}

    static void write(Path dir, LocalRedisServer redis, List<LockCycles.Row> locks, List<ScaleRun.Result> scale,
            ScaleRun.Result replicated, ScaleRun.Result idle, RunAll.Memory memory, Duration took, boolean quick) throws IOException {
        chart(dir.resolve("lateness.png"), scale);
        StringBuilder md = new StringBuilder(START).append("\n\n");
        md.append(String.format(Locale.ROOT, "Run of %s, %d s in all%s.%n%n", Instant.now().truncatedTo(ChronoUnit.SECONDS),
                took.toSeconds(), quick ? " (**--quick**: short windows, not the published figures)" : ""));
        machine(md, redis);
        lockTable(md, locks);
        scaleTable(md, scale);
        waitReplicas(md, scale.get(0), replicated);
        idle(md, idle);
        memory(md, memory);
        targets(md, locks, scale, idle);
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

    private static void scaleTable(StringBuilder md, List<ScaleRun.Result> scale) {
        md.append("### Scheduler at scale: 3 worker JVMs, one Redis, every job due every second\n\n");
        md.append("| load | window | slots fired/s | started once | twice | not started | lateness p50 / p99 / max ms | "
                + "script calls sent per slot | commands executed per slot | Redis busy (scripts) per second | CPU per worker (cores) | worker heap after GC |\n");
        md.append("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (ScaleRun.Result r : scale) {
            md.append(String.format(Locale.ROOT, "| %,d jobs/s | %d s | %,.0f | %,d of %,d | %d | %d | %.1f / %.1f / %.1f | %.3f | %.1f | %.0f ms | %.2f | %,d MB |%n",
                    r.jobs(), r.windowSeconds(), r.firedPerSecond(), r.started() - r.duplicates(), r.expected(), r.duplicates(),
                    r.missing(), r.p50Ms(), r.p99Ms(), r.maxMs(), r.sentPerSlot(), r.executedPerSlot(), r.redisBusyMsPerSecond(),
                    r.cpuCoresPerWorker(), r.heapAfterGcKb() / 1024));
        }
        md.append("\n\"Not started\" slots were skipped (`overlap: skip`, the previous run still held the lease) or "
                + "missed; the scale runs log at WARN, so the harness cannot tell which.\n");
        md.append("\nCommands sent, by name, per fired slot: ");
        for (ScaleRun.Result r : scale) {
            md.append(String.format(Locale.ROOT, "%,d jobs/s: ", r.jobs()));
            new TreeMap<>(r.sentByCommand()).forEach((k, v) -> md.append(String.format(Locale.ROOT, "`%s` %.3f, ", k, (double) v / r.started())));
            md.setLength(md.length() - 2);
            md.append("; ");
        }
        md.setLength(md.length() - 2);
        md.append(".\n\n![lateness against load](lateness.png)\n\n");
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

    private static void memory(StringBuilder md, RunAll.Memory m) {
        md.append(String.format(Locale.ROOT, "### Memory and start-up: %,d job definitions in one worker%n%n", m.jobs()));
        md.append("| heap after GC, before loading | after start | per job | config load | scheduler start | JVM start to started |\n|---|---|---|---|---|---|\n");
        md.append(String.format(Locale.ROOT, "| %,d KB | %,d KB | %,d bytes | %,d ms | %,d ms | %,d ms |%n%n", m.heapBeforeKb(), m.heapAfterKb(),
                (m.heapAfterKb() - m.heapBeforeKb()) * 1024 / m.jobs(), m.loadMs(), m.startMs(), m.sinceJvmStartMs()));
    }

    private static void targets(StringBuilder md, List<LockCycles.Row> locks, List<ScaleRun.Result> scale, ScaleRun.Result idle) {
        md.append("### Targets\n\n| target | measured | met |\n|---|---|---|\n");
        target(md, "Lockstep ≥ 0.9x the floor, 1 thread", ops(locks, "lockstep", 1) / ops(locks, "floor", 1), 0.9);
        target(md, "Lockstep ≥ 0.8x the floor, 8 threads", ops(locks, "lockstep", 8) / ops(locks, "floor", 8), 0.8);
        target(md, "Lockstep ≥ 1.8x Redisson, 1 thread", ops(locks, "lockstep", 1) / ops(locks, "redisson", 1), 1.8);
        target(md, "Lockstep ≥ 4x Redisson, 8 threads", ops(locks, "lockstep", 8) / ops(locks, "redisson", 8), 4.0);
        ScaleRun.Result first = scale.get(0);
        md.append(String.format(Locale.ROOT, "| p99 lateness ≤ 10 ms at %,d slots/s | %.1f ms | %s |%n", first.jobs(), first.p99Ms(),
                first.p99Ms() <= 10 ? "yes" : "**no**"));
        for (ScaleRun.Result r : scale) {
            md.append(String.format(Locale.ROOT, "| commands sent per fired slot ≤ workers + 2 = %d, %,d slots/s | %.2f | %s |%n",
                    r.workers() + 2, r.jobs(), r.sentPerSlot(), r.sentPerSlot() <= r.workers() + 2 ? "yes" : "**no**"));
            md.append(String.format(Locale.ROOT, "| every slot exactly once, %,d slots/s | %d twice, %d not started | %s |%n", r.jobs(),
                    r.duplicates(), r.missing(), r.duplicates() == 0 && r.missing() == 0 ? "yes" : "**no**"));
        }
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

    private static void chart(Path file, List<ScaleRun.Result> scale) throws IOException {
        XYChart chart = new XYChartBuilder().width(800).height(450).title("job_started lateness against load (3 workers, one Redis)")
                .xAxisTitle("jobs due every second").yAxisTitle("lateness (ms)").build();
        double[] x = scale.stream().mapToDouble(ScaleRun.Result::jobs).toArray();
        chart.addSeries("p50", x, scale.stream().mapToDouble(ScaleRun.Result::p50Ms).toArray()).setMarker(SeriesMarkers.CIRCLE);
        chart.addSeries("p99", x, scale.stream().mapToDouble(ScaleRun.Result::p99Ms).toArray()).setMarker(SeriesMarkers.DIAMOND);
        chart.addSeries("max", x, scale.stream().mapToDouble(ScaleRun.Result::maxMs).toArray()).setMarker(SeriesMarkers.SQUARE);
        String name = file.getFileName().toString();
        BitmapEncoder.saveBitmap(chart, file.resolveSibling(name.substring(0, name.lastIndexOf('.'))).toString(),
                BitmapEncoder.BitmapFormat.PNG);
    }
}
