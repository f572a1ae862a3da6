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
        CatchUpPlan plan = CatchUpPlan.since(job(CatchUp.LATEST), last, null, NOW, 5);
        // Missed: 11:59:41 .. 11:59:58 (past the 2 s grace); 11:59:59 and 12:00:00 are still in grace.
        List<DueSlot> missed = plan.slots().stream().filter(s -> s.mode() != Mode.CLAIM).toList();
        assertThat(missed).extracting(s -> s.slot).containsExactly(
                Instant.parse("2026-11-30T11:59:54Z"), Instant.parse("2026-11-30T11:59:55Z"),
                Instant.parse("2026-11-30T11:59:56Z"), Instant.parse("2026-11-30T11:59:57Z"),
                Instant.parse("2026-11-30T11:59:58Z"));
        assertThat(missed.get(4).mode()).as("latest: the newest missed slot runs").isEqualTo(Mode.CATCH_UP);
        assertThat(missed.subList(0, 4)).allSatisfy(s -> assertThat(s.mode()).isEqualTo(Mode.MISS_ONLY));
        assertThat(plan.dropped()).isEqualTo(13);
        assertThat(plan.droppedFrom()).isEqualTo(Instant.parse("2026-11-30T11:59:41Z"));
        assertThat(plan.droppedTo()).isEqualTo(Instant.parse("2026-11-30T11:59:53Z"));
        assertThat(plan.slots()).filteredOn(s -> s.mode() == Mode.CLAIM).extracting(s -> s.slot)
                .containsExactly(Instant.parse("2026-11-30T11:59:59Z"), Instant.parse("2026-11-30T12:00:00Z"));
    }

    @Test
    void catchUpAllChainsItsRunsOldestFirstAndHoldsTheJobsNewerSlots() {
        CatchUpPlan plan = CatchUpPlan.since(job(CatchUp.ALL), NOW.minusSeconds(6), null, NOW, 100);
        List<DueSlot> heads = plan.slots().stream().filter(s -> s.kind() == DueSlot.Kind.CATCH_UP).toList();
        assertThat(heads).hasSize(1);
        List<DueSlot> chain = new java.util.ArrayList<>();
        for (DueSlot d = heads.get(0); d != null; d = d.next()) {
            assertThat(d.deadline()).isAfter(NOW);
            chain.add(d);
        }
        assertThat(chain).extracting(d -> d.slot).containsExactly( // oldest first
                Instant.parse("2026-11-30T11:59:55Z"), Instant.parse("2026-11-30T11:59:56Z"),
                Instant.parse("2026-11-30T11:59:57Z"), Instant.parse("2026-11-30T11:59:58Z"));
        assertThat(plan.catchesUp()).isTrue();
        assertThat(CatchUpPlan.since(job(CatchUp.NONE), NOW.minusSeconds(6), null, NOW, 100).catchesUp()).isFalse();

        // The job's newer slots, still within their grace, are plain claims outside the chain: the
        // ones the claimer holds back while the job is catching up.
        List<DueSlot> regular = plan.slots().stream().filter(s -> s.kind() != DueSlot.Kind.CATCH_UP).toList();
        assertThat(regular).extracting(s -> s.slot, s -> s.mode()).containsExactly(
                org.assertj.core.groups.Tuple.tuple(Instant.parse("2026-11-30T11:59:59Z"), Mode.CLAIM),
                org.assertj.core.groups.Tuple.tuple(Instant.parse("2026-11-30T12:00:00Z"), Mode.CLAIM));
        // Held until the chain's last slot is decided, and not a moment longer. (The scheduler marks
        // the job catching up when its plan catches up; deciding a link queues the next.)
        SlotQueue queue = new SlotQueue();
        queue.catchingUp(List.of("tick"));
        assertThat(chain.subList(1, chain.size())).as("each link waits for the one before it")
                .allSatisfy(link -> assertThat(link.stage()).isEqualTo(DueSlot.Stage.CHAINED));
        for (DueSlot link : chain) {
            assertThat(queue.catchingUp("tick")).as("held before %s is decided", link.slot).isTrue();
            assertThat(link.stage()).as("queued once the one before it is decided").isEqualTo(DueSlot.Stage.QUEUED);
            link.toStore();
            link.decided();
            queue.place(link, NOW);
        }
        assertThat(queue.catchingUp("tick")).as("let go once the last caught-up slot is decided").isFalse();
    }
}
