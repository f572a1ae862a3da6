package io.lockstep.benchmarks;

import io.lockstep.redis.LocalCluster;
import io.lockstep.redis.LocalRedisServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.Set;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.UnifiedJedis;

/**
 * Worker JVMs (the real worker CLI, {@code run --config}) on one redis-server, each with the same
 * {@code jobs} per-second jobs ({@link ProbeJob}), measured over a window after a warm-up: slots
 * fired, exactly-once, lateness, Redis commands per fired slot, worker CPU and heap.
 */
final class ScaleRun {

    /**
     * With {@code -Dbench.events=true} the workers log as they do by default (the worker JAR's
     * logback.xml: every event at INFO, one JSON line each, to a file here); otherwise WARN only,
     * so that a run measures the scheduler rather than its logging.
     */
    static final boolean EVENTS = Boolean.getBoolean("bench.events");

    /** What one run measured. */
    record Result(String label, int workers, int jobs, int windowSeconds, long expected, long started, long duplicates,
            long missing, double p50Ms, double p99Ms, double maxMs, double sentPerSlot, double executedPerSlot,
            Map<String, Long> sentByCommand, double cpuCoresPerWorker, long heapAfterGcKb, int threads,
            double redisBusyMsPerSecond, NotStarted notStarted, double[] p99PerSecond, Map<String, Long> executedByCommand) {

        double firedPerSecond() {
            return (double) started / windowSeconds;
        }

        /** Redis time spent in scripts per fired slot, in microseconds (all masters). */
        double redisMicrosPerSlot() {
            return redisBusyMsPerSecond * 1000 / Math.max(1, firedPerSecond());
        }

        /** Min, median and max of the per-second p99: how much the p99 moves from one second to the next. */
        double[] p99Spread() {
            double[] sorted = p99PerSecond.clone();
            java.util.Arrays.sort(sorted);
            return sorted.length == 0 ? new double[] {0, 0, 0}
                    : new double[] {sorted[0], sorted[sorted.length / 2], sorted[sorted.length - 1]};
        }
    }

    /**
     * What became of the slots of the window that no worker started, read from their slot records
     * in Redis right after the run: skipped by {@code overlap: skip} (the previous run still held the
     * lease), recorded missed (late past the grace, or superseded), or no record at all (a silent miss).
     */
    record NotStarted(long skipped, long missed, long unrecorded) {
        static final NotStarted NONE = new NotStarted(0, 0, 0);
    }

    /** Where the workers' Redis is: one server, or the masters of a Redis Cluster. */
    record Target(String redisYaml, List<LocalRedisServer> masters, boolean cluster) {

        static Target of(LocalRedisServer redis) {
            return new Target("  uri: " + redis.uri() + "\n", List.of(redis), false);
        }

        static Target of(LocalCluster cluster) {
            return new Target("  cluster: { nodes: [" + String.join(", ", cluster.nodes()) + "] }\n", cluster.masters(), true);
        }

        UnifiedJedis client() {
            LocalRedisServer first = masters.get(0);
            return cluster ? RedisClusterClient.create(Set.of(new HostAndPort(first.host(), first.port())))
                    : RedisClient.create(first.host(), first.port());
        }
    }

    /**
     * Commands the workers send (connection set-up aside); everything else in commandstats ran
     * inside a script. Workers send {@code GET} only once, at start (the catch-up marker).
     */
    static final List<String> SENT = List.of("evalsha", "eval", "ping", "script|load", "wait");
    /** The cron of the scale runs; anything else (the idle run) never falls due in the window. */
    static final String EVERY_SECOND = "* * * * * *";

    private ScaleRun() {}

    static Result run(String label, Target target, Path dir, int workers, int jobs, int threads,
            Duration warmup, Duration window, String cron) throws Exception {
        return run(label, target, "", dir, workers, jobs, threads, warmup, window, cron);
    }

