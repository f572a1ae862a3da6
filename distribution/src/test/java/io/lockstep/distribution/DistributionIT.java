package io.lockstep.distribution;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.lockstep.redis.LocalRedisServer;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * The distribution as a user gets it: the built {@code .tar.gz} unpacked into a temporary directory,
 * run only through {@code bin/lockstep}, against a real redis-server.
 *
 * <p>First with an empty {@code jobs/}: the operator commands work on a YAML whose job classes are
 * nowhere. Then a jobs JAR built here (a job and its {@code JobFactory}, with the Jackson of the
 * property {@code lockstep.clashJacksonVersion} beside it, another minor than Lockstep's own) is dropped into {@code jobs/}:
 * {@code validate} passes, two workers run the jobs, the jobs use their own Jackson, and at SIGTERM
 * each worker drains its running jobs and then closes the factory once.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class DistributionIT {

    @TempDir
    static Path dir;

    static Path home;
    static Path config;
    static Path ledgers;
    static LocalRedisServer redis;

    @BeforeAll
    static void unpack() throws Exception {
        Path tarball = Path.of(System.getProperty("lockstep.distribution", "target/none.tar.gz"));
        assertThat(tarball).as("the distribution (mvn verify builds it in the package phase)").isRegularFile();
        Process tar = new ProcessBuilder("tar", "-xzf", tarball.toString(), "-C", dir.toString()).inheritIO().start();
        assertThat(tar.waitFor(60, TimeUnit.SECONDS) && tar.exitValue() == 0).as("tar -xzf %s", tarball).isTrue();
        home = dir.resolve("lockstep-" + System.getProperty("lockstep.version"));
        ledgers = Files.createDirectories(dir.resolve("ledgers"));
        redis = LocalRedisServer.start();
        config = dir.resolve("acme.yaml");
        Files.writeString(config, """
                redis:
                  uri: %s
                worker:
                  threads: 8
                  shutdownTimeout: 20s
                jobs:
                  - { name: clash-a, cron: "* * * * * *", class: acme.ClashJob }
                  - { name: clash-b, cron: "* * * * * *", class: acme.ClashJob }
                  - { name: clash-c, cron: "* * * * * *", class: acme.ClashJob }
                  - { name: clash-d, cron: "* * * * * *", class: acme.ClashJob }
                """.formatted(redis.uri()));
    }

    @AfterAll
    static void stopRedis() {
        if (redis != null) {
            redis.close();
        }
    }

    @Test
    @Order(1)
    void theLayoutIsTheDocumentedOne() {
        assertThat(home.resolve("bin/lockstep")).isExecutable();
        assertThat(home.resolve("jobs")).isDirectory();
        assertThat(home.resolve("config/jobs.yaml")).isRegularFile();
        assertThat(home.resolve("config/logback.xml")).isRegularFile();
        assertThat(home.resolve("config/lockstep.schema.json")).isRegularFile();
        assertThat(home.resolve("Dockerfile")).isRegularFile();
        assertThat(home.resolve("lib").toFile().list()).anyMatch(name -> name.startsWith("lockstep-worker-"));
        assertThat(home.resolve("jobs").toFile().list()).containsExactly("README.md");
    }

    @Test
    @Order(2)
    void theOperatorCommandsWorkWithAnEmptyJobsDirectory() throws Exception {
        String file = config.toString();
        for (List<String> command : List.of(
                List.of("status", "--config", file),
                List.of("history", "--config", file, "--job", "clash-a"),
                List.of("pause", "--config", file, "--job", "clash-a", "--note", "maintenance"),
                List.of("resume", "--config", file, "--job", "clash-a"),
                List.of("trigger", "--config", file, "--job", "clash-b"))) {
            Result result = lockstep(command);
            assertThat(result.exit).as("bin/lockstep %s: %s", command, result).isZero();
            assertThat(result.err).as("%s", command).doesNotContain("not found");
        }
        Result validate = lockstep(List.of("validate", "--config", file));
        assertThat(validate.exit).as("validate still checks the classes: %s", validate).isEqualTo(2);
        assertThat(validate.err).contains("class acme.ClashJob not found in the jobs directory " + home.resolve("jobs"));
        assertThat(validate.err).doesNotContain("Exception").doesNotContain("\tat ");
    }

    @Test
    @Order(3)
    void aJobsJarWithItsOwnJacksonRunsOnTwoWorkersAndItsFactoryIsClosedOncePerWorkerAfterTheDrain() throws Exception {
        String clashVersion = System.getProperty("lockstep.clashJacksonVersion");
        Path clash = Path.of(System.getProperty("lockstep.clashJackson"));
        List<Path> jackson;
        try (Stream<Path> jars = Files.list(clash)) {
            jackson = jars.filter(p -> p.toString().endsWith(".jar")).sorted().toList();
        }
        assertThat(jackson).hasSize(3);
        buildJobsJar(home.resolve("jobs/acme-jobs.jar"), jackson);
        for (Path jar : jackson) {
            Files.copy(jar, home.resolve("jobs").resolve(jar.getFileName()));
        }

        Result validate = lockstep(List.of("validate", "--config", config.toString()));
        assertThat(validate.exit).as("%s", validate).isZero();
        assertThat(validate.out).contains("valid, 4 jobs").contains("jobs built by acme.AcmeFactory");

        List<Process> workers = new ArrayList<>();
        for (String id : List.of("w1", "w2")) {
            ProcessBuilder builder = new ProcessBuilder(home.resolve("bin/lockstep").toString(), "run", "--config", config.toString(),
                    "--worker-id", id)
                    .redirectOutput(dir.resolve(id + ".out").toFile()).redirectError(dir.resolve(id + ".err").toFile());
            builder.environment().put("LOCKSTEP_OPTS", "-Dacme.ledgers=" + ledgers + " -Dacme.worker=" + id);
            workers.add(builder.start());
        }
        try {
            // Runs finish on both workers; then runs are held (waiting for a file) on each, so that the
            // SIGTERM lands mid-run on each, and are let go only once both workers are stopping.
            await().atMost(Duration.ofSeconds(60)).until(() -> finishedRuns() >= 4);
            Files.writeString(ledgers.resolve("hold"), "");
            await().atMost(Duration.ofSeconds(30)).until(() -> held("w1") && held("w2"));
            for (Process worker : workers) {
                worker.destroy(); // SIGTERM to bin/lockstep's pid, which is the JVM (exec)
            }
            await().atMost(Duration.ofSeconds(30)).until(() -> Files.readString(dir.resolve("w1.out")).contains("\"event\":\"worker_stopping\"")
                    && Files.readString(dir.resolve("w2.out")).contains("\"event\":\"worker_stopping\""));
            assertThat(runningOn("w1") > 0 && runningOn("w2") > 0).as("each worker still runs its held run as it stops").isTrue();
            Files.writeString(ledgers.resolve("release"), "");
            for (Process worker : workers) {
                assertThat(worker.waitFor(60, TimeUnit.SECONDS)).as("the worker stops within its shutdownTimeout").isTrue();
            }
        } finally {
            workers.forEach(Process::destroyForcibly);
        }
        for (int i = 0; i < workers.size(); i++) {
            String id = "w" + (i + 1);
            assertThat(workers.get(i).exitValue()).as("%s exit; stderr: %s", id, Files.readString(dir.resolve(id + ".err"))).isZero();
            List<String> ledger = ledger(id);
            assertThat(ledger).as(id).first().isEqualTo("open");
            assertThat(ledger).as(id).last().isEqualTo("close");
            assertThat(ledger.stream().filter("open"::equals)).as(id).hasSize(1);
            assertThat(ledger.stream().filter("close"::equals)).as(id).hasSize(1);
            Map<String, Integer> open = new HashMap<>();
            for (String line : ledger) {
                String[] words = line.split(" ");
                if (words[0].equals("start")) {
                    open.merge(words[1], 1, Integer::sum);
                } else if (words[0].equals("end")) {
                    open.merge(words[1], -1, Integer::sum);
                    assertThat(line).as("the job's own Jackson, from jobs/").contains("jackson=" + clashVersion)
                            .contains("loader=in the jobs directory").contains("json={\"slot\":");
                }
            }
            assertThat(open.values()).as("every run %s started ended before the factory closed: %s", id, ledger).allMatch(n -> n == 0);
            assertThat(ledger.stream().filter(l -> l.startsWith("end "))).as(id).isNotEmpty();
            String events = Files.readString(dir.resolve(id + ".out"));
            assertThat(events).contains("\"event\":\"job_succeeded\"").doesNotContain("\"event\":\"job_failed\"");
        }
    }

    /**
     * The systemd unit, the Kubernetes manifest and the Dockerfile name the distribution's paths:
     * each command they run exists in it, and runs (as {@code validate}, on the example config and
     * the example jobs) with the arguments they give it.
     */
    @Test
    @Order(4)
    void theSystemdUnitTheKubernetesManifestAndTheDockerfileRunTheDistributionsLauncher() throws Exception {
        Path etc = Files.createDirectories(dir.resolve("etc-lockstep"));
        Files.copy(home.resolve("config/jobs.yaml"), etc.resolve("jobs.yaml"));

        String unit = Files.readString(home.resolve("config/lockstep-worker.service"));
        String execStart = unit.lines().filter(l -> l.startsWith("ExecStart=")).findFirst().orElseThrow().substring("ExecStart=".length());
        assertThat(execStart).isEqualTo("/opt/lockstep/bin/lockstep run --config /etc/lockstep/jobs.yaml");
        assertRunsAsValidate(List.of(execStart.split(" ")), etc);

        JsonNode manifest = new ObjectMapper(new YAMLFactory()).readTree(home.resolve("config/kubernetes/lockstep-worker.yaml").toFile());
        JsonNode container = manifest.at("/spec/template/spec/containers/0");
        List<String> command = new ArrayList<>();
        container.get("command").forEach(word -> command.add(word.asText()));
        assertThat(command).containsExactly("/opt/lockstep/bin/lockstep", "run", "--config", "/etc/lockstep/jobs.yaml");
        assertThat(container.at("/volumeMounts/0/mountPath").asText()).as("the config's mount").isEqualTo("/etc/lockstep");
        assertRunsAsValidate(command, etc);

        List<String> docker = Files.readAllLines(home.resolve("Dockerfile"));
        assertThat(docker).contains("COPY --chown=root:root . /opt/lockstep")
                .contains("ENTRYPOINT [\"/opt/lockstep/bin/lockstep\"]")
                .contains("CMD [\"run\", \"--config\", \"/etc/lockstep/jobs.yaml\"]");

        Path systemdAnalyze = Stream.of("/usr/bin/systemd-analyze", "/bin/systemd-analyze").map(Path::of).filter(Files::isExecutable)
                .findFirst().orElse(null);
        Assumptions.assumeTrue(systemdAnalyze != null,
                "systemd-analyze is not installed (Debian package systemd): the unit's paths were checked, `systemd-analyze verify` was not");
        Path local = dir.resolve("lockstep-worker.service");
        Files.writeString(local, unit.replace("/opt/lockstep/", home + "/"));
        Process verify = new ProcessBuilder(systemdAnalyze.toString(), "verify", local.toString()).redirectErrorStream(true).start();
        String said = new String(verify.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(verify.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(verify.exitValue()).as("systemd-analyze verify: %s", said).isZero();
    }

    /** {@code command} with the distribution for /opt/lockstep, {@code etc} for /etc/lockstep and validate for run. */
    private static void assertRunsAsValidate(List<String> command, Path etc) throws Exception {
        List<String> mapped = command.stream().map(w -> w.replace("/opt/lockstep/", home + "/").replace("/etc/lockstep/", etc + "/"))
                .map(w -> w.equals("run") ? "validate" : w).toList();
        assertThat(Path.of(mapped.get(0))).as("%s in the distribution", command.get(0)).isExecutable();
        ProcessBuilder builder = new ProcessBuilder(mapped).redirectErrorStream(true);
        builder.environment().put("LOCKSTEP_JOBS", home.resolve("examples").toString());
        Process p = builder.start();
        String said = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as("%s: %s", mapped, said).isZero();
        assertThat(said).contains("valid, 4 jobs");
    }

    /**
     * The distribution's own examples run as the README says (LOCKSTEP_JOBS=examples, the example
     * config): each job that fires within the test succeeds, the fenced stock example too (its
     * Jackson comes from examples/, not from Lockstep's lib/).
     */
    @Test
    @Order(5)
    void theExampleJobsRunFromTheDistribution() throws Exception {
        Path yaml = dir.resolve("examples.yaml");
        Files.writeString(yaml, Files.readString(home.resolve("config/jobs.yaml"))
                .replace("params: { redis: \"${REDIS_URI:-redis://127.0.0.1:6379}\", sku: sku-42, quantity: 1 }\n    enabled: false",
                        "params: { redis: \"${REDIS_URI:-redis://127.0.0.1:6379}\", sku: sku-42, quantity: 1 }"));
        assertThat(Files.readString(yaml)).as("reserve-stock enabled for the test").doesNotContain("quantity: 1 }\n    enabled: false");
        ProcessBuilder builder = new ProcessBuilder(home.resolve("bin/lockstep").toString(), "run", "--config", yaml.toString(),
                "--worker-id", "ex").redirectOutput(dir.resolve("ex.out").toFile()).redirectError(dir.resolve("ex.err").toFile());
        builder.environment().put("LOCKSTEP_JOBS", home.resolve("examples").toString());
        builder.environment().put("REDIS_URI", redis.uri());
        Process worker = builder.start();
        try {
            await().atMost(Duration.ofSeconds(40)).pollInterval(Duration.ofMillis(200)).until(() -> {
                String events = Files.readString(dir.resolve("ex.out"));
                return events.contains("\"event\":\"job_succeeded\",\"worker\":\"ex\",\"job\":\"heartbeat\"")
                        && events.contains("\"event\":\"job_succeeded\",\"worker\":\"ex\",\"job\":\"reserve-stock\"")
                        || !worker.isAlive();
            });
            worker.destroy();
            assertThat(worker.waitFor(60, TimeUnit.SECONDS)).isTrue();
        } finally {
            worker.destroyForcibly();
        }
        String events = Files.readString(dir.resolve("ex.out"));
        assertThat(worker.exitValue()).as("stderr: %s", Files.readString(dir.resolve("ex.err"))).isZero();
        assertThat(events).as("both jobs succeeded on the worker")
                .contains("\"event\":\"job_succeeded\",\"worker\":\"ex\",\"job\":\"heartbeat\"")
                .contains("\"event\":\"job_succeeded\",\"worker\":\"ex\",\"job\":\"reserve-stock\"")
                .doesNotContain("\"event\":\"job_failed\"");
    }

    /** Whether a run on {@code worker} is waiting for the test's release file. */
    private static boolean held(String worker) throws IOException {
        return ledger(worker).stream().anyMatch(l -> l.startsWith("held "));
    }

    /** Runs that started on {@code worker} and have not ended yet. */
    private static long runningOn(String worker) throws IOException {
        List<String> ledger = ledger(worker);
        return ledger.stream().filter(l -> l.startsWith("start ")).count() - ledger.stream().filter(l -> l.startsWith("end ")).count();
    }

    private static long finishedRuns() throws IOException {
        return ledger("w1").stream().filter(l -> l.startsWith("end ")).count() + ledger("w2").stream().filter(l -> l.startsWith("end ")).count();
    }

    private static List<String> ledger(String worker) throws IOException {
        Path file = ledgers.resolve(worker + ".txt");
        return Files.exists(file) ? Files.readAllLines(file) : List.of();
    }

    /**
     * The application's jobs JAR, compiled against the distribution's {@code lib/} and the clashing
     * Jackson: a factory that opens a ledger file once and closes it at stop, and a job that needs
     * it, takes 1.5 s, and writes which Jackson it serialized with.
     */
    private static void buildJobsJar(Path jar, List<Path> jackson) throws IOException {
        Path src = Files.createDirectories(dir.resolve("acme-src/acme"));
        Path classes = Files.createDirectories(dir.resolve("acme-classes"));
        Files.writeString(src.resolve("AcmeFactory.java"), """
                package acme;

                import io.lockstep.scheduler.Job;
                import io.lockstep.scheduler.JobDefinition;
                import io.lockstep.scheduler.JobFactory;
                import java.io.IOException;
                import java.io.UncheckedIOException;
                import java.nio.file.Files;
                import java.nio.file.Path;
                import java.nio.file.StandardOpenOption;

                public final class AcmeFactory implements JobFactory, AutoCloseable {
                    private final Path ledger = Path.of(System.getProperty("acme.ledgers"), System.getProperty("acme.worker") + ".txt");

                    public AcmeFactory() { write("open"); }

                    @Override public Job create(JobDefinition definition) { return new ClashJob(this); }

                    @Override public void close() { write("close"); }

                    synchronized void write(String line) {
                        try {
                            Files.writeString(ledger, line + "\\n", StandardOpenOption.CREATE, StandardOpenOption.APPEND);
                        } catch (IOException e) {
                            throw new UncheckedIOException(e);
                        }
                    }
                }
                """);
        Files.writeString(src.resolve("ClashJob.java"), """
                package acme;

                import com.fasterxml.jackson.databind.ObjectMapper;
                import com.fasterxml.jackson.databind.cfg.PackageVersion;
                import io.lockstep.scheduler.Job;
                import io.lockstep.scheduler.JobContext;
                import java.nio.file.Files;
                import java.nio.file.Path;
                import java.util.Map;

                public final class ClashJob implements Job {
                    private static final java.util.concurrent.atomic.AtomicBoolean HELD = new java.util.concurrent.atomic.AtomicBoolean();
                    private final AcmeFactory ledger;

                    ClashJob(AcmeFactory ledger) { this.ledger = ledger; }

                    @Override
                    public void execute(JobContext context) throws Exception {
                        String run = context.jobName() + "@" + context.scheduledTime();
                        ledger.write("start " + run);
                        try {
                            Path ledgers = Path.of(System.getProperty("acme.ledgers"));
                            // the test holds one run per worker across the SIGTERM; the others run as usual
                            if (Files.exists(ledgers.resolve("hold")) && HELD.compareAndSet(false, true)) {
                                ledger.write("held " + run);
                                while (!Files.exists(ledgers.resolve("release"))) {
                                    Thread.sleep(20);
                                }
                            } else {
                                Thread.sleep(1500);
                            }
                        } finally {
                            String json = new ObjectMapper().writeValueAsString(Map.of("slot", context.scheduledTime().toString()));
                            ledger.write("end " + run + " jackson=" + PackageVersion.VERSION + " loader="
                                    + ObjectMapper.class.getClassLoader().getName() + " json=" + json);
                        }
                    }
                }
                """);
        // As a jobs project's POM has it: Lockstep's scheduler-core (provided), and its own Jackson.
        List<Path> classPath = new ArrayList<>(jackson);
        try (Stream<Path> lib = Files.list(home.resolve("lib"))) {
            classPath.addAll(lib.filter(p -> p.getFileName().toString().startsWith("scheduler-core-")).toList());
        }
        String cp = String.join(java.io.File.pathSeparator, classPath.stream().map(Path::toString).toList());
        int exit = ToolProvider.getSystemJavaCompiler().run(null, null, null, "-d", classes.toString(), "-cp", cp,
                src.resolve("AcmeFactory.java").toString(), src.resolve("ClashJob.java").toString());
        assertThat(exit).as("javac of the jobs JAR").isZero();
        try (OutputStream out = Files.newOutputStream(jar); JarOutputStream jarOut = new JarOutputStream(out);
                Stream<Path> files = Files.walk(classes)) {
            for (Path c : files.filter(Files::isRegularFile).toList()) {
                jarOut.putNextEntry(new JarEntry(classes.relativize(c).toString().replace('\\', '/')));
                jarOut.write(Files.readAllBytes(c));
            }
            jarOut.putNextEntry(new JarEntry("META-INF/services/io.lockstep.scheduler.JobFactory"));
            jarOut.write("acme.AcmeFactory\n".getBytes(StandardCharsets.UTF_8));
        }
    }

    private record Result(int exit, String out, String err) {}

    /** {@code bin/lockstep ARGS} in the unpacked distribution, to its exit. */
    private static Result lockstep(List<String> args) throws Exception {
        List<String> command = new ArrayList<>(List.of(home.resolve("bin/lockstep").toString()));
        command.addAll(args);
        String name = "cmd-" + System.nanoTime();
        Process p = new ProcessBuilder(command).redirectOutput(dir.resolve(name + ".out").toFile())
                .redirectError(dir.resolve(name + ".err").toFile()).start();
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("bin/lockstep %s ends", args).isTrue();
        return new Result(p.exitValue(), Files.readString(dir.resolve(name + ".out")), Files.readString(dir.resolve(name + ".err")));
    }
}
