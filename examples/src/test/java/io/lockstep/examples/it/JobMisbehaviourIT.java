package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import io.lockstep.scheduler.SlotCoverage;
import java.time.temporal.ChronoUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Jobs that misbehave in a real worker JVM: one throws an {@link Error} (an OutOfMemoryError from
 * its own allocation), one ignores interrupts past its timeout. The worker goes on, its other jobs
 * keep their schedule, and the events say what happened.
 */
class JobMisbehaviourIT {

    @TempDir
    Path dir;

    @Test
    void anErrorOrADeafJobPastItsTimeoutStopsNeitherTheWorkerNorItsPerSecondJob() {
        String yaml = """
                defaults:
                  lease: 2s
                  misfireGrace: 1s
                jobs:
                  - name: greedy
                    cron: "*/2 * * * * *"
                    class: io.lockstep.examples.it.jobs.GreedyJob
                  - name: deaf
                    cron: "*/5 * * * * *"
                    class: io.lockstep.examples.it.jobs.DeafJob
                    params: { workMillis: 2500 }
                    timeout: 500ms
                  - name: steady
                    cron: "* * * * * *"
                    class: io.lockstep.examples.HeartbeatJob
                    misfireGrace: 3s
                """;
        try (Cluster cluster = new Cluster(dir, yaml)) {
            WorkerProcess w = cluster.start("w");
            cluster.awaitStarted();
            Instant from = WorkerProcess.ts(w.events("worker_started").get(0)).truncatedTo(ChronoUnit.SECONDS).plusSeconds(2);
            await().atMost(Duration.ofSeconds(30)).until(() -> count(w, "job_failed", "greedy") >= 2
                    && w.events("slot_released").stream().anyMatch(e -> job(e).equals("deaf")));
            Instant afterBoth = Instant.now().truncatedTo(ChronoUnit.SECONDS).plusSeconds(2);
            await().atMost(Duration.ofSeconds(10)).until(() -> w.events("job_succeeded").stream()
                    .anyMatch(e -> job(e).equals("steady") && !WorkerProcess.slot(e).isBefore(afterBoth)));
            assertThat(w.terminate()).isZero();

            // The per-second job ran throughout: every one of its slots from the start through the
            // misbehaviours started (not merely reported: it had free threads all along). Its grace is 3 s
            // because it shares the JVM with greedy's out-of-memory loop, whose full GCs can stall a claim
            // past 1 s; a start within the grace is the schedule kept, a reported miss would not be.
            Set<String> steadyStarted = WorkerProcess.ofJob(w.events("job_started"), "steady").stream().map(WorkerProcess::key)
                    .collect(Collectors.toSet());
            assertThat(SlotCoverage.silent(steadyStarted, List.of("steady"), from, afterBoth.plusSeconds(1), Duration.ofSeconds(1)))
                    .as("seconds of steady in [%s, %s] that did not start", from, afterBoth).isEmpty();

            List<JsonNode> oom = w.events("job_failed").stream().filter(e -> job(e).equals("greedy")).toList();
            assertThat(oom).allSatisfy(e -> assertThat(e.path("error").asText()).startsWith("java.lang.OutOfMemoryError"));
            assertThat(w.events("slot_released")).filteredOn(e -> job(e).equals("greedy"))
                    .allSatisfy(e -> assertThat(e.path("outcome").asText()).isEqualTo("failed"));

            JsonNode timedOut = w.events("job_timed_out").stream().filter(e -> job(e).equals("deaf")).findFirst().orElseThrow();
            JsonNode released = w.events("slot_released").stream().filter(e -> job(e).equals("deaf")).findFirst().orElseThrow();
            assertThat(released.path("slot").asText()).isEqualTo(timedOut.path("slot").asText());
            assertThat(released.path("outcome").asText()).isEqualTo("timed_out");
            // It ignored the interrupt and ran on (its lease kept alive meanwhile): released ~2 s after the timeout.
            assertThat(Duration.between(WorkerProcess.ts(timedOut), WorkerProcess.ts(released))).isGreaterThan(Duration.ofMillis(1_500));
            // The window checked above holds the misbehaviours, by their events (not a fixed length, which
            // depends on where the worker started in the */2 and */5 cycles): an out-of-memory failure,
            // and the end of the deaf run's overrun past its timeout.
            assertThat(oom).as("greedy's OutOfMemoryErrors").anySatisfy(e -> assertThat(WorkerProcess.ts(e)).isBetween(from, afterBoth));
            assertThat(WorkerProcess.ts(released)).as("deaf released after its overrun").isBetween(from, afterBoth);
            assertThat(w.events("lease_lost")).isEmpty();
            assertThat(w.events("tick_failed")).isEmpty();
            assertThat(w.events("worker_stopped")).hasSize(1);
            cluster.assertAuditHolds();
        }
    }

    private static String job(JsonNode e) {
        return e.path("job").asText();
    }

    private static long count(WorkerProcess w, String event, String job) {
        return w.events(event).stream().filter(e -> job(e).equals(job)).count();
    }
}
