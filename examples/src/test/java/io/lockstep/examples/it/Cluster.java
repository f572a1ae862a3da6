package io.lockstep.examples.it;

import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.lockstep.redis.LocalRedisServer;
import io.lockstep.redis.TcpProxy;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Set;
import io.lockstep.scheduler.SlotCoverage;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/** A real redis-server, a generated config and worker JVMs; the IT fixture. Closes everything. */
final class Cluster implements AutoCloseable {

    final Path dir;
    final LocalRedisServer redis;
    final Path config;
    /**
     * The configs {@link #audit} reads, when the workers ran others than {@link #config} (their own
     * files, or a reload's versions): the audit matches each to the {@code config_hash} its workers log.
     */
    final List<Path> auditConfigs = new ArrayList<>();
    final List<WorkerProcess> workers = new ArrayList<>();

    Cluster(Path dir, String jobsYaml) {
        this(dir, jobsYaml, "1s");
    }

    /**
     * Workers on a Redis the test made itself (Sentinel, Cluster, TLS...): {@code redisYaml} is the
     * whole {@code redis:} section. {@link #redis} is null then.
     */
    private Cluster(Path dir, String redisYaml, String jobsYaml, boolean external) {
        this.dir = dir;
        this.redis = null;
        this.config = dir.resolve("jobs.yaml");
        try {
            Files.writeString(config, redisYaml + "worker:\n  threads: 8\n  shutdownTimeout: 10s\n" + jobsYaml);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static Cluster onRedis(Path dir, String redisYaml, String jobsYaml) {
        return new Cluster(dir, redisYaml, jobsYaml, true);
    }

    /** With the workers' {@code redis.timeout}: short, where a test loses replies on purpose. */
    Cluster(Path dir, String jobsYaml, String redisTimeout, String... redisArgs) {
        this.dir = dir;
        this.redis = LocalRedisServer.start(redisArgs);
        this.config = dir.resolve("jobs.yaml");
        try {
            Files.writeString(config, "redis:\n  uri: " + redis.uri() + "\n  timeout: " + redisTimeout + "\n"
                    + "worker:\n  threads: 8\n  shutdownTimeout: 10s\n" + jobsYaml);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** {@code count} jobs firing every second, each working {@code workMillis}. */
    static String perSecondJobs(int count, int workMillis, String lease, String grace) {
        StringBuilder yaml = new StringBuilder("defaults:\n  lease: " + lease + "\n  misfireGrace: " + grace + "\njobs:\n");
        for (int i = 0; i < count; i++) {
            yaml.append(String.format("  - name: job-%02d%n    cron: \"* * * * * *\"%n    class: io.lockstep.examples.HeartbeatJob%n"
                    + "    params: { workMillis: %d }%n", i, workMillis));
        }
        return yaml.toString();
    }

    WorkerProcess start(String id, String... jvmOptions) {
        WorkerProcess w = WorkerProcess.start(dir, config, id, jvmOptions);
        workers.add(w);
        return w;
    }

    /**
     * Starts a worker that reaches Redis through {@code proxy} (a copy of the config with the
     * proxy's URI), so that its link alone can be hurt.
     */
    WorkerProcess startBehind(TcpProxy proxy, String id) {
        return startBehind(proxy, id, Map.of());
    }

    /**
     * {@link #startBehind(TcpProxy, String)} with extra environment variables (libfaketime's, say).
     * The worker's own config is {@code <id>.yaml} in {@link #dir}: a test may rewrite it and SIGHUP
     * that worker alone, or start the same id again on it.
     */
    WorkerProcess startBehind(TcpProxy proxy, String id, Map<String, String> env) {
        try {
            Path own = dir.resolve(id + ".yaml");
            Files.writeString(own, replacing(Files.readString(config), redis.uri(), proxy.uri()));
            WorkerProcess w = WorkerProcess.start(dir, own, id, env);
            workers.add(w);
            return w;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Starts a worker with {@code classPath} added to its class path (a jobs JAR's, say) and JVM options. */
    WorkerProcess startWithClassPath(String id, List<Path> classPath, String... jvmOptions) {
        WorkerProcess w = WorkerProcess.start(dir, config, id, Map.of(), classPath, jvmOptions);
        workers.add(w);
        return w;
    }

    /** Starts a worker with more arguments to {@code run} ({@code --label gpu}, say). */
    WorkerProcess startWithArgs(String id, String... runArgs) {
        WorkerProcess w = WorkerProcess.start(dir, config, id, Map.of(), List.of(), List.of(runArgs));
        workers.add(w);
        return w;
    }

    /** Starts a worker with extra environment variables (libfaketime's, say). */
    WorkerProcess startWithEnv(String id, Map<String, String> env) {
        WorkerProcess w = WorkerProcess.start(dir, config, id, env);
        workers.add(w);
        return w;
    }

    void awaitStarted() {
        awaitStarted(Duration.ofSeconds(30));
    }

    /**
     * Every worker started, waiting up to {@code atMost}: longer for workers under libfaketime, whose
     * JVM takes 10-15 s more to boot on this machine, and more under a loaded CI run (a clean-clone
     * run once saw a skewed worker not started after 30 s).
     */
    void awaitStarted(Duration atMost) {
        await().atMost(atMost).until(() -> workers.stream().allMatch(WorkerProcess::hasStarted));
    }

    /** Every event of every worker. */
    List<JsonNode> events(String name) {
        return workers.stream().flatMap(w -> w.events(name).stream()).toList();
    }

    /** job@slot -> the workers that started it. */
    Map<String, List<String>> startsBySlot() {
        Map<String, List<String>> starts = new HashMap<>();
        startEventsBySlot().forEach((slot, events) -> starts.put(slot, events.stream().map(e -> e.path("worker").asText()).toList()));
        return starts;
    }

    /** job@slot -> every {@code job_started} event of it (one per run). */
    Map<String, List<JsonNode>> startEventsBySlot() {
        return events("job_started").stream().collect(Collectors.groupingBy(WorkerProcess::key));
    }

    /**
     * The job@slot keys every worker handled: started, or reported with a reason ({@code slot_missed},
     * {@code slot_skipped}, or {@code slot_abandoned}: with {@code recover: none} a slot a worker
     * claimed ahead and was killed or stopped before starting ends with that report alone), for
     * {@link SlotCoverage#silent}.
     */
    Set<String> handled() {
        Set<String> handled = new HashSet<>();
        for (String name : List.of("job_started", "slot_missed", "slot_skipped", "slot_abandoned")) {
            events(name).forEach(e -> handled.add(WorkerProcess.key(e)));
        }
        return handled;
    }

    /** Waits until the wall clock reaches {@code at}: the faults are aimed at an instant, not at a condition. */
    static void sleepUntil(Instant at) {
        long nanos;
        while ((nanos = Duration.between(Instant.now(), at).toNanos()) > 0) {
            java.util.concurrent.locks.LockSupport.parkNanos(nanos);
        }
    }

    /** The names {@link #perSecondJobs} gives its {@code count} jobs. */
    static List<String> jobNames(int count) {
        return java.util.stream.IntStream.range(0, count).mapToObj(i -> String.format("job-%02d", i)).toList();
    }

    /** The per-second slots of {@code jobs} in [from, to) that no worker started nor reported. */
    List<String> silentSlots(int jobs, Instant from, Instant to) {
        return SlotCoverage.silent(handled(), jobNames(jobs), from, to, Duration.ofSeconds(1));
    }

    /** The job@slot keys of every per-second slot in [from, to] that no worker started. */
    List<String> slotsNeverStarted(int jobs, Instant from, Instant to) {
        Map<String, List<String>> starts = startsBySlot();
        List<String> missing = new ArrayList<>();
        for (Instant slot = from; !slot.isAfter(to); slot = slot.plusSeconds(1)) {
            for (int j = 0; j < jobs; j++) {
                String key = SlotCoverage.key(String.format("job-%02d", j), slot);
                if (!starts.containsKey(key)) {
                    missing.add(key);
                }
            }
        }
        return missing;
    }

    /**
     * What every worker logged about each of {@code keys} ({@code job@slot}): the event, the worker
     * and its reason or code, in log order; for the message of a test whose slots did not run.
     */
    String fates(List<String> keys) {
        Map<String, List<String>> byKey = new java.util.LinkedHashMap<>();
        keys.forEach(k -> byKey.put(k, new ArrayList<>()));
        for (WorkerProcess w : workers) {
            for (JsonNode e : w.events()) {
                if (e.hasNonNull("job") && e.hasNonNull("slot")) {
                    List<String> of = byKey.get(SlotCoverage.key(e.path("job").asText(), e.path("slot").asText()));
                    if (of != null) {
                        of.add(e.path("event").asText() + " on " + e.path("worker").asText()
                                + (e.hasNonNull("reason") ? " (" + e.path("reason").asText() + ")" : "")
                                + (e.hasNonNull("code") ? " [" + e.path("code").asText() + "]" : ""));
                    }
                }
            }
        }
        StringBuilder b = new StringBuilder();
        byKey.forEach((k, events) -> b.append(k).append(": ").append(events.isEmpty() ? "nothing logged" : String.join(", ", events)).append('\n'));
        return b.toString();
    }

    /** Whether every job has started the slot at {@code slot} or later. */
    boolean everyJobReached(int jobs, Instant slot) {
        Map<String, Instant> latest = events("job_started").stream().collect(Collectors.toMap(
                e -> e.path("job").asText(), WorkerProcess::slot, (a, b) -> a.isAfter(b) ? a : b));
        return latest.size() == jobs && latest.values().stream().allMatch(s -> !s.isBefore(slot));
    }

    /** The Redis commands executed so far, by name, from INFO commandstats. */
    Map<String, Long> commandStats() {
        Map<String, Long> calls = new HashMap<>();
        redis.commandStats().forEach((name, stat) -> calls.put(name, stat.calls()));
        return calls;
    }

    /**
     * {@code text} with every {@code target} replaced; fails if there is none, so that a test that
     * edits a config cannot silently run on the unedited one.
     */
    static String replacing(String text, String target, String replacement) {
        if (!text.contains(target)) {
            throw new IllegalArgumentException("'" + target + "' not found in:\n" + text);
        }
        return text.replace(target, replacement);
    }

    /** Rewrites the shared config with {@link #replacing}, before any worker reads it. */
    void editConfig(String target, String replacement) {
        try {
            Files.writeString(config, replacing(Files.readString(config), target, replacement));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** What {@code lockstep audit} answered: its exit code and what it printed. */
    record AuditRun(int exit, String out, String err) {}

    /**
     * Runs {@code lockstep audit} over every worker's events (earlier lives of a restarted id too)
     * against the shared config, as a user would after exporting their logs.
     */
    AuditRun audit(String... options) {
        List<String> args = new ArrayList<>(List.of("audit"));
        for (Path c : auditConfigs.isEmpty() ? List.of(config) : auditConfigs) {
            args.addAll(List.of("--config", c.toString()));
        }
        args.addAll(List.of(options));
        try (java.util.stream.Stream<Path> files = Files.list(dir)) {
            files.filter(f -> f.getFileName().toString().matches(".*\\.out(\\.\\d+)?\\.jsonl")).sorted().forEach(f -> args.add(f.toString()));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        java.io.StringWriter out = new java.io.StringWriter(), err = new java.io.StringWriter();
        int exit = io.lockstep.worker.WorkerMain.execute(new java.io.PrintWriter(out, true), new java.io.PrintWriter(err, true),
                args.toArray(String[]::new));
        return new AuditRun(exit, out.toString(), err.toString());
    }

    /**
     * The audit of this cluster's own events holds: exit 0, every check. Workers still running are
     * stopped first (SIGTERM, as an operator ends a run before exporting its logs), so that the log
     * is whole.
     */
    void assertAuditHolds(String... options) {
        for (WorkerProcess w : workers) {
            if (w.isAlive()) {
                w.signal("CONT"); // one a test left stopped
                w.terminate();
            }
        }
        AuditRun run = audit(options);
        System.out.printf("%naudit of %s:%n%s%s", dir, run.out(), run.err());
        if (run.exit() != 0) { // keep the evidence: the test's directory is deleted after it
            keepLogs(Path.of("target", "audit-failures", dir.getFileName().toString()));
        }
        org.assertj.core.api.Assertions.assertThat(run.exit()).as("lockstep audit exit code; it printed:%n%s%s", run.out(), run.err()).isZero();
    }

    /**
     * A control for a run whose audit holds: the same logs with one rerun forged, as a claim lost in a
     * failover would make it (the first start of a slot at or after {@code after}, copied to another
     * worker's log at its place in time, under the next fencing token). The audit must exit 4 and
     * name that slot {@code second-run}, and nothing else.
     */
    void assertAuditNamesAForgedRerun(Instant after) {
        assertAuditNamesAForgedRerun(e -> !WorkerProcess.slot(e).isBefore(after));
    }

    /** {@link #assertAuditNamesAForgedRerun(Instant)} for the first start (by time) that {@code which} accepts. */
    void assertAuditNamesAForgedRerun(java.util.function.Predicate<JsonNode> which) {
        com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
        try {
            List<Path> logs;
            try (java.util.stream.Stream<Path> files = Files.list(dir)) {
                logs = files.filter(f -> f.getFileName().toString().matches(".*\\.out(\\.\\d+)?\\.jsonl")).sorted().toList();
            }
            JsonNode original = events("job_started").stream().filter(which)
                    .min(java.util.Comparator.comparing(WorkerProcess::ts)).orElseThrow();
            String victim = original.path("worker").asText();
            WorkerProcess other = workers.stream().filter(w -> !w.id.equals(victim)).findFirst().orElseThrow();
            com.fasterxml.jackson.databind.node.ObjectNode forged = original.deepCopy();
            forged.put("worker", other.id).put("fencing_token", original.path("fencing_token").asLong() + 1);
            Path tampered = Files.createDirectories(dir.resolve("forged-rerun"));
            List<String> args = new ArrayList<>(List.of("audit", "--config", config.toString(), "--json"));
            for (Path log : logs) {
                List<String> lines = new ArrayList<>(Files.readAllLines(log));
                if (log.equals(other.log())) {
                    int at = 0;
                    while (at < lines.size() && !(lines.get(at).startsWith("{") && json.readTree(lines.get(at)).hasNonNull("ts")
                            && WorkerProcess.ts(json.readTree(lines.get(at))).isAfter(WorkerProcess.ts(original)))) {
                        at++;
                    }
                    lines.add(at, forged.toString());
                }
                Path copy = tampered.resolve(log.getFileName());
                Files.write(copy, lines);
                args.add(copy.toString());
            }
            java.io.StringWriter out = new java.io.StringWriter();
            int exit = io.lockstep.worker.WorkerMain.execute(new java.io.PrintWriter(out, true),
                    new java.io.PrintWriter(new java.io.StringWriter(), true), args.toArray(String[]::new));
            JsonNode report = json.readTree(out.toString());
            List<String> named = new ArrayList<>();
            report.path("violations").forEach(v -> named.add(v.path("check").asText() + " " + v.path("job").asText() + "@" + v.path("slot").asText()));
            org.assertj.core.api.Assertions.assertThat(exit).as("audit of the logs with a forged rerun: %s", out).isEqualTo(4);
            org.assertj.core.api.Assertions.assertThat(named).as("what the audit named")
                    .containsExactly("second-run " + original.path("job").asText() + "@" + original.path("slot").asText());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Copies every file of {@link #dir} (the workers' logs, every life of each, and the configs) to
     * {@code kept}, for a failing test whose directory is deleted after it; prints where.
     */
    void keepLogs(Path kept) {
        try (java.util.stream.Stream<Path> files = Files.list(dir)) {
            Files.createDirectories(kept);
            for (Path f : files.filter(Files::isRegularFile).toList()) {
                Files.copy(f, kept.resolve(f.getFileName()), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            }
            System.out.println("the workers' logs and config are kept in " + kept.toAbsolutePath());
        } catch (IOException e) {
            System.out.println("could not keep the logs: " + e);
        }
    }

    @Override
    public void close() {
        workers.forEach(WorkerProcess::close);
        if (redis != null) {
            redis.close();
        }
    }
}
