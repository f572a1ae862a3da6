package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.lockstep.redis.LocalRedisServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A worker that cannot start properly starts nothing: one line on stderr and a non-zero exit. */
class StartupFailureIT {

    @TempDir
    Path dir;

    private Path config(String uri) throws IOException {
        Path file = dir.resolve("jobs.yaml");
        Files.writeString(file, "redis:\n  uri: " + uri + "\n  timeout: 500ms\njobs:\n"
                + "  - name: a\n    cron: \"* * * * * *\"\n    class: io.lockstep.examples.HeartbeatJob\n");
        return file;
    }

    @Test
    void aRedisThatIsDownExitsOneWithTheHostAndStartsNothing() throws IOException {
        int port;
        try (LocalRedisServer gone = LocalRedisServer.start()) {
            port = gone.port();
        }
        WorkerProcess w = WorkerProcess.command(dir, "down", "run", "--config", config("redis://127.0.0.1:" + port).toString());
        assertThat(w.waitForExit()).isEqualTo(1);
        assertThat(w.stderr().lines()).singleElement().asString()
                .startsWith("error: redis 127.0.0.1:" + port + ": ping: cannot reach the server");
        assertThat(w.events("worker_started")).isEmpty();
        assertThat(w.events("job_started")).isEmpty();
    }

    @Test
    void aRefusedPasswordExitsOneWithoutShowingIt() throws IOException {
        try (LocalRedisServer redis = LocalRedisServer.start("--requirepass", "the-right-one")) {
            WorkerProcess w = WorkerProcess.command(dir, "auth", "run", "--config",
                    config("redis://:not-the-password@127.0.0.1:" + redis.port()).toString());
            assertThat(w.waitForExit()).isEqualTo(1);
            assertThat(w.stderr().lines()).singleElement().asString().contains("authentication failed")
                    .doesNotContain("not-the-password");
            assertThat(w.events("worker_started")).isEmpty();
        }
    }

    @Test
    void aBadConfigExitsTwoBeforeTouchingRedis() throws IOException {
        Path file = dir.resolve("bad.yaml");
        Files.writeString(file, "jobs:\n  - name: a\n    cron: \"@daily\"\n    class: io.lockstep.examples.Missing\n");
        WorkerProcess w = WorkerProcess.command(dir, "bad", "run", "--config", file.toString());
        assertThat(w.waitForExit()).isEqualTo(2);
        assertThat(w.stderr()).contains(file + ":4: jobs[0].class: class io.lockstep.examples.Missing not found")
                .doesNotContain("Exception");
    }

    @Test
    void theDemoRunsACleanClusterOnItsOwnRedis() {
        WorkerProcess w = WorkerProcess.command(dir, "demo", "demo", "--workers", "3", "--duration", "6s");
        assertThat(w.waitForExit()).isZero();
        String out;
        try {
            out = Files.readString(dir.resolve("demo.out.jsonl"));
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        assertThat(out).contains("duplicates misses").containsPattern("total: \\d+ slots, 0 duplicates, 0 misses");
    }
}
