package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.RedisClient;

/**
 * Redis itself stalls for longer than a lease, three ways: the process is stopped (SIGSTOP),
 * {@code CLIENT PAUSE ... ALL}, and {@code DEBUG SLEEP}. The holders learn that their leases are
 * gone before Redis could let anyone take them over (while it is stalled nobody can), their jobs
 * stop, and after Redis resumes no slot runs twice and every run recovered has a higher token.
 */
class RedisStallIT {

    private static final int JOBS = 4;

    @TempDir
    Path dir;

    @ParameterizedTest(name = "{0}, {1} worker(s)")
    @org.junit.jupiter.params.provider.CsvSource({"sigstop,1", "sigstop,3", "client-pause,3", "debug-sleep,3"})
    void holdersLearnOfTheirLostLeaseDuringTheStallAndEveryInterruptedRunIsRerunUnderAHigherToken(String stall, int workers)
            throws Exception {
        StringBuilder yaml = new StringBuilder("defaults:\n  lease: 2s\n  misfireGrace: 1s\n  recover: rerun\njobs:\n");
        for (int i = 0; i < JOBS; i++) {
            yaml.append(String.format("  - name: job-%02d%n    cron: \"*/2 * * * * *\"%n    class: io.lockstep.examples.HeartbeatJob%n"
                    + "    params: { workMillis: 6000 }%n", i));
        }
        try (Cluster cluster = cluster(yaml.toString())) {
            for (int i = 0; i < workers; i++) {
                cluster.start(String.valueOf((char) ('a' + i)));
            }
            cluster.awaitStarted();
            await().atMost(Duration.ofSeconds(20)).until(() -> cluster.events("job_started").size() >= JOBS);
            List<JsonNode> inFlight = cluster.events("job_started");

            Prober prober = new Prober(cluster); // connected before the stall: a new connection's handshake would be held too
            Instant stalledAt = Instant.now();
            Thread stalling = stall(cluster, stall);
            prober.start();
            try {
                // While Redis is stalled, every holder's deadline passes: each is told and stops. A stopped
                // Redis stays stopped until every holder was told (at most 4 s, the other stalls' length).
                if (stall.equals("sigstop")) {
                    await().atMost(Duration.ofSeconds(4)).until(() -> inFlight.stream().allMatch(s -> lostLease(cluster, s)));
                }
            } finally {
                resume(cluster, stall, stalling);
            }
            // The instant Redis answered again: the arrival of the first reply the stall held back.
            Instant resumedAt = prober.answeredAt();
            await().atMost(Duration.ofSeconds(10)).until(() -> inFlight.stream().allMatch(s -> lostLease(cluster, s)));
            long earliestMargin = Long.MAX_VALUE;
            for (JsonNode start : inFlight) {
                JsonNode lost = cluster.events("lease_lost").stream().filter(e -> WorkerProcess.same(e, start)).findFirst().orElseThrow();
                assertThat(WorkerProcess.ts(lost)).as("%s told its lease was lost before Redis answered again at %s",
                        WorkerProcess.key(start), resumedAt).isBefore(resumedAt);
                earliestMargin = Math.min(earliestMargin, Duration.between(WorkerProcess.ts(lost), resumedAt).toMillis());
            }
            Instant allLost = resumedAt.minusMillis(earliestMargin);

            // After the stall, work goes on: recover: rerun means rerun. Every run the stall cut off is
            // run again (its lost-lease outcome is handed over, never recorded as a final done that
            // hides it from recovery), with one worker too, and new slots run.
            await().atMost(Duration.ofSeconds(20)).until(() -> inFlight.stream().allMatch(s ->
                    cluster.events("job_started").stream().filter(e -> WorkerProcess.same(e, s)).count() >= 2));
            await().atMost(Duration.ofSeconds(20)).until(() -> cluster.events("job_started").stream()
                    .anyMatch(e -> WorkerProcess.ts(e).isAfter(resumedAt.plusSeconds(2))));
            for (WorkerProcess w : cluster.workers) {
                assertThat(w.terminate()).isZero();
            }
            for (JsonNode start : inFlight) {
                assertThat(cluster.events("slot_recovered").stream().filter(e -> WorkerProcess.same(e, start)))
                        .as("%s rerun", WorkerProcess.key(start)).isNotEmpty();
            }

            for (JsonNode start : inFlight) {
                JsonNode failed = cluster.events("job_failed").stream().filter(e -> WorkerProcess.same(e, start)).findFirst().orElseThrow();
                assertThat(failed.path("reason").asText()).isEqualTo("lease lost");
            }
            // No slot ran twice except through recovery, and each recovery ran under a higher token.
            Map<String, List<JsonNode>> starts = cluster.startEventsBySlot();
            for (Map.Entry<String, List<JsonNode>> slot : starts.entrySet()) {
                long recoveries = cluster.events("slot_recovered").stream()
                        .filter(e -> slot.getKey().equals(WorkerProcess.key(e))).count();
                assertThat(slot.getValue()).as("%s: started once, plus once per recovery", slot.getKey()).hasSize(1 + (int) recoveries);
                List<Long> tokens = slot.getValue().stream().map(e -> e.path("fencing_token").asLong()).sorted().toList();
                assertThat(tokens).as("%s: each run its own higher token", slot.getKey()).doesNotHaveDuplicates();
            }
            System.out.printf("%nRedisStallIT[%s]: every holder told its lease was lost %d ms into the stall; Redis answered again"
                    + " after %d ms (margin %d ms)%n", stall, Duration.between(stalledAt, allLost).toMillis(),
                    Duration.between(stalledAt, resumedAt).toMillis(), earliestMargin);
            cluster.assertAuditHolds();
        }
    }

