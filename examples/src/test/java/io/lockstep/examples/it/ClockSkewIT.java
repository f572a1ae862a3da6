package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Workers whose wall clocks are 5 s fast and 5 s slow (the {@code lockstep.clockSkew} test hook,
 * which injects a shifted {@code java.time.Clock}) next to one with a true clock. The event
 * timestamps come from Logback, i.e. the true host clock shared with Redis, so they show when a job
 * really started: never before its slot, never twice, and the slots all ran.
 */
class ClockSkewIT {

    private static final int JOBS = 5;

    @TempDir
    Path dir;

    @Test
    void workersWithSkewedClocksNeitherFireEarlyNorTwice() {
        try (Cluster cluster = new Cluster(dir, Cluster.perSecondJobs(JOBS, 20, "5s", "2s"))) {
            cluster.start("fast", "-Dlockstep.clockSkew=PT5S");
            cluster.start("slow", "-Dlockstep.clockSkew=-PT5S");
            cluster.start("true");
            cluster.awaitStarted();
            Map<String, Long> offsets = new java.util.HashMap<>();
            cluster.events("worker_started").forEach(e -> offsets.put(e.path("worker").asText(), e.path("clock_offset_ms").asLong()));
            assertThat(offsets.get("fast")).isBetween(-5_100L, -4_900L);
            assertThat(offsets.get("slow")).isBetween(4_900L, 5_100L);

            Instant lastStart = cluster.events("worker_started").stream().map(WorkerProcess::ts).max(Instant::compareTo).orElseThrow();
            Instant from = lastStart.truncatedTo(ChronoUnit.SECONDS).plusSeconds(2);
            Instant to = from.plusSeconds(15);
            await().atMost(Duration.ofSeconds(40)).until(() -> cluster.everyJobReached(JOBS, to.plusSeconds(1)));
            cluster.workers.forEach(w -> assertThat(w.terminate()).isZero());

            for (JsonNode started : cluster.events("job_started")) {
                assertThat(WorkerProcess.ts(started)).as("%s started %s", started.path("worker").asText(), started.path("slot").asText())
                        .isAfterOrEqualTo(WorkerProcess.slot(started));
            }
            Map<String, List<String>> starts = cluster.startsBySlot();
            assertThat(starts.values()).allSatisfy(ws -> assertThat(ws).hasSize(1));
            assertThat(cluster.slotsNeverStarted(JOBS, from, to)).isEmpty();
            cluster.assertAuditHolds();
        }
    }
}
