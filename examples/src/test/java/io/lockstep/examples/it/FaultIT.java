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

    @Test
    void aKilledAndAStoppedWorkerNeverCauseASecondRunAndThePeersTakeOver() {
        try (Cluster cluster = new Cluster(dir, Cluster.perSecondJobs(JOBS, 400, "2s", "2s"))) {
            WorkerProcess killed = cluster.start("killed");
            WorkerProcess stopped = cluster.start("stopped");
            WorkerProcess survivor = cluster.start("survivor");
            cluster.awaitStarted();

            // Hit each worker right after it started a run, so the run (400 ms) is surely still going.
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
                    .anyMatch(e -> key(e).equals(stoppedRun)));
            await().atMost(Duration.ofSeconds(20)).until(() -> cluster.everyJobReached(JOBS, resumedAt.plusSeconds(3)));
            assertThat(stopped.terminate()).isZero();
            assertThat(survivor.terminate()).isZero();

            Map<String, List<String>> starts = cluster.startsBySlot();
            assertThat(starts).as("no slot started twice").allSatisfy((slot, workers) -> assertThat(workers).hasSize(1));
            assertThat(starts.get(killedRun)).containsExactly("killed");
            assertThat(killed.events("job_succeeded").stream().map(FaultIT::key)).as("killed mid-run").doesNotContain(killedRun);
            assertThat(starts.get(stoppedRun)).containsExactly("stopped");

            // The stopped worker's run was told, and its outcome could not overwrite anything.
            JsonNode lost = stopped.events("lease_lost").stream().filter(e -> key(e).equals(stoppedRun)).findFirst().orElseThrow();
            assertThat(WorkerProcess.ts(lost)).isAfter(resumedAt.minusSeconds(1));
            assertThat(lost.path("level").asText()).isEqualTo("WARN");

            // Every slot that fell due while the worker was stopped, once the old leases had run out,
            // was run by the survivor; none of them by the stopped worker.
            Instant from = stoppedAt.plus(LEASE).plusSeconds(2).truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
            Instant to = resumedAt.minusSeconds(1);
            List<String> notBySurvivor = new ArrayList<>();
            for (Instant slot = from; !slot.isAfter(to); slot = slot.plusSeconds(1)) {
                for (int j = 0; j < JOBS; j++) {
                    String key = String.format("job-%02d@%s", j, slot);
                    if (!List.of("survivor").equals(starts.get(key))) {
                        notBySurvivor.add(key + "=" + starts.get(key));
                    }
                }
            }
            assertThat(notBySurvivor).isEmpty();
            Set<String> stoppedStarts = stopped.events("job_started").stream().map(FaultIT::key).collect(Collectors.toSet());
            assertThat(stoppedStarts).noneMatch(k -> Instant.parse(k.substring(k.indexOf('@') + 1)).isAfter(stoppedAt.plusSeconds(1))
                    && Instant.parse(k.substring(k.indexOf('@') + 1)).isBefore(resumedAt.minusSeconds(1)));
        }
    }

    /** A run the worker started less than 150 ms ago and has not finished, as job@slot. */
    private static java.util.Optional<String> justStarted(WorkerProcess w) {
        Set<String> finished = new java.util.HashSet<>();
        w.events("job_succeeded").forEach(e -> finished.add(key(e)));
        w.events("job_failed").forEach(e -> finished.add(key(e)));
        Instant recent = Instant.now().minusMillis(150);
        return w.events("job_started").stream()
                .filter(e -> WorkerProcess.ts(e).isAfter(recent) && !finished.contains(key(e)))
                .map(FaultIT::key).reduce((first, second) -> second);
    }

    private static String key(JsonNode e) {
        return e.path("job").asText() + "@" + e.path("slot").asText();
    }
}
