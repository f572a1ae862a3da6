package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.lockstep.redis.LocalRedisServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import io.lockstep.scheduler.SlotCoverage;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import redis.clients.jedis.RedisClient;
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

    /**
     * The config names a real, reachable Redis: the worker must refuse the config before it connects.
     * One connection of the test's own, opened before, reads the server's counters before and after:
     * no connection was accepted meanwhile and no command but the test's own {@code INFO} ran.
     */
    @Test
    void aBadConfigExitsTwoBeforeTouchingRedis() throws IOException {
        try (LocalRedisServer redis = LocalRedisServer.start();
             RedisClient observer = RedisClient.create(redis.host(), redis.port())) {
            Path file = dir.resolve("bad.yaml");
            Files.writeString(file, "redis:\n  uri: " + redis.uri() + "\n  timeout: 500ms\n"
                    + "jobs:\n  - name: a\n    cron: \"@daily\"\n    class: io.lockstep.examples.Missing\n");
            long connectionsBefore = connectionsReceived(observer);
            Map<String, Long> before = commandCalls(observer);
            WorkerProcess w = WorkerProcess.command(dir, "bad", "run", "--config", file.toString());
            int exit = w.waitForExit();
            assertThat(connectionsReceived(observer)).as("connections the server accepted while the worker ran")
                    .isEqualTo(connectionsBefore);
            Map<String, Long> after = commandCalls(observer);
            before.remove("info");
            after.remove("info");
            assertThat(after).as("commands the server ran while the worker ran (besides the test's INFO)").isEqualTo(before);
            assertThat(exit).isEqualTo(2);
            assertThat(w.stderr()).contains(file + ":7: jobs[0].class: class io.lockstep.examples.Missing not found")
                    .doesNotContain("Exception");
        }
    }

    private static long connectionsReceived(RedisClient client) {
        return client.info("stats").lines().filter(l -> l.startsWith("total_connections_received:"))
                .mapToLong(l -> Long.parseLong(l.substring(l.indexOf(':') + 1).trim())).findFirst().orElseThrow();
    }

    /** Calls per command name, from {@code INFO commandstats} over the given connection. */
    private static Map<String, Long> commandCalls(RedisClient client) {
        Map<String, Long> calls = new HashMap<>();
        for (String line : client.info("commandstats").split("\r?\n")) {
            if (line.startsWith("cmdstat_")) {
                String rest = line.substring(line.indexOf("calls=") + "calls=".length());
                calls.put(line.substring("cmdstat_".length(), line.indexOf(':')), Long.parseLong(rest.substring(0, rest.indexOf(','))));
            }
        }
        return calls;
    }

    /**
     * The demo grades itself in its table; the test counts for itself from the demo's JSON events:
     * every job@slot started exactly once, and every slot of each job between the last worker's start
     * and the first one's stop (less a second) started or was reported.
     */
    @Test
    void theDemoRunsACleanClusterOnItsOwnRedis() {
        WorkerProcess w = WorkerProcess.command(dir, "demo", "demo", "--workers", "3", "--duration", "6s");
        int exit = w.waitForExit();
        String out;
        try {
            out = Files.readString(dir.resolve("demo.out.jsonl"));
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        Map<String, Long> starts = w.events("job_started").stream().collect(Collectors.groupingBy(WorkerProcess::key, Collectors.counting()));
        assertThat(starts).as("job@slot -> starts, from the demo's own events").isNotEmpty()
                .allSatisfy((slot, n) -> assertThat(n).as(slot).isEqualTo(1));
        Set<String> jobs = w.events("job_started").stream().map(e -> e.path("job").asText()).collect(Collectors.toCollection(TreeSet::new));
        assertThat(jobs).as("every job of the demo's table ran").allSatisfy(job -> assertThat(out).contains(job + " "));
        Set<String> handled = new HashSet<>(starts.keySet());
        for (String reported : List.of("slot_missed", "slot_skipped")) {
            w.events(reported).forEach(e -> handled.add(WorkerProcess.key(e)));
        }
        Instant from = w.events("worker_started").stream().map(WorkerProcess::ts).max(Instant::compareTo).orElseThrow()
                .truncatedTo(ChronoUnit.SECONDS).plusSeconds(1);
        Instant to = w.events("worker_stopping").stream().map(WorkerProcess::ts).min(Instant::compareTo).orElseThrow()
                .minusSeconds(1).truncatedTo(ChronoUnit.SECONDS);
        assertThat(Duration.between(from, to)).as("the window the demo ran all its workers").isGreaterThanOrEqualTo(Duration.ofSeconds(3));
        assertThat(SlotCoverage.silent(handled, jobs, from, to, Duration.ofSeconds(1))).as("slots in [%s, %s) neither started nor reported", from, to)
                .isEmpty();
        // And its own verdict agrees: exit 0 and a clean table.
        assertThat(exit).isZero();
        assertThat(out).as("the table counts every slot that ran, as many as its job_started events")
                .contains("duplicates misses").contains("total: " + starts.size() + " slots, 0 duplicates, 0 misses");
        System.out.printf("%nStartupFailureIT demo: %d jobs, %d starts, each slot once; window %s to %s covered%n",
                jobs.size(), starts.size(), from, to);
    }
}
