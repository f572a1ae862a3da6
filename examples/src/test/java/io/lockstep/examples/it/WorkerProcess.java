package io.lockstep.examples.it;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.lockstep.scheduler.SlotCoverage;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A worker JVM started from the built JAR ({@code lockstep-examples.jar run}), its JSON events read
 * back from its stdout, and signals to hurt it with.
 */
final class WorkerProcess implements AutoCloseable {

    private static final ObjectMapper JSON = new ObjectMapper();

    final String id;
    private final Process process;
    private final Path stdout;
    private final Path stderr;

    private WorkerProcess(String id, Process process, Path stdout, Path stderr) {
        this.id = id;
        this.process = process;
        this.stdout = stdout;
        this.stderr = stderr;
    }

    /** Where Debian's package faketime puts libfaketime (LD_PRELOAD it to step a worker's clock), if installed. */
    static java.util.Optional<Path> libfaketime() {
        return java.util.stream.Stream.of("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
                "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1", "/usr/lib/faketime/libfaketime.so.1")
                .map(Path::of).filter(Files::isRegularFile).findFirst();
    }

    static Path jar() {
        Path jar = Path.of(System.getProperty("lockstep.workerJar", "target/lockstep-examples.jar"));
        if (!Files.isRegularFile(jar)) {
            throw new IllegalStateException("worker jar " + jar + " is missing: run mvn verify (the ITs need the package phase)");
        }
        return jar;
    }

    /** Starts {@code run --config config --worker-id id} with extra JVM options (e.g. a clock skew). */
    static WorkerProcess start(Path dir, Path config, String id, String... jvmOptions) {
        return start(dir, config, id, Map.of(), jvmOptions);
    }

    /**
     * Starts a worker with extra environment variables (e.g. libfaketime's) and JVM options. The
     * test classes are on its class path too, so ITs can run job classes of their own.
     */
    static WorkerProcess start(Path dir, Path config, String id, Map<String, String> env, String... jvmOptions) {
        return start(dir, config, id, env, List.of(), jvmOptions);
    }

    /** Starts a worker with {@code classPath} after the JAR and the test classes (a jobs JAR's, say). */
    static WorkerProcess start(Path dir, Path config, String id, Map<String, String> env, List<Path> classPath, String... jvmOptions) {
        return start(dir, config, id, env, classPath, List.of(), jvmOptions);
    }

    /** Starts a worker with more arguments to {@code run} ({@code --label gpu}, say). */
    static WorkerProcess start(Path dir, Path config, String id, Map<String, String> env, List<Path> classPath, List<String> runArgs,
            String... jvmOptions) {
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"));
        command.addAll(List.of(jvmOptions));
        // The JSON events of config/logback.xml, as in the JAR (the test classes carry a logback-test.xml).
        command.add("-Dlogback.configurationFile=" + Path.of(System.getProperty("lockstep.configDir", "../config"), "logback.xml")
                .toAbsolutePath());
        StringBuilder cp = new StringBuilder(jar() + java.io.File.pathSeparator + TEST_CLASSES);
        classPath.forEach(p -> cp.append(java.io.File.pathSeparator).append(p.toAbsolutePath()));
        command.addAll(List.of("-cp", cp.toString(), "io.lockstep.worker.WorkerMain",
                "run", "--config", config.toString(), "--worker-id", id));
        command.addAll(runArgs);
        return launch(dir, id, command, env);
    }

