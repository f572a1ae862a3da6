package io.lockstep.examples.cli;

import io.lockstep.worker.WorkerMain;
import static org.assertj.core.api.Assertions.assertThat;

import io.lockstep.redis.LocalRedisServer;
import io.lockstep.scheduler.Job;
import io.lockstep.scheduler.JobContext;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The operator commands on an operator's machine: the YAML names job classes that are not on the
 * class path, or whose constructors open what the application needs; {@code status},
 * {@code history}, {@code pause}, {@code resume} and {@code trigger} still work against a real
 * redis-server, and load no job class; {@code validate} still checks them.
 */
class OperatorCommandsTest {

    /** A job whose constructor counts its calls, as one that opens a connection pool would connect. */
    public static final class Connecting implements Job {
        static final AtomicInteger CONSTRUCTED = new AtomicInteger();

        public Connecting() {
            CONSTRUCTED.incrementAndGet();
        }

        @Override
        public void execute(JobContext context) {}
    }

    private static LocalRedisServer redis;

    @TempDir
    Path dir;

    @BeforeAll
    static void startRedis() {
        redis = LocalRedisServer.start();
    }

    @AfterAll
    static void stopRedis() {
        redis.close();
    }

    private Path config() throws IOException {
        Path file = dir.resolve("jobs.yaml");
        Files.writeString(file, "redis:\n  uri: " + redis.uri() + "\njobs:\n"
                + "  - name: report\n    cron: \"0 0 6 * * *\"\n    class: com.acme.jobs.ReportJob\n"
                + "  - name: sync\n    cron: \"0 */5 * * * *\"\n    class: " + Connecting.class.getName() + "\n");
        return file;
    }

    @Test
    void statusHistoryPauseResumeAndTriggerNeedNeitherTheJobClassesNorTheirConstructors() throws IOException {
        String file = config().toString();
        int constructedBefore = Connecting.CONSTRUCTED.get();
        for (List<String> command : List.of(
                List.of("status", "--config", file),
                List.of("history", "--config", file, "--job", "report"),
                List.of("pause", "--config", file, "--job", "report", "--note", "maintenance"),
                List.of("resume", "--config", file, "--job", "report"),
                List.of("trigger", "--config", file, "--job", "sync"))) {
            CliRun result = CliRun.of(command.toArray(String[]::new));
            assertThat(result.exit()).as("%s: %s%s", command, result.out(), result.err()).isZero();
            assertThat(result.err()).as("%s", command).doesNotContain("not found").doesNotContain("ReportJob");
        }
        assertThat(Connecting.CONSTRUCTED.get()).as("job constructors run by the operator commands").isEqualTo(constructedBefore);
    }

    @Test
    void validateStillChecksTheJobClasses() throws IOException {
        CliRun result = CliRun.of("validate", "--config", config().toString());
        assertThat(result.exit()).isEqualTo(WorkerMain.BAD_INPUT);
        assertThat(result.err()).contains("jobs[0].class").contains("com.acme.jobs.ReportJob").contains("not found on the class path");
    }
}
