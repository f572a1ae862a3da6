package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Workers hurt for real: one SIGKILLed mid-run, another SIGSTOPped for longer than its lease. No
 * slot runs twice; the stopped worker learns its lease is lost; its peers ran what fell due.
 */
class FaultIT {

    private static final int JOBS = 10;
    private static final Duration LEASE = Duration.ofSeconds(2);

    @TempDir
    Path dir;

    /**
     * Runs of 1 s (so that a signal sent within 150 ms of a start lands inside the run, however slow
     * spawning {@code kill} is), {@code overlap: allow} (so that a run does not hold its job's next
     * slot) and 16 threads (so that the survivor alone can carry the ten jobs' runs).
     */
    private static String jobs() {
        return Cluster.replacing(Cluster.perSecondJobs(JOBS, 1000, "2s", "2s"), "defaults:\n", "defaults:\n  overlap: allow\n");
    }

    @Test
    void aKilledAndAStoppedWorkerNeverCauseASecondRunAndThePeersTakeOver() throws java.io.IOException {
        try (Cluster cluster = new Cluster(dir, jobs())) {
            cluster.editConfig("threads: 8", "threads: 16");
            WorkerProcess killed = cluster.start("killed");
            WorkerProcess stopped = cluster.start("stopped");
            WorkerProcess survivor = cluster.start("survivor");
            cluster.awaitStarted();
            Instant allStarted = Instant.now();

            // Hit each worker right after it started a run, so the run (1 s) is surely still going.
            await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(20)).until(() -> justStarted(killed).isPresent());
            String killedRun = justStarted(killed).orElseThrow();
            killed.signal("KILL");

            await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(20)).until(() -> justStarted(stopped).isPresent());
            String stoppedRun = justStarted(stopped).orElseThrow();
            stopped.signal("STOP");
            Instant stoppedAt = Instant.now();

            // Stay stopped well past the lease: until the survivor has run slots due 7 s later.
            Instant resumeAfter = stoppedAt.plusSeconds(7);
            await().atMost(Duration.ofSeconds(30)).until(() -> cluster.everyJobReached(JOBS, resumeAfter));
            stopped.signal("CONT");
            Instant resumedAt = Instant.now();

            await().atMost(Duration.ofSeconds(10)).until(() -> stopped.events("lease_lost").stream()
                    .anyMatch(e -> WorkerProcess.key(e).equals(stoppedRun)));
            await().atMost(Duration.ofSeconds(20)).until(() -> cluster.everyJobReached(JOBS, resumedAt.plusSeconds(3)));
            await().atMost(Duration.ofSeconds(10)).until(() -> stopped.events("slot_released").stream().anyMatch(e -> WorkerProcess.key(e).equals(stoppedRun)));
            Instant until = Instant.now();
            assertThat(stopped.terminate()).isZero();
            assertThat(survivor.terminate()).isZero();

            Map<String, List<String>> starts = cluster.startsBySlot();
            assertThat(starts).as("no slot started twice").allSatisfy((slot, workers) -> assertThat(workers).hasSize(1));
            assertThat(starts.get(killedRun)).containsExactly("killed");
            assertThat(killed.events("job_succeeded").stream().map(WorkerProcess::key)).as("killed mid-run").doesNotContain(killedRun);
            assertThat(starts.get(stoppedRun)).containsExactly("stopped");

            // The stopped worker's run was told, and its outcome could not overwrite anything: the
            // release of a lease that ran out while it slept is refused by Redis.
            JsonNode lost = stopped.events("lease_lost").stream().filter(e -> WorkerProcess.key(e).equals(stoppedRun)).findFirst().orElseThrow();
            assertThat(WorkerProcess.ts(lost)).isAfter(resumedAt.minusSeconds(1));
            assertThat(lost.path("level").asText()).isEqualTo("WARN");
            assertThat(stopped.events("slot_released").stream().filter(e -> WorkerProcess.key(e).equals(stoppedRun)))
                    .as("the stopped run's late outcome write").singleElement()
                    .satisfies(e -> assertThat(e.path("success").asBoolean()).as("refused: %s", e).isFalse());

            // No silent miss over the whole run: every slot from the first after all workers started to
            // the last whose grace (2 s) ended before the stop started or was reported (missed, skipped,
            // or abandoned: a slot the killed or stopped worker claimed ahead and never started ends so
            // under recover: none).
            Instant first = allStarted.truncatedTo(java.time.temporal.ChronoUnit.SECONDS).plusSeconds(2);
            Instant last = until.minusSeconds(3).truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
            assertThat(cluster.silentSlots(JOBS, first, last)).as("slots in [%s, %s) neither started nor reported", first, last).isEmpty();

            // Every slot that fell due while the worker was stopped, once the old leases had run out,
            // was run by the survivor; none of them by the stopped worker.
            Instant from = stoppedAt.plus(LEASE).plusSeconds(2).truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
            Instant to = resumedAt.minusSeconds(1);
            List<String> notBySurvivor = new ArrayList<>();
            for (Instant slot = from; !slot.isAfter(to); slot = slot.plusSeconds(1)) {
                for (int j = 0; j < JOBS; j++) {
                    String key = io.lockstep.scheduler.SlotCoverage.key(String.format("job-%02d", j), slot);
                    if (!List.of("survivor").equals(starts.get(key))) {
                        notBySurvivor.add(key + "=" + starts.get(key));
                    }
                }
            }
            assertThat(notBySurvivor).isEmpty();
            Set<String> stoppedStarts = stopped.events("job_started").stream().map(WorkerProcess::key).collect(Collectors.toSet());
            assertThat(stoppedStarts).noneMatch(k -> WorkerProcess.slotOf(k).isAfter(stoppedAt.plusSeconds(1))
                    && WorkerProcess.slotOf(k).isBefore(resumedAt.minusSeconds(1)));
            cluster.assertAuditHolds();
        }
    }

    /** A run the worker started less than 150 ms ago and has not finished, as job@slot. */
    private static java.util.Optional<String> justStarted(WorkerProcess w) {
        Set<String> finished = new java.util.HashSet<>();
        w.events("job_succeeded").forEach(e -> finished.add(WorkerProcess.key(e)));
        w.events("job_failed").forEach(e -> finished.add(WorkerProcess.key(e)));
        Instant recent = Instant.now().minusMillis(150);
        return w.events("job_started").stream()
                .filter(e -> WorkerProcess.ts(e).isAfter(recent) && !finished.contains(WorkerProcess.key(e)))
                .map(WorkerProcess::key).reduce((first, second) -> second);
    }
}