    /**
     * Starts {@code run --config config --worker-id id} from another worker JAR (an older version's,
     * for the upgrade test), without the test classes.
     */
    static WorkerProcess startJar(Path dir, Path jar, Path config, String id) {
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Dlogback.configurationFile=" + Path.of(System.getProperty("lockstep.configDir", "../config"), "logback.xml")
                        .toAbsolutePath(),
                "-cp", jar.toString(), "io.lockstep.worker.WorkerMain", "run", "--config", config.toString(), "--worker-id", id));
        return launch(dir, id, command, Map.of());
    }

    /** The ITs' own classes (job classes that misbehave on purpose), for the workers' class path. */
    private static final String TEST_CLASSES = Path.of("target", "test-classes").toAbsolutePath().toString();

    /** Runs any worker command line (for the exit-code tests). */
    static WorkerProcess command(Path dir, String id, String... args) {
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-XX:TieredStopAtLevel=1",
                "-jar", jar().toString()));
        command.addAll(List.of(args));
        return launch(dir, id, command, Map.of());
    }

    private static WorkerProcess launch(Path dir, String id, List<String> command, Map<String, String> env) {
        Path out = dir.resolve(id + ".out.jsonl");
        Path err = dir.resolve(id + ".err.txt");
        try {
            // A worker started again under the same id: its earlier life's events are kept beside (audit reads them all).
            for (int n = 1; Files.exists(out); n++) {
                Path earlier = dir.resolve(id + ".out." + n + ".jsonl");
                if (!Files.exists(earlier)) {
                    Files.move(out, earlier);
                }
            }
            ProcessBuilder builder = new ProcessBuilder(command);
            builder.environment().putAll(env);
            Process p = builder
                    .redirectOutput(out.toFile())
                    .redirectError(err.toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")))
                    .start();
            return new WorkerProcess(id, p, out, err);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Every JSON event printed so far (lines that are not JSON are skipped). */
    List<JsonNode> events() {
        List<JsonNode> events = new ArrayList<>();
        try {
            for (String line : Files.readAllLines(stdout)) {
                if (line.startsWith("{") && line.endsWith("}")) {
                    events.add(JSON.readTree(line));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return events;
    }

    List<JsonNode> events(String name) {
        return events().stream().filter(e -> name.equals(e.path("event").asText())).toList();
    }

    /** The file its stdout goes to: its JSON events. */
    Path log() {
        return stdout;
    }

    boolean hasStarted() {
        return !events("worker_started").isEmpty();
    }

    String stderr() {
        try {
            return Files.readString(stderr);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    long pid() {
        return process.pid();
    }

    boolean isAlive() {
        return process.isAlive();
    }

    void signal(String name) {
        try {
            Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).inheritIO().start();
            if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
                throw new IllegalStateException("kill -" + name + " " + process.pid() + " failed");
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** SIGTERM, then the exit code once it has drained. */
    int terminate() {
        signal("TERM");
        return waitForExit();
    }

    int waitForExit() {
        return waitForExit(java.time.Duration.ofSeconds(60));
    }

    int waitForExit(java.time.Duration atMost) {
        try {
            if (!process.waitFor(atMost.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException("worker " + id + " did not exit within " + atMost.toSeconds() + " s");
            }
            return process.exitValue();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        if (process.isAlive()) {
            signal("CONT"); // a stopped process cannot die of SIGTERM
            process.destroyForcibly();
        }
    }

    static Instant ts(JsonNode event) {
        return Instant.parse(event.path("ts").asText());
    }

    static Instant slot(JsonNode event) {
        return Instant.parse(event.path("slot").asText());
    }

    /** The event's job@slot, as {@link SlotCoverage#key} writes it (the one key every IT groups by). */
    static String key(JsonNode event) {
        return SlotCoverage.key(event.path("job").asText(), event.path("slot").asText());
    }

    /** The slot of a job@slot key. */
    static Instant slotOf(String jobAtSlot) {
        return Instant.parse(jobAtSlot.substring(jobAtSlot.indexOf('@') + 1));
    }

    /** Whether two events are about the same slot of the same job. */
    static boolean same(JsonNode a, JsonNode b) {
        return key(a).equals(key(b));
    }

    /** The events about {@code slot} (of any job). */
    static List<JsonNode> forSlot(List<JsonNode> events, Instant slot) {
        return events.stream().filter(e -> slot.equals(slot(e))).toList();
    }

    /** The events about {@code job}. */
    static List<JsonNode> ofJob(List<JsonNode> events, String job) {
        return events.stream().filter(e -> job.equals(e.path("job").asText())).toList();
    }
}