    /** Redis 7 allows DEBUG only when told to; the embedded 6.2 does not know that option (and allows it). */
    private Cluster cluster(String yaml) {
        try {
            return new Cluster(dir, yaml, "500ms", "--enable-debug-command", "local");
        } catch (IllegalStateException e) {
            return new Cluster(dir, yaml, "500ms");
        }
    }

    /** Stalls Redis for about 4 s (two leases); returns the thread blocked on DEBUG SLEEP, if any. */
    private static Thread stall(Cluster cluster, String how) {
        switch (how) {
            case "sigstop" -> cluster.redis.pause();
            case "client-pause" -> {
                try (RedisClient admin = RedisClient.create(cluster.redis.host(), cluster.redis.port())) {
                    admin.sendCommand(redis.clients.jedis.Protocol.Command.CLIENT, "PAUSE", "4000", "ALL");
                }
            }
            case "debug-sleep" -> {
                Thread t = new Thread(() -> {
                    try (RedisClient admin = RedisClient.builder()
                            .hostAndPort(new redis.clients.jedis.HostAndPort(cluster.redis.host(), cluster.redis.port()))
                            .clientConfig(redis.clients.jedis.DefaultJedisClientConfig.builder().socketTimeoutMillis(10_000).build())
                            .build()) {
                        admin.sendCommand((redis.clients.jedis.commands.ProtocolCommand) () -> "DEBUG".getBytes(java.nio.charset.StandardCharsets.US_ASCII), "SLEEP", "4");
                    }
                }, "debug-sleep");
                t.start();
                return t;
            }
            default -> throw new IllegalArgumentException(how);
        }
        return null;
    }

    /** Ends a stall the test must end itself (SIGSTOP); waits out the others (they end by themselves). */
    private static void resume(Cluster cluster, String how, Thread stalling) throws InterruptedException {
        switch (how) {
            case "sigstop" -> cluster.redis.resume();
            case "client-pause" -> { }
            case "debug-sleep" -> stalling.join(10_000);
            default -> throw new IllegalArgumentException(how);
        }
    }

    /**
     * Pings Redis from the moment a stall began until a reply arrives that the stall held back (a
     * round trip over 1 s; replies sent before a DEBUG SLEEP got in come back at once and do not
     * count): its arrival is when Redis answered again.
     */
    private static final class Prober {

        private final java.util.concurrent.CompletableFuture<Instant> answered = new java.util.concurrent.CompletableFuture<>();

        private final RedisClient client;

        Prober(Cluster cluster) {
            client = RedisClient.builder()
                    .hostAndPort(new redis.clients.jedis.HostAndPort(cluster.redis.host(), cluster.redis.port()))
                    .clientConfig(redis.clients.jedis.DefaultJedisClientConfig.builder().socketTimeoutMillis(15_000).build())
                    .build();
            client.ping();
        }

        void start() {
            Thread t = new Thread(() -> {
                try (client) {
                    while (!answered.isDone()) {
                        long sent = System.nanoTime();
                        client.ping();
                        if (System.nanoTime() - sent > 1_000_000_000L) {
                            answered.complete(Instant.now());
                        }
                    }
                } catch (RuntimeException e) {
                    answered.completeExceptionally(e);
                }
            }, "stall-prober");
            t.setDaemon(true);
            t.start();
        }

        Instant answeredAt() throws Exception {
            return answered.get(20, java.util.concurrent.TimeUnit.SECONDS);
        }
    }

    private static boolean lostLease(Cluster cluster, JsonNode start) {
        return cluster.events("lease_lost").stream().anyMatch(e -> WorkerProcess.same(e, start));
    }
}
