package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.lockstep.redis.ItKeys;
import io.lockstep.redis.RedisAdmin;
import io.lockstep.redis.RedisLockProvider;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.RedisClient;

/**
 * Guarantee 9 on a real worker JVM and a real Redis: SIGTERM in the middle of two runs. The worker
 * stops claiming, lets the run that finishes within {@code shutdownTimeout} finish, interrupts the
 * one that does not at the timeout, writes both outcomes to Redis (slot record and history, read
 * back from Redis, not from the worker's word) and exits 0.
 */
class ShutdownIT {

    private static final Duration SHUTDOWN_TIMEOUT = Duration.ofSeconds(4);

    @TempDir
    Path dir;

    @Test
    void aSigtermedWorkerDrainsItsRunInterruptsTheOneThatOverrunsAndRecordsBothOutcomesInRedis() throws IOException {
        Path drainsGate = dir.resolve("drains.gate");
        Path overrunsGate = dir.resolve("overruns.gate"); // never opened
        String yaml = "defaults:\n  lease: 2s\n  misfireGrace: 2s\njobs:\n"
                + "  - { name: drains, cron: \"* * * * * *\", class: io.lockstep.examples.it.jobs.GatedJob, params: { gate: \""
                + drainsGate + "\" } }\n"
                + "  - { name: overruns, cron: \"* * * * * *\", class: io.lockstep.examples.it.jobs.GatedJob, params: { gate: \""
                + overrunsGate + "\" } }\n";
        try (Cluster cluster = new Cluster(dir, yaml);
             RedisClient redis = RedisClient.create(cluster.redis.host(), cluster.redis.port());
             RedisLockProvider provider = RedisLockProvider.builder().client(redis, "shutdown-it").build()) {
            cluster.editConfig("shutdownTimeout: 10s", "shutdownTimeout: " + SHUTDOWN_TIMEOUT.toSeconds() + "s");
            WorkerProcess w = cluster.start("w");
            cluster.awaitStarted();
            await().atMost(Duration.ofSeconds(20)).until(() -> List.of("drains", "overruns").stream()
                    .allMatch(job -> !WorkerProcess.ofJob(w.events("job_started"), job).isEmpty()));
            JsonNode drains = WorkerProcess.ofJob(w.events("job_started"), "drains").get(0);
            JsonNode overruns = WorkerProcess.ofJob(w.events("job_started"), "overruns").get(0);

            w.signal("TERM");
            // Once the worker says it is stopping, the first run gets to finish (well within the timeout).
            await().atMost(Duration.ofSeconds(5)).until(() -> !w.events("worker_stopping").isEmpty());
            Files.writeString(drainsGate, "open");
            assertThat(w.waitForExit()).as("a drained worker exits 0").isZero();

            Instant stopping = WorkerProcess.ts(w.events("worker_stopping").get(0));
            assertThat(w.events("worker_stopping").get(0).path("shutdown_timeout_ms").asLong()).as("the worker read the shorter timeout")
                    .isEqualTo(SHUTDOWN_TIMEOUT.toMillis());
            JsonNode succeeded = single(w.events("job_succeeded"), drains);
            assertThat(Duration.between(stopping, WorkerProcess.ts(succeeded))).as("the drained run finished within the shutdown timeout")
                    .isLessThan(SHUTDOWN_TIMEOUT);
            JsonNode interrupted = single(w.events("job_failed"), overruns);
            assertThat(interrupted.path("reason").asText()).isEqualTo("interrupted by shutdown");
            assertThat(Duration.between(stopping, WorkerProcess.ts(interrupted))).as("interrupted at the shutdown timeout, not before")
                    .isGreaterThanOrEqualTo(SHUTDOWN_TIMEOUT);
            JsonNode drainsReleased = single(w.events("slot_released"), drains);
            assertThat(drainsReleased.path("success").asBoolean()).as("drained run's outcome written").isTrue();
            assertThat(drainsReleased.path("outcome").asText()).isEqualTo("succeeded");
            JsonNode overrunsReleased = single(w.events("slot_released"), overruns);
            assertThat(overrunsReleased.path("success").asBoolean()).as("interrupted run's outcome written").isTrue();
            assertThat(overrunsReleased.path("outcome").asText()).isEqualTo("interrupted");
            assertThat(w.events("job_started")).as("nothing started once the worker was stopping")
                    .allSatisfy(e -> assertThat(WorkerProcess.ts(e)).isBefore(stopping));
            assertThat(w.events("worker_stopped")).hasSize(1);
            assertThat(w.events("worker_stopped").get(0).path("drained").asBoolean()).as("every job thread ended").isTrue();

            // What Redis recorded: the slot records are done markers with each outcome, and the history has both runs.
            assertThat(record(redis, drains)).containsEntry("state", "done").containsEntry("outcome", "succeeded");
            assertThat(record(redis, overruns)).containsEntry("state", "done").containsEntry("outcome", "interrupted");
            RedisAdmin admin = RedisAdmin.of(provider);
            assertThat(admin.history("drains", 10)).filteredOn(r -> r.slot().equals(WorkerProcess.slot(drains)))
                    .singleElement().satisfies(r -> {
                        assertThat(r.outcome()).isEqualTo("succeeded");
                        assertThat(r.worker()).isEqualTo("w");
                        assertThat(r.fencingToken()).isEqualTo(drains.path("fencing_token").asLong());
                    });
            assertThat(admin.history("overruns", 10)).filteredOn(r -> r.slot().equals(WorkerProcess.slot(overruns)))
                    .singleElement().satisfies(r -> assertThat(r.outcome()).isEqualTo("interrupted"));
            System.out.printf("%nShutdownIT: SIGTERM; drained run finished %d ms after worker_stopping, overrun interrupted at %d ms"
                    + " (shutdownTimeout %d ms); both outcomes in Redis%n", Duration.between(stopping, WorkerProcess.ts(succeeded)).toMillis(),
                    Duration.between(stopping, WorkerProcess.ts(interrupted)).toMillis(), SHUTDOWN_TIMEOUT.toMillis());
        }
    }

