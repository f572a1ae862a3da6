package io.lockstep.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.lockstep.scheduler.cron.CronSchedule;
import io.lockstep.scheduler.lock.ClaimRequest.Mode;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The catch-up plan at start, on a fixed instant, without threads. */
class CatchUpPlanTest {

    private static final Instant NOW = Instant.parse("2026-11-30T12:00:00.300Z");

    private static ScheduledJob job(CatchUp policy) {
        JobDefinition d = new JobDefinition("tick", CronSchedule.of("* * * * * *", ZoneOffset.UTC), Job.class.getName(),
                Map.of(), Duration.ofSeconds(5), Duration.ofSeconds(2), Overlap.SKIP, Duration.ZERO, true)
                .withCatchUp(policy, Duration.ofHours(1));
        return new ScheduledJob(d, ctx -> { });
    }

    @Test
    void pastTheCapTheNewestMissedSlotsAreKeptAndTheOlderOnesCountedInOneReport() {
        Instant last = NOW.minusSeconds(20);
        CatchUpPlan plan = CatchUpPlan.since(job(CatchUp.LATEST), last, NOW, 5);
        // Missed: 11:59:41 .. 11:59:58 (past the 2 s grace); 11:59:59 and 12:00:00 are still in grace.
        List<DueSlot> missed = plan.slots().stream().filter(s -> s.mode != Mode.CLAIM).toList();
        assertThat(missed).extracting(s -> s.slot).containsExactly(
                Instant.parse("2026-11-30T11:59:54Z"), Instant.parse("2026-11-30T11:59:55Z"),
                Instant.parse("2026-11-30T11:59:56Z"), Instant.parse("2026-11-30T11:59:57Z"),
                Instant.parse("2026-11-30T11:59:58Z"));
        assertThat(missed.get(4).mode).as("latest: the newest missed slot runs").isEqualTo(Mode.CATCH_UP);
        assertThat(missed.subList(0, 4)).allSatisfy(s -> assertThat(s.mode).isEqualTo(Mode.MISS_ONLY));
        assertThat(plan.dropped()).isEqualTo(13);
        assertThat(plan.droppedFrom()).isEqualTo(Instant.parse("2026-11-30T11:59:41Z"));
        assertThat(plan.droppedTo()).isEqualTo(Instant.parse("2026-11-30T11:59:53Z"));
        assertThat(plan.slots()).filteredOn(s -> s.mode == Mode.CLAIM).extracting(s -> s.slot)
                .containsExactly(Instant.parse("2026-11-30T11:59:59Z"), Instant.parse("2026-11-30T12:00:00Z"));
    }

    @Test
    void catchUpAllChainsItsRunsOldestFirstAndHoldsTheJobsNewerSlots() {
        CatchUpPlan plan = CatchUpPlan.since(job(CatchUp.ALL), NOW.minusSeconds(6), NOW, 100);
        List<DueSlot> heads = plan.slots().stream().filter(s -> s.catchUp).toList();
        assertThat(heads).hasSize(1);
        DueSlot d = heads.get(0);
        int chained = 0;
        Instant previous = Instant.MIN;
        while (d != null) {
            assertThat(d.slot).isAfter(previous);
            assertThat(d.catchUpDeadline).isAfter(NOW);
            previous = d.slot;
            d = d.next;
            chained++;
        }
        assertThat(chained).isEqualTo(4); // 11:59:55 .. 11:59:58
        assertThat(plan.catchesUp()).isTrue();
        assertThat(CatchUpPlan.since(job(CatchUp.NONE), NOW.minusSeconds(6), NOW, 100).catchesUp()).isFalse();
    }
}
