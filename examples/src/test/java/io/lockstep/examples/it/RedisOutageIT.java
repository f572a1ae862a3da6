package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Redis killed under running workers and started again (empty) on the same port: no job runs
 * without a claim, each worker warns once per outage, every slot of the outage window started or
 * was reported (no silent miss), and jobs fire again within 2 s of Redis being back.
 */
class RedisOutageIT {

    private static final int JOBS = 5;

    @TempDir
    Path dir;

    @Test
    void anOutageFailsClosedWarnsOnceReportsEverySlotItCannotRunAndRecoversWithinTwoSeconds() {
        try (Cluster cluster = new Cluster(dir, Cluster.perSecondJobs(JOBS, 100, "5s", "2s"))) {
            WorkerProcess a = cluster.start("a");
            WorkerProcess b = cluster.start("b");
            cluster.awaitStarted();
            await().atMost(Duration.ofSeconds(20)).until(() -> cluster.events("job_started").size() >= 3 * JOBS);

            cluster.redis.kill();
            Instant killedAt = Instant.now();
            // Down long enough for slots to pass their grace while every claim fails.
            await().atMost(Duration.ofSeconds(20)).until(() -> List.of(a, b).stream().allMatch(w -> w.events("slot_missed").stream()
                    .anyMatch(e -> e.path("reason").asText().contains("unreachable"))));
            Instant restarting = Instant.now();
            cluster.redis.restart();
            Instant restartedAt = Instant.now();
            await().atMost(Duration.ofSeconds(10)).until(() -> cluster.events("job_started").stream()
                    .anyMatch(e -> WorkerProcess.ts(e).isAfter(restartedAt)));
            await().atMost(Duration.ofSeconds(10)).until(() -> cluster.events("redis_recovered").size() == 2);
            // The window of no silent miss: from two slots before the kill to three after the restart,
            // each slot's grace (2 s) over before the workers stop.
            Instant from = killedAt.truncatedTo(ChronoUnit.SECONDS).minusSeconds(2);
            Instant to = restartedAt.truncatedTo(ChronoUnit.SECONDS).plusSeconds(3);
            await().atMost(Duration.ofSeconds(15)).until(() -> Instant.now().isAfter(to.plusSeconds(2)) && cluster.everyJobReached(JOBS, to));
            assertThat(a.terminate()).isZero();
            assertThat(b.terminate()).isZero();

            for (WorkerProcess w : List.of(a, b)) {
                // No job runs without a claim: every start follows this worker's own claim of that slot.
                Set<String> claimed = w.events("slot_claimed").stream().map(WorkerProcess::key).collect(Collectors.toSet());
                assertThat(w.events("job_started")).allSatisfy(e -> assertThat(claimed).contains(WorkerProcess.key(e)));
                assertThat(w.events("slot_claimed")).as("claims of %s between the kill (%s) and the restart (%s)", w.id, killedAt, restarting)
                        .noneMatch(e -> WorkerProcess.ts(e).isAfter(killedAt.plusMillis(100)) && WorkerProcess.ts(e).isBefore(restarting));
                // One warning per outage; the rest of the failures only at DEBUG.
                List<JsonNode> warnings = w.events("redis_error").stream().filter(e -> "WARN".equals(e.path("level").asText())).toList();
                assertThat(warnings).as("redis_error warnings of %s", w.id).hasSize(1);
                assertThat(warnings.get(0).path("target").asText()).contains("127.0.0.1:" + cluster.redis.port());
            }
            Instant firstAfter = cluster.events("job_started").stream().map(WorkerProcess::ts)
                    .filter(t -> t.isAfter(restartedAt)).min(Instant::compareTo).orElseThrow();
            System.out.printf("%nRedisOutageIT: down %d ms, first job_started %d ms after the restart%n",
                    Duration.between(killedAt, restartedAt).toMillis(), Duration.between(restartedAt, firstAfter).toMillis());
            assertThat(Duration.between(restartedAt, firstAfter)).as("first start within 2 s of the restart (margin printed)")
                    .isLessThan(Duration.ofSeconds(2));
            assertThat(cluster.startsBySlot().values()).allSatisfy(ws -> assertThat(ws).hasSize(1));
            List<String> silent = cluster.silentSlots(JOBS, from, to);
            System.out.printf("RedisOutageIT: %d slots in [%s, %s), %d started, %d reported missed; margin to the 2 s bound %d ms%n",
                    io.lockstep.scheduler.SlotCoverage.slots(Cluster.jobNames(JOBS), from, to, Duration.ofSeconds(1)),
                    from, to, cluster.startEventsBySlot().keySet().stream().filter(k -> inWindow(k, from, to)).count(),
                    cluster.events("slot_missed").stream().map(WorkerProcess::key).distinct().filter(k -> inWindow(k, from, to)).count(),
                    2_000 - Duration.between(restartedAt, firstAfter).toMillis());
            assertThat(silent).as("slots of the outage window neither started nor reported").isEmpty();
            cluster.assertAuditHolds();
        }
    }

    private static boolean inWindow(String jobAtSlot, Instant from, Instant to) {
        Instant slot = WorkerProcess.slotOf(jobAtSlot);
        return !slot.isBefore(from) && slot.isBefore(to);
    }
}