    /**
     * A rolling deploy under {@code recover: rerun}: SIGTERM the worker in the middle of a long run
     * with a short {@code shutdownTimeout}. The run it cuts off is handed over (its outcome in the
     * history, the slot left recoverable), and a peer reruns it under a higher token within a few
     * seconds of the interrupt, not after the lease (20 s) runs out, and not never.
     */
    @Test
    void aRunCutOffByAGracefulStopIsRerunByAPeerAtOnceUnderAHigherToken() throws IOException {
        // overlap: allow, so that the next slot's run (every 10 s, each 60 s long), which a loaded
        // machine may start before the peer looks, does not hold the job's lease against the rerun.
        String yaml = "defaults:\n  lease: 20s\n  misfireGrace: 5s\n  recover: rerun\n  overlap: allow\njobs:\n"
                + "  - { name: batch, cron: \"*/10 * * * * *\", class: io.lockstep.examples.HeartbeatJob, params: { workMillis: 60000 } }\n";
        try (Cluster cluster = new Cluster(dir, yaml)) {
            cluster.editConfig("shutdownTimeout: 10s", "shutdownTimeout: 2s");
            cluster.start("w1");
            cluster.start("w2");
            cluster.awaitStarted();
            JsonNode first = await().atMost(Duration.ofSeconds(30)).until(() -> cluster.events("job_started").stream().findFirst(),
                    java.util.Optional::isPresent).orElseThrow();
            WorkerProcess stopped = cluster.workers.stream().filter(w -> w.id.equals(first.path("worker").asText())).findFirst().orElseThrow();
            WorkerProcess peer = cluster.workers.stream().filter(w -> w != stopped).findFirst().orElseThrow();
            stopped.signal("TERM");
            assertThat(stopped.waitForExit()).as("a drained worker exits 0").isZero();
            JsonNode cut = single(stopped.events("job_failed"), first);
            assertThat(cut.path("reason").asText()).isEqualTo("interrupted by shutdown");
            assertThat(single(stopped.events("slot_released"), first).path("outcome").asText()).isEqualTo("interrupted");

            JsonNode rerun = await().atMost(Duration.ofSeconds(15)).until(() -> peer.events("job_started").stream()
                    .filter(e -> WorkerProcess.same(e, first)).findFirst(), java.util.Optional::isPresent).orElseThrow();
            long afterCut = Duration.between(WorkerProcess.ts(cut), WorkerProcess.ts(rerun)).toMillis();
            assertThat(afterCut).as("rerun within a few seconds of the interrupt (heartbeats every 3 s), well before the 20 s lease")
                    .isLessThan(8_000);
            assertThat(rerun.path("fencing_token").asLong()).isGreaterThan(first.path("fencing_token").asLong());
            assertThat(single(peer.events("slot_recovered"), first)).isNotNull();
            assertThat(cluster.startEventsBySlot().get(WorkerProcess.key(first))).as("the cut-off run and its one rerun").hasSize(2);
            System.out.printf("%nShutdownIT: a run cut off by SIGTERM (shutdownTimeout 2 s) was rerun by the peer %d ms after the"
                    + " interrupt, under a higher token%n", afterCut);
            cluster.assertAuditHolds();
        }
    }

    private static JsonNode single(List<JsonNode> events, JsonNode start) {
        List<JsonNode> same = events.stream().filter(e -> WorkerProcess.same(e, start)).toList();
        assertThat(same).as("events about %s", WorkerProcess.key(start)).hasSize(1);
        return same.get(0);
    }

    static Map<String, String> record(RedisClient redis, JsonNode start) {
        return redis.hgetAll(ItKeys.slot(start.path("job").asText(), WorkerProcess.slot(start)));
    }
}
