package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.lockstep.examples.StockReservation;
import io.lockstep.redis.LocalRedisServer;
import io.lockstep.redis.RedisLocks;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.RedisClient;

/**
 * The stock example across processes: a worker SIGSTOPped between reading and writing the stock,
 * past its lease, is told its lease is lost when it resumes and has its late write refused by the
 * fence; and reservers in several JVMs never oversell. Both checked from the store.
 */
class FencedStockIT {

    private static final int STOCK = 1_000;

    @TempDir
    Path dir;

    @Test
    void aHolderStoppedPastItsLeaseIsToldAndItsLateWriteIsRefused() throws Exception {
        String yaml = """
                defaults:
                  lease: 2s
                  misfireGrace: 2s
                jobs:
                  - name: reserve
                    cron: "* * * * * *"
                    class: io.lockstep.examples.StockReservationJob
                    params: { redis: "%s", sku: it-sku, quantity: 1, pauseBeforeWrite: 1500ms }
                """;
        try (Cluster cluster = new Cluster(dir, "");
             RedisClient jedis = RedisClient.create(cluster.redis.host(), cluster.redis.port());
             RedisLocks locks = RedisLocks.on(jedis)) {
            Files.writeString(cluster.config, Files.readString(cluster.config) + String.format(yaml, cluster.redis.uri()));
            StockReservation stock = new StockReservation(jedis, locks, "it-sku");
            stock.restock(STOCK);
            WorkerProcess w1 = cluster.start("w1");
            WorkerProcess w2 = cluster.start("w2");
            cluster.awaitStarted();

            // Stop a worker in its pause between reading the stock and writing it.
            await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(10))
                    .until(() -> reserving(w1).isPresent() || reserving(w2).isPresent());
            WorkerProcess stopped = reserving(w1).isPresent() ? w1 : w2;
            WorkerProcess peer = stopped == w1 ? w2 : w1;
            JsonNode paused = reserving(stopped).orElseThrow();
            stopped.signal("STOP");
            Instant stoppedAt = Instant.now();
            long pausedToken = paused.path("fencing_token").asLong();

            // Meanwhile the peer takes over the job (after the lease ran out) and reserves under higher tokens.
            await().atMost(Duration.ofSeconds(20)).until(() -> peer.events("stock_reserved").stream()
                    .anyMatch(e -> e.path("fencing_token").asLong() > pausedToken)
                    && Instant.now().isAfter(stoppedAt.plusSeconds(4)));
            stopped.signal("CONT");

            String order = paused.path("order").asText();
            await().atMost(Duration.ofSeconds(10)).until(() -> stopped.events("stock_stale").stream()
                    .anyMatch(e -> order.equals(e.path("order").asText())));
            await().atMost(Duration.ofSeconds(5)).until(() -> stopped.events("lease_lost").stream()
                    .anyMatch(e -> paused.path("slot").asText().equals(e.path("slot").asText())));
            assertThat(stopped.terminate()).isZero();
            assertThat(peer.terminate()).isZero();

            // From the store: the stale order is not there, and nothing was sold twice or lost.
            StockReservation.Stock state = stock.stock();
            assertThat(state.reservations()).doesNotContainKey(order);
            assertThat(state.total()).isEqualTo(STOCK);
            assertThat(stock.fence()).isGreaterThan(pausedToken);
            long reservedInLogs = cluster.events("stock_reserved").size();
            assertThat(state.reservations()).hasSize((int) reservedInLogs);
            assertThat(stopped.events("job_failed").stream().filter(e -> paused.path("slot").asText().equals(e.path("slot").asText())))
                    .singleElement().satisfies(e -> assertThat(e.path("reason").asText()).isEqualTo("lease lost"));
            cluster.assertAuditHolds();
        }
    }

    @Test
    void reserversInThreeJvmsNeverOversell() throws Exception {
        try (LocalRedisServer redis = LocalRedisServer.start();
             RedisClient jedis = RedisClient.create(redis.host(), redis.port());
             RedisLocks locks = RedisLocks.on(jedis)) {
            StockReservation stock = new StockReservation(jedis, locks, "multi-sku");
            stock.restock(300);
            List<Process> reservers = new ArrayList<>();
            List<Path> outputs = new ArrayList<>();
            for (int p = 0; p < 3; p++) {
                Path out = dir.resolve("reserver-" + p + ".out");
                outputs.add(out);
                reservers.add(new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                        "-XX:TieredStopAtLevel=1", "-cp", WorkerProcess.jar().toString(), StockReservation.class.getName(),
                        redis.uri(), "multi-sku", "4", "p" + p)
                        .redirectOutput(out.toFile()).redirectError(dir.resolve("reserver-" + p + ".err").toFile()).start());
            }
            int reported = 0;
            for (int p = 0; p < 3; p++) {
                assertThat(reservers.get(p).waitFor(120, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
                assertThat(reservers.get(p).exitValue()).isZero();
                String line = read(outputs.get(p)).lines().filter(l -> l.startsWith("reserved ")).findFirst().orElseThrow();
                reported += Integer.parseInt(line.substring("reserved ".length()));
            }
            StockReservation.Stock state = stock.stock();
            assertThat(state.available()).isZero();
            assertThat(state.reservations()).hasSize(300);
            assertThat(state.total()).isEqualTo(300);
            assertThat(reported).isEqualTo(300);
        }
    }

    /** The latest stock_reserving event of the worker with no outcome yet: it is in its pause. */
    private static Optional<JsonNode> reserving(WorkerProcess w) {
        List<JsonNode> events = w.events();
        Optional<JsonNode> last = Optional.empty();
        for (JsonNode e : events) {
            String name = e.path("event").asText();
            if (name.equals("stock_reserving")) {
                last = Optional.of(e);
            } else if (name.startsWith("stock_") || name.equals("job_failed")) {
                last = Optional.empty();
            }
        }
        return last.filter(e -> WorkerProcess.ts(e).isAfter(Instant.now().minusMillis(800)));
    }

    private static String read(Path p) {
        try {
            return Files.readString(p);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