    /** As above, with {@code redisYaml} (lines of the {@code redis:} section, {@code waitReplicas: 1} say) added. */
    static Result run(String label, Target target, String redisYaml, Path dir, int workers, int jobs, int threads,
            Duration warmup, Duration window, String cron) throws Exception {
        Files.createDirectories(dir);
        for (LocalRedisServer m : target.masters()) {
            try (RedisClient admin = RedisClient.create(m.host(), m.port())) {
                admin.flushAll();
            }
        }
        Path config = dir.resolve("jobs.yaml");
        StringBuilder yaml = new StringBuilder("redis:\n" + target.redisYaml() + "  timeout: 2s\n" + redisYaml
                + "worker:\n  threads: " + threads + "\n  shutdownTimeout: 10s\n"
                + "defaults:\n  lease: 30s\n  misfireGrace: 10s\njobs:\n");
        for (int i = 0; i < jobs; i++) {
            yaml.append("  - { name: j").append(i).append(", cron: \"").append(cron)
                    .append("\", class: io.lockstep.benchmarks.ProbeJob }\n");
        }
        Files.writeString(config, yaml);
        Path logback = dir.resolve("logback.xml");
        Files.writeString(logback, """
                <configuration>
                  <appender name="OUT" class="ch.qos.logback.core.ConsoleAppender">
                    <encoder><pattern>%d %level %msg %kvp%n</pattern></encoder>
                  </appender>
                  <root level="WARN"><appender-ref ref="OUT"/></root>
                </configuration>
                """);
        List<Process> processes = new ArrayList<>();
        try {
            for (int w = 1; w <= workers; w++) {
                Path out = dir.resolve("w" + w);
                List<String> command = new ArrayList<>(List.of(Bench.java(), "-Xmx1g"));
                // {w} in -Dbench.gc becomes the worker's id (a flight recording per worker, say).
                command.addAll(List.of(System.getProperty("bench.gc", "-XX:+UseG1GC").replace("{w}", "w" + w).trim().split("\\s+")));
                command.add("-Dprobe.out=" + out);
                if (!EVENTS) {
                    command.add("-Dlogback.configurationFile=" + logback);
                }
                command.addAll(List.of("-cp", Bench.jar(),
                        "io.lockstep.worker.WorkerMain", "run", "--config", config.toString(), "--worker-id", "w" + w));
                processes.add(new ProcessBuilder(command)
                        .redirectOutput(dir.resolve("w" + w + ".log").toFile()).redirectErrorStream(true).start());
            }
            for (int w = 1; w <= workers; w++) {
                Path ready = dir.resolve("w" + w + ".ready");
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (!Files.exists(ready)) {
                    if (System.nanoTime() > deadline || !processes.get(w - 1).isAlive()) {
                        throw new IllegalStateException("worker w" + w + " did not start; see " + dir.resolve("w" + w + ".log"));
                    }
                    Thread.sleep(50);
                }
            }
            Thread.sleep(warmup.toMillis()); // JIT and connection warm-up before the measured window
            Instant from = Instant.now().truncatedTo(ChronoUnit.SECONDS).plusSeconds(1);
            sleepUntil(from.minusMillis(300));
            Map<String, Long> before = commandStats(target.masters());
            if (ScriptProfile.enabled()) {
                ScriptProfile.start(target.masters());
            }
            long[] cpuBefore = cpu(processes);
            Instant to = from.plus(window);
            sleepUntil(to.minusMillis(300));
            Map<String, Long> after = commandStats(target.masters());
            Map<String, long[]> profile = ScriptProfile.enabled() ? ScriptProfile.stop(target.masters()) : null;
            long[] cpuAfter = cpu(processes);
            long heapKb = 0;
            for (Process p : processes) {
                heapKb = Math.max(heapKb, heapAfterGcKb(p.pid()));
            }
            sleepUntil(to.plusSeconds(2)); // let the window's last slots finish
            for (Process p : processes) {
                p.destroy(); // SIGTERM: the worker drains and exits, the probe flushes
            }
            for (Process p : processes) {
                if (!p.waitFor(60, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("a worker did not stop within 60 s");
                }
            }
            Result result = measure(label, target, dir, workers, jobs, threads, from, to, before, after, cpuBefore, cpuAfter, window,
                    heapKb, cron);
            if (profile != null) {
                System.out.println("[bench]   Redis time by script (slow log, threshold 0):" + ScriptProfile.format(profile));
            }
            return result;
        } finally {
            processes.forEach(Process::destroyForcibly);
        }
    }

    private static Result measure(String label, Target target, Path dir, int workers, int jobs, int threads, Instant from, Instant to,
            Map<String, Long> before, Map<String, Long> after, long[] cpuBefore, long[] cpuAfter, Duration window,
            long heapKb, String cron) throws IOException {
        Map<String, Integer> starts = new HashMap<>();
        List<Long> lateness = new ArrayList<>();
        Map<Long, List<Long>> bySecond = new java.util.TreeMap<>();
        for (int w = 1; w <= workers; w++) {
            for (String line : Files.readAllLines(dir.resolve("w" + w + ".runs"))) {
                String[] f = line.split(" ");
                long slot = Long.parseLong(f[1]);
                if (slot >= from.toEpochMilli() && slot < to.toEpochMilli()) {
                    starts.merge(f[0] + "@" + slot, 1, Integer::sum);
                    long late = Long.parseLong(f[2]);
                    lateness.add(late);
                    bySecond.computeIfAbsent(slot, k -> new ArrayList<>()).add(late);
                }
            }
        }
        double[] p99PerSecond = bySecond.values().stream()
                .mapToDouble(l -> percentile(l.stream().mapToLong(Long::longValue).sorted().toArray(), 99)).toArray();
        int seconds = (int) window.toSeconds();
        List<String> notStarted = new ArrayList<>();
        if (cron.equals(EVERY_SECOND)) {
            for (long slot = from.toEpochMilli(); slot < to.toEpochMilli(); slot += 1000) {
                for (int j = 0; j < jobs; j++) {
                    if (!starts.containsKey("j" + j + "@" + slot)) {
                        notStarted.add("j" + j + "@" + slot);
                    }
                }
            }
        }
        long expected = (long) jobs * seconds;
        long duplicates = starts.values().stream().filter(c -> c > 1).count();
        long started = starts.size();
        long[] sorted = lateness.stream().mapToLong(Long::longValue).sorted().toArray();
        Map<String, Long> delta = new HashMap<>();
        after.forEach((k, v) -> {
            if (k.equals("usec")) {
                return;
            }
            long d = v - before.getOrDefault(k, 0L);
            if (d > 0) {
                delta.put(k, d);
            }
        });
        long sent = delta.entrySet().stream().filter(e -> SENT.contains(e.getKey())).mapToLong(Map.Entry::getValue).sum();
        long executed = delta.values().stream().mapToLong(Long::longValue).sum();
        Map<String, Long> sentBy = new HashMap<>();
        delta.forEach((k, v) -> {
            if (SENT.contains(k)) {
                sentBy.put(k, v);
            }
        });
        long cpuMs = 0;
        for (int i = 0; i < cpuAfter.length; i++) {
            cpuMs += cpuAfter[i] - cpuBefore[i];
        }
        double cores = (double) cpuMs / workers / window.toMillis();
        Map<String, Long> executedBy = new java.util.TreeMap<>(delta);
        return new Result(label, workers, jobs, seconds, expected, started, duplicates, expected - started,
                percentile(sorted, 50), percentile(sorted, 99), sorted.length == 0 ? 0 : sorted[sorted.length - 1] / 1000.0,
                (double) sent / Math.max(1, started), (double) executed / Math.max(1, started), sentBy, cores, heapKb, threads,
                (after.getOrDefault("usec", 0L) - before.getOrDefault("usec", 0L)) / 1000.0 / seconds,
                notStarted.isEmpty() ? NotStarted.NONE : classify(target, notStarted), p99PerSecond, executedBy);
    }

    /** The workers' keys (default prefix), to read the records of the slots that did not start. */
    private static final io.lockstep.redis.RedisKeys KEYS = new io.lockstep.redis.RedisKeys("lockstep", false);

    /** Reads the slot record of each slot that did not start (pipelined): skipped, missed, or none. */
    private static NotStarted classify(Target target, List<String> slots) {
        long skipped = 0;
        long missed = 0;
        long unrecorded = 0;
        try (UnifiedJedis redis = target.client()) {
            for (int from = 0; from < slots.size(); from += 10_000) {
                List<String> part = slots.subList(from, Math.min(slots.size(), from + 10_000));
                List<redis.clients.jedis.Response<String>> states = new ArrayList<>(part.size());
                try (redis.clients.jedis.AbstractPipeline p = redis.pipelined()) {
                    for (String key : part) {
                        String[] f = key.split("@");
                        states.add(p.hget(KEYS.slot(f[0], Long.parseLong(f[1])), "state"));
                    }
                    p.sync();
                }
                for (redis.clients.jedis.Response<String> r : states) {
                    String state = r.get();
                    if ("skipped".equals(state)) {
                        skipped++;
                    } else if ("missed".equals(state)) {
                        missed++;
                    } else {
                        unrecorded++; // no record, or a run the probe never saw start
                    }
                }
            }
        }
        return new NotStarted(skipped, missed, unrecorded);
    }

    static double percentile(long[] sortedMicros, double p) {
        if (sortedMicros.length == 0) {
            return 0;
        }
        int i = (int) Math.ceil(p / 100.0 * sortedMicros.length) - 1;
        return sortedMicros[Math.max(0, Math.min(sortedMicros.length - 1, i))] / 1000.0;
    }

    /** Calls per command over every master, plus the time scripts took in all under the name {@code usec}. */
    static Map<String, Long> commandStats(List<LocalRedisServer> masters) {
        Map<String, Long> calls = new HashMap<>();
        for (LocalRedisServer redis : masters) {
            redis.commandStats().forEach((name, stat) -> {
                if (name.startsWith("cluster")) {
                    return; // the cluster client's topology reads, not the scheduler's work
                }
                calls.merge(name, stat.calls(), Long::sum);
                if (name.equals("evalsha") || name.equals("eval")) {
                    calls.merge("usec", stat.usec(), Long::sum);
                }
            });
        }
        return calls;
    }

    private static long[] cpu(List<Process> processes) {
        return processes.stream().mapToLong(p -> p.toHandle().info().totalCpuDuration().map(Duration::toMillis).orElse(0L)).toArray();
    }

    /** {@code jcmd GC.run} then {@code GC.heap_info}: the heap in use right after a full collection, in KB. */
    static long heapAfterGcKb(long pid) throws IOException {
        run(Bench.jcmd(), Long.toString(pid), "GC.run");
        String info = run(Bench.jcmd(), Long.toString(pid), "GC.heap_info");
        for (String line : info.split("\n")) {
            int used = line.indexOf("used ");
            if (used >= 0 && line.contains("total")) { // G1: "garbage-first heap total 393216K, used 17628K"
                String n = line.substring(used + 5).trim();
                return Long.parseLong(n.substring(0, n.indexOf('K')));
            }
            java.util.regex.Matcher z = java.util.regex.Pattern.compile("ZHeap\\s+used (\\d+)M").matcher(line);
            if (z.find()) { // ZGC: "ZHeap used 50M, capacity 378M, max capacity 1024M"
                return Long.parseLong(z.group(1)) * 1024;
            }
        }
        throw new IllegalStateException("cannot read the heap from jcmd: " + info);
    }

    private static String run(String... command) throws IOException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        try {
            String out = new String(p.getInputStream().readAllBytes());
            p.waitFor(30, TimeUnit.SECONDS);
            return out;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static void sleepUntil(Instant t) throws InterruptedException {
        long ms = Duration.between(Instant.now(), t).toMillis();
        if (ms > 0) {
            Thread.sleep(ms);
        }
    }
}
