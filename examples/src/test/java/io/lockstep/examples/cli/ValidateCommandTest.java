package io.lockstep.examples.cli;

import io.lockstep.worker.WorkerMain;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** {@code validate} on broken files: exit 2, one line per problem with file:line and path, no stack trace. */
class ValidateCommandTest {

    @TempDir
    Path dir;

    private static final String VALID_JOB = """
            jobs:
              - name: ok
                cron: "* * * * * *"
                class: io.lockstep.examples.HeartbeatJob
            """;

    record Result(int exit, String out, String err) {}

    private Result validate(String yaml) throws IOException {
        Path file = dir.resolve("jobs.yaml");
        Files.writeString(file, yaml);
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int exit = WorkerMain.execute(new PrintWriter(out, true), new PrintWriter(err, true), "validate", "--config", file.toString());
        return new Result(exit, out.toString(), err.toString());
    }

    static Stream<Arguments> brokenConfigs() {
        return Stream.of(
                Arguments.of("bad YAML", "jobs:\n  - name: a\n   cron: [\n", 3, "", "invalid YAML"),
                Arguments.of("unknown key", "workers:\n  threads: 2\n" + VALID_JOB, 1, "workers", "unknown key \"workers\""),
                Arguments.of("bad cron", "jobs:\n  - name: a\n    cron: \"99 * * * *\"\n    class: io.lockstep.examples.HeartbeatJob\n",
                        3, "jobs[0].cron", "invalid cron expression"),
                Arguments.of("unknown zone", "jobs:\n  - name: a\n    cron: \"@daily\"\n    zone: Mars/Olympus\n    class: io.lockstep.examples.HeartbeatJob\n",
                        4, "jobs[0].zone", "unknown time zone \"Mars/Olympus\""),
                Arguments.of("duplicate name", VALID_JOB + "  - name: ok\n    cron: \"@daily\"\n    class: io.lockstep.examples.HeartbeatJob\n",
                        5, "jobs[1].name", "duplicate job name \"ok\""),
                Arguments.of("missing class", "jobs:\n  - name: a\n    cron: \"@daily\"\n    class: io.lockstep.examples.NoSuchJob\n",
                        4, "jobs[0].class", "not found on the class path"),
                Arguments.of("class not a Job", "jobs:\n  - name: a\n    cron: \"@daily\"\n    class: java.lang.String\n",
                        4, "jobs[0].class", "does not implement io.lockstep.scheduler.Job"),
                Arguments.of("bad duration", "defaults:\n  misfireGrace: ten seconds\n" + VALID_JOB, 2, "defaults.misfireGrace",
                        "must be a duration like 250ms"),
                Arguments.of("lease under 1s", "defaults:\n  lease: 500ms\n" + VALID_JOB, 2, "defaults.lease", "must be at least 1s, but was 500ms"),
                Arguments.of("unset variable", "redis:\n  uri: ${LOCKSTEP_TEST_SURELY_UNSET}\n" + VALID_JOB, 2, "redis.uri",
                        "environment variable LOCKSTEP_TEST_SURELY_UNSET is not set"),
                Arguments.of("empty jobs list", "jobs: []\n", 1, "jobs", "is empty"),
                Arguments.of("wrong type", "worker:\n  threads: many\n" + VALID_JOB, 2, "worker.threads", "must be a whole number, but was \"many\""),
                Arguments.of("jobs not a list", "jobs:\n  name: a\n", 2, "jobs", "must be a list of jobs"),
                Arguments.of("bad overlap", "defaults:\n  overlap: queue\n" + VALID_JOB, 2, "defaults.overlap", "must be skip, allow or replace"),
                Arguments.of("bad job name", "jobs:\n  - name: Daily Report\n    cron: \"@daily\"\n    class: io.lockstep.examples.HeartbeatJob\n",
                        2, "jobs[0].name", "must match"),
                Arguments.of("missing cron", "jobs:\n  - name: a\n    class: io.lockstep.examples.HeartbeatJob\n", 2, "jobs[0].cron", "is required"),
                Arguments.of("bad redis uri", "redis:\n  uri: http://localhost\n" + VALID_JOB, 2, "redis.uri", "must start with redis://"),
                Arguments.of("cron that never fires", "jobs:\n  - name: a\n    cron: \"0 0 30 2 *\"\n    class: io.lockstep.examples.HeartbeatJob\n",
                        3, "jobs[0].cron", "never fires"),
                Arguments.of("jitter longer than the period", VALID_JOB + "    jitter: 5s\n", 5, "jobs[0].jitter",
                        "a jitter of 5s is longer than the schedule's period of 1s"),
                Arguments.of("malformed H", "jobs:\n  - name: a\n    cron: [\"@daily\", \"H(1-99) * * * *\"]\n    class: io.lockstep.examples.HeartbeatJob\n",
                        3, "jobs[0].cron", "must be a range within 0-59"),
                Arguments.of("empty cron list", "jobs:\n  - name: a\n    cron: []\n    class: io.lockstep.examples.HeartbeatJob\n",
                        3, "jobs[0].cron", "is an empty list"),
                Arguments.of("lease too short for the redis timeout", "redis:\n  timeout: 1s\n" + VALID_JOB + "    lease: 1s\n",
                        7, "jobs[0].lease", "must be at least twice redis.timeout (1s)"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("brokenConfigs")
    void aBrokenConfigExitsTwoWithOneLineNamingFileLineAndPath(String what, String yaml, int line, String path, String message)
            throws IOException {
        Result r = validate(yaml);
        assertThat(r.exit()).isEqualTo(2);
        List<String> lines = r.err().lines().toList();
        assertThat(lines).hasSize(2); // the problem, then the count
        String expectedStart = dir.resolve("jobs.yaml") + ":" + line + ": " + (path.isEmpty() ? "" : path + ": ");
        assertThat(lines.get(0)).startsWith(expectedStart).contains(message);
        assertThat(lines.get(1)).isEqualTo("1 problem in " + dir.resolve("jobs.yaml"));
        assertThat(r.err()).doesNotContain("Exception").doesNotContain("\tat ");
        assertThat(r.out()).isEmpty();
    }

    @Test
    void everyProblemOfOneFileIsListed() throws IOException {
        Result r = validate("""
                worker:
                  threads: 0
                jobs:
                  - name: a
                    cron: "nope"
                    class: io.lockstep.examples.NoSuchJob
                    lease: 1x
                """);
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err().lines()).hasSize(5).last().isEqualTo("4 problems in " + dir.resolve("jobs.yaml"));
    }

    @Test
    void nextPrintsTheFiresOfEveryCronOfAJobWithItsHAndJitterResolved() throws IOException {
        Path file = dir.resolve("jobs.yaml");
        Files.writeString(file, """
                jobs:
                  - name: report
                    cron: ["0 0 9 * * MON-FRI", "0 0 12 * * SAT"]
                    class: io.lockstep.examples.HeartbeatJob
                  - name: nightly
                    cron: "H 2 * * *"
                    jitter: 1m
                    class: io.lockstep.examples.HeartbeatJob
                """);
        StringWriter out = new StringWriter();
        int exit = WorkerMain.execute(new PrintWriter(out, true), new PrintWriter(new StringWriter()), "validate", "--config", file.toString(),
                "--next", "6");
        assertThat(exit).isZero();
        String report = out.toString().lines().filter(l -> l.contains("report")).findFirst().orElseThrow();
        List<String> fires = List.of(report.substring(report.indexOf("next ") + 5).split(", "));
        assertThat(fires).hasSize(6).allSatisfy(f -> assertThat(f).matches(".*T(09|12):00Z"));
        var nightly = io.lockstep.scheduler.cron.CronSchedule.of(List.of("H 2 * * *"), java.time.ZoneOffset.UTC, "nightly")
                .withJitter(java.time.Duration.ofMinutes(1), "nightly");
        assertThat(out.toString()).contains("H 2 * * * = " + nightly.expanded().get(0) + " UTC +"
                + nightly.offset().toSeconds() + "s (jitter 1m)");
        assertThat(WorkerMain.execute(new PrintWriter(new StringWriter()), new PrintWriter(new StringWriter()), "validate", "--config",
                file.toString(), "--next", "0")).isEqualTo(2);
    }

    @Test
    void aMissingFileIsOneLine() {
        StringWriter err = new StringWriter();
        int exit = WorkerMain.execute(new PrintWriter(new StringWriter()), new PrintWriter(err, true),
                "validate", "--config", dir.resolve("absent.yaml").toString());
        assertThat(exit).isEqualTo(2);
        assertThat(err.toString().lines().findFirst()).hasValueSatisfying(l -> assertThat(l).endsWith("absent.yaml: file not found"));
    }

    @Test
    void theShippedExampleConfigIsValidAndPrintsNextFireTimes() {
        StringWriter out = new StringWriter();
        Path config = Path.of(System.getProperty("lockstep.configDir", "../config"), "jobs.yaml");
        int exit = WorkerMain.execute(new PrintWriter(out, true), new PrintWriter(new StringWriter()), "validate", "--config", config.toString());
        assertThat(exit).isZero();
        assertThat(out.toString()).contains("valid, 4 jobs").contains("daily-report").contains("reserve-stock").contains("next ").contains("(disabled)");
    }

    @Test
    void theShippedRedlockConfigIsValid() {
        StringWriter out = new StringWriter();
        Path config = Path.of(System.getProperty("lockstep.configDir", "../config"), "jobs-redlock.yaml");
        int exit = WorkerMain.execute(new PrintWriter(out, true), new PrintWriter(new StringWriter()), "validate", "--config", config.toString());
        assertThat(exit).isZero();
        assertThat(out.toString()).contains("valid, 2 jobs").contains("daily-report").contains("reserve-stock");
    }

    /** Validates {@code yaml} with a class loader that sees these factory registrations (a jobs JAR's). */
    private Result withFactories(List<String> factories, String yaml) throws IOException {
        Path services = dir.resolve("jobs-jar");
        Files.createDirectories(services.resolve("META-INF/services"));
        Files.writeString(services.resolve("META-INF/services/io.lockstep.scheduler.JobFactory"), String.join("\n", factories) + "\n");
        Thread thread = Thread.currentThread();
        ClassLoader before = thread.getContextClassLoader();
        try (java.net.URLClassLoader loader = new java.net.URLClassLoader(new java.net.URL[] {services.toUri().toURL()}, before)) {
            thread.setContextClassLoader(loader);
            return validate(yaml);
        } finally {
            thread.setContextClassLoader(before);
        }
    }

    @Test
    void withTheApplicationsFactoryAJobClassNeedsNoNoArgConstructorButMustStillBeAJob() throws IOException {
        String pooled = "io.lockstep.examples.it.LifecycleFactory$PooledJob";
        Path lifecycle = dir.resolve("lifecycle.log");
        System.setProperty("lifecycle.log", lifecycle.toString()); // where the factory writes what it does
        Result ok;
        try {
            ok = withFactories(List.of("io.lockstep.examples.it.LifecycleFactory"),
                    "jobs:\n  - name: a\n    cron: \"@daily\"\n    class: " + pooled + "\n");
        } finally {
            System.clearProperty("lifecycle.log");
        }
        assertThat(ok.exit()).as(ok.err()).isZero();
        assertThat(ok.out()).contains("valid, 1 job").contains("jobs built by io.lockstep.examples.it.LifecycleFactory");
        // validate built the job through the factory (its params checked as run checks them), and closed both
        assertThat(Files.readAllLines(lifecycle)).containsExactly("open factory", "close job a", "close factory");
        Result notAJob = withFactories(List.of("io.lockstep.examples.it.LifecycleFactory"),
                "jobs:\n  - name: a\n    cron: \"@daily\"\n    class: java.lang.String\n");
        assertThat(notAJob.exit()).isEqualTo(2);
        assertThat(notAJob.err()).contains("jobs[0].class").contains("does not implement io.lockstep.scheduler.Job");
        Result withoutFactory = validate("jobs:\n  - name: a\n    cron: \"@daily\"\n    class: " + pooled + "\n");
        assertThat(withoutFactory.exit()).isEqualTo(2);
        assertThat(withoutFactory.err()).contains("has no public no-arg constructor");
    }

    /**
     * F4 of the 2026-12-04 trial: with an application's factory, validate did not check typed params
     * (it builds no job), so CI passed a config that run then refused (exit 2). It now builds each
     * job through the factory, checks its params as run does, and names the file and line.
     */
    @Test
    void withTheApplicationsFactoryTypedParamsAreCheckedAsRunChecksThemWithTheirLine() throws IOException {
        String typed = "io.lockstep.examples.cli.ValidateCommandTest$TypedJob";
        String factory = "io.lockstep.examples.cli.ValidateCommandTest$TypedFactory";
        Result ok = withFactories(List.of(factory), "jobs:\n  - name: a\n    cron: \"@daily\"\n    class: " + typed
                + "\n    params:\n      batch: 50\n      every: 5m\n");
        assertThat(ok.exit()).as(ok.err()).isZero();
        Result bad = withFactories(List.of(factory), "jobs:\n  - name: a\n    cron: \"@daily\"\n    class: " + typed
                + "\n    params:\n      batch: 50\n      every: soon\n");
        assertThat(bad.exit()).isEqualTo(2);
        assertThat(bad.err().lines().toList()).first().asString().contains("jobs.yaml:7: jobs[0].params.every:")
                .contains("must be a duration");
        assertThat(bad.out()).doesNotContain("valid");
    }

    /** A job whose params have a type. */
    public static final class TypedJob implements io.lockstep.scheduler.Job {
        /** Its params. */
        public record Params(int batch, java.time.Duration every) {}

        @Override
        public Class<?> paramsType() {
            return Params.class;
        }

        @Override
        public void execute(io.lockstep.scheduler.JobContext context) {}
    }

    /** An application's factory that builds {@link TypedJob} (it has no use for a no-arg constructor). */
    public static final class TypedFactory implements io.lockstep.scheduler.JobFactory {
        @Override
        public io.lockstep.scheduler.Job create(io.lockstep.scheduler.JobDefinition definition) {
            return new TypedJob();
        }
    }

    @Test
    void twoFactoriesOnTheClassPathAreOneLineAndExitTwo() throws IOException {
        Result r = withFactories(List.of("io.lockstep.examples.it.LifecycleFactory", "io.lockstep.examples.cli.ValidateCommandTest$OtherFactory"),
                VALID_JOB);
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err().lines()).singleElement().asString().contains("more than one job factory on the class path")
                .contains("LifecycleFactory").contains("OtherFactory").contains("keep one");
    }

    /** A second factory, for the test above. */
    public static final class OtherFactory implements io.lockstep.scheduler.JobFactory {
        @Override
        public io.lockstep.scheduler.Job create(io.lockstep.scheduler.JobDefinition definition) {
            throw new UnsupportedOperationException();
        }
    }

    @Test
    void aUsageMistakeExitsTwo() {
        StringWriter err = new StringWriter();
        assertThat(WorkerMain.execute(new PrintWriter(new StringWriter()), new PrintWriter(err, true), "validate")).isEqualTo(2);
        assertThat(err.toString()).contains("Missing required option: '--config=FILE'");
    }

    @Test
    void aJobWhoseConstructorThrowsIsRefusedByValidateAndRunWithOneLine() throws IOException {
        Path file = dir.resolve("jobs.yaml");
        Files.writeString(file, "jobs:\n  - name: broken\n    cron: \"@daily\"\n    class: " + BrokenJob.class.getName() + "\n");
        for (String command : List.of("validate", "run")) {
            StringWriter err = new StringWriter();
            int exit = WorkerMain.execute(new PrintWriter(new StringWriter()), new PrintWriter(err, true), command, "--config", file.toString());
            assertThat(exit).as(command).isEqualTo(2);
            assertThat(err.toString().lines().toList()).as(command).containsExactly(
                    file + ":4: jobs[0].class: constructor of " + BrokenJob.class.getName()
                            + " failed: java.lang.IllegalStateException: needs a database",
                    "1 problem in " + file);
        }
    }

    /** A job class whose constructor throws. */
    public static final class BrokenJob implements io.lockstep.scheduler.Job {
        public BrokenJob() {
            throw new IllegalStateException("needs a database");
        }

        @Override
        public void execute(io.lockstep.scheduler.JobContext context) {}
    }
}
