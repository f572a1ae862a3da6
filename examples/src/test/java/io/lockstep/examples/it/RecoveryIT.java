package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import static io.lockstep.examples.it.WorkerProcess.forSlot;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A worker SIGKILLed in the middle of a run: with {@code recover: rerun} exactly one other worker
 * runs the slot again, within lease + 2 s, under a higher fencing token; with {@code recover: none}
 * exactly one logs {@code slot_abandoned}.
 */
class RecoveryIT {

    private static final Duration LEASE = Duration.ofSeconds(2);
    /** The promise (README, RELIABILITY): a dead holder's slot is recovered or abandoned within lease + 2 s. */
    private static final Duration BOUND = LEASE.plusSeconds(2);

    @TempDir
    Path dir;

    @Test
    void aKilledHoldersSlotIsRerunOnceOrAbandonedOnceByThePolicy() {
        String yaml = """
                defaults:
                  lease: 2s
                  misfireGrace: 2s
                jobs:
                  - name: rerun-job
                    cron: "*/10 * * * * *"
                    class: io.lockstep.examples.HeartbeatJob
                    params: { workMillis: 5000 }
                    recover: rerun
                  - name: none-job
                    cron: "*/10 * * * * *"
                    class: io.lockstep.examples.HeartbeatJob
                    params: { workMillis: 5000 }
                    recover: none
                """;
        try (Cluster cluster = new Cluster(dir, yaml)) {
            List<WorkerProcess> workers = List.of(cluster.start("w1"), cluster.start("w2"), cluster.start("w3"));
            cluster.awaitStarted();

            // Kill whoever runs each job's first slot, right after it started.
            await().atMost(Duration.ofSeconds(25)).pollInterval(Duration.ofMillis(20))
                    .until(() -> holder(workers, "rerun-job").isPresent() && holder(workers, "none-job").isPresent());
            WorkerProcess rerunHolder = holder(workers, "rerun-job").orElseThrow();
            WorkerProcess noneHolder = holder(workers, "none-job").orElseThrow();
            rerunHolder.signal("KILL");
            if (noneHolder != rerunHolder) {
                noneHolder.signal("KILL");
            }
            Instant killedAt = Instant.now();
            JsonNode rerunStart = rerunHolder.events("job_started").stream().filter(e -> job(e).equals("rerun-job")).findFirst().orElseThrow();
            JsonNode noneStart = noneHolder.events("job_started").stream().filter(e -> job(e).equals("none-job")).findFirst().orElseThrow();
            Instant rerunSlot = WorkerProcess.slot(rerunStart);
            Instant noneSlot = WorkerProcess.slot(noneStart);

            await().atMost(Duration.ofSeconds(10)).until(() -> !forSlot(cluster.events("slot_recovered"), rerunSlot).isEmpty()
                    && !forSlot(cluster.events("slot_abandoned"), noneSlot).isEmpty());
            // Until the rerun (5 s of work) has finished, every survivor keeps looking at the runs in
            // flight: nobody else may act on these slots meanwhile.
            await().atMost(Duration.ofSeconds(15)).until(() -> forSlot(cluster.events("job_succeeded"), rerunSlot).stream()
                    .anyMatch(e -> job(e).equals("rerun-job")));
            List<WorkerProcess> survivors = workers.stream().filter(w -> w != rerunHolder && w != noneHolder).toList();
            for (WorkerProcess w : survivors) {
                assertThat(w.terminate()).isZero();
            }

            List<JsonNode> recovered = forSlot(cluster.events("slot_recovered"), rerunSlot).stream()
                    .filter(e -> job(e).equals("rerun-job")).toList();
            assertThat(recovered).hasSize(1);
            JsonNode recovery = recovered.get(0);
            assertThat(recovery.path("worker").asText()).isNotEqualTo(rerunHolder.id);
            long detectedMs = Duration.between(killedAt, WorkerProcess.ts(recovery)).toMillis();
            long abandonedMs = Duration.between(killedAt, WorkerProcess.ts(forSlot(cluster.events("slot_abandoned"), noneSlot).get(0))).toMillis();
            System.out.printf("recover: rerun after SIGKILL: slot_recovered %d ms, slot_abandoned %d ms after the kill (lease %d ms;"
                    + " bound lease + 2 s = %d ms; margins %d ms and %d ms)%n", detectedMs, abandonedMs, LEASE.toMillis(), BOUND.toMillis(),
                    BOUND.toMillis() - detectedMs, BOUND.toMillis() - abandonedMs);
            assertThat(detectedMs).as("recovered within lease + 2 s").isLessThanOrEqualTo(BOUND.toMillis());
            assertThat(recovery.path("fencing_token").asLong()).isGreaterThan(rerunStart.path("fencing_token").asLong());

            List<JsonNode> reruns = forSlot(cluster.events("job_started"), rerunSlot).stream()
                    .filter(e -> job(e).equals("rerun-job")).toList();
            assertThat(reruns).extracting(e -> e.path("worker").asText())
                    .containsExactlyInAnyOrder(rerunHolder.id, recovery.path("worker").asText());
            assertThat(forSlot(cluster.events("job_succeeded"), rerunSlot).stream().filter(e -> job(e).equals("rerun-job")))
                    .singleElement().satisfies(e -> assertThat(e.path("fencing_token").asLong())
                            .isEqualTo(recovery.path("fencing_token").asLong()));

            List<JsonNode> abandoned = forSlot(cluster.events("slot_abandoned"), noneSlot).stream()
                    .filter(e -> job(e).equals("none-job")).toList();
            assertThat(abandoned).hasSize(1);
            assertThat(abandoned.get(0).path("fencing_token").asLong()).isEqualTo(noneStart.path("fencing_token").asLong());
            assertThat(abandonedMs).as("abandoned within lease + 2 s").isLessThanOrEqualTo(BOUND.toMillis());
            assertThat(forSlot(cluster.events("job_started"), noneSlot).stream().filter(e -> job(e).equals("none-job")))
                    .as("recover: none never runs the slot again").hasSize(1);
            cluster.assertAuditHolds();
        }
    }

    /** The worker that started the job's first slot, if one did. */
    private static Optional<WorkerProcess> holder(List<WorkerProcess> workers, String job) {
        return workers.stream().filter(w -> w.events("job_started").stream().anyMatch(e -> job(e).equals(job))).findFirst();
    }

    private static String job(JsonNode e) {
        return e.path("job").asText();
    }
}
