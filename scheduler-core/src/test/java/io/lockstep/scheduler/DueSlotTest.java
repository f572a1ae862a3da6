package io.lockstep.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lockstep.scheduler.DueSlot.Stage;
import io.lockstep.scheduler.cron.CronSchedule;
import io.lockstep.scheduler.lock.ClaimRequest.Mode;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * A slot's life as a state machine ({@link DueSlot.Stage}), without threads or a store: the paths a
 * slot takes from birth to a decision, what each stage implies for the request, that every move
 * outside the table throws, and that the queue files a slot by its stage.
 */
class DueSlotTest {

    private static final Instant T = Instant.parse("2026-11-30T12:00:00Z");
    private static final ScheduledJob JOB = new ScheduledJob(new JobDefinition("tick", CronSchedule.of("* * * * * *", ZoneOffset.UTC),
            Job.class.getName(), Map.of(), Duration.ofSeconds(5), Duration.ofSeconds(2), Overlap.SKIP, Duration.ZERO, true),
            ctx -> { });

    /**
     * Each link of a {@code catchUp: all} chain gets its start deadline when it becomes due (the one
     * before it decided), not the plan's: with one deadline for the chain, only about a record ttl of
     * runs would start and the rest be reported.
     */
    @Test
    void aChainedCatchUpGetsItsStartDeadlineWhenItIsUnchained() {
        Duration ttl = io.lockstep.scheduler.lock.ClaimRequest.recordTtl(Duration.ofSeconds(5), Duration.ofSeconds(2));
        DueSlot first = DueSlot.catchUp(JOB, T.minusSeconds(600), T.plus(ttl), T);
        DueSlot second = DueSlot.catchUp(JOB, T.minusSeconds(599), T.plus(ttl), T);
        first.then(second);
        Instant later = T.plus(Duration.ofMinutes(30)); // the first link ran for half an hour
        second.unchain(later);
        assertThat(second.startDeadline()).isEqualTo(later.plus(ttl));
        assertThat(first.startDeadline()).isEqualTo(T.plus(ttl));
    }

    @Test
    void ourScheduledSlotIsSharedClaimedAheadAndStaged() {
        DueSlot d = DueSlot.scheduled(JOB, T);
        assertThat(d.stage()).isEqualTo(Stage.UNSHARED);
        assertThat(d.retryAt()).as("due AHEAD of its time, to be shared out").isEqualTo(T.minus(Preference.AHEAD));
        assertThat(d.leadsSchedule()).as("the job's next slot follows it when first due").isTrue();

        d.ours();
        assertThat(d.stage()).isEqualTo(Stage.QUEUED);
        assertThat(d.leadsSchedule()).isFalse();
        d.toStore();
        assertThat(d.stage()).isEqualTo(Stage.CLAIMING);
        assertThat(d.mode()).isEqualTo(Mode.CLAIM);
        assertThat(d.ahead()).as("ours: decided ahead of its slot").isEqualTo(Preference.AHEAD);
        assertThat(d.needsThread()).isTrue();

        d.retryAt(T); // early: asked again at the slot, still ours
        assertThat(d.stage()).isEqualTo(Stage.QUEUED);
        assertThat(d.retryAt()).isEqualTo(T);
        d.toStore();
        assertThat(d.ahead()).isEqualTo(Preference.AHEAD);
        d.won(true);
        assertThat(d.stage()).isEqualTo(Stage.STAGED);
    }

    @Test
    void aPeersSlotWithoutARecordIsTakenOverWaitsForAThreadAndRuns() {
        DueSlot d = DueSlot.scheduled(JOB, T);
        d.stepAside("b", T.plus(Preference.BACKOFF));
        assertThat(d.stage()).isEqualTo(Stage.STEPPED_ASIDE);
        assertThat(d.preferred()).isEqualTo("b");
        assertThat(d.retryAt()).isEqualTo(T.plus(Preference.BACKOFF));

        d.takeOver();
        assertThat(d.stage()).isEqualTo(Stage.QUEUED);
        d.awaitThread();
        d.awaitThread(); // another round, still no thread
        assertThat(d.stage()).isEqualTo(Stage.WAITING_THREAD);
        d.toStore();
        assertThat(d.ahead()).as("a peer's slot taken over is claimed at its time").isEqualTo(Duration.ZERO);
        d.won(false);
        assertThat(d.stage()).isEqualTo(Stage.RUNNING);
    }

    @Test
    void aSlotPastItsStartDeadlineOnlyRecordsItsMissAndIsReportedOnce() {
        DueSlot d = DueSlot.claim(JOB, T);
        String token = d.asks.token(() -> "t1");
        d.toStore();
        d.retryAt(T.plusMillis(250)); // busy
        d.missOnly("no free job thread on any worker within misfireGrace", "no_thread");
        assertThat(d.stage()).isEqualTo(Stage.MISS_ONLY);
        assertThat(d.mode()).isEqualTo(Mode.MISS_ONLY);
        assertThat(d.needsThread()).isFalse();
        assertThat(d.startDeadline()).isEqualTo(Instant.MAX);
        assertThat(d.asks.token(() -> "t2")).as("the same token on every request").isEqualTo(token);

        d.toStore();
        assertThat(d.stage()).as("goes to the store as it is").isEqualTo(Stage.MISS_ONLY);
        d.retryAt(T.plusSeconds(3)); // no quorum, still within the record's life
        d.toStore();
        d.reported("no majority of the redlock masters agreed", "no_quorum");
        assertThat(d.stage()).isEqualTo(Stage.REPORTED);
        assertThat(d.mode()).isEqualTo(Mode.MISS_ONLY);
        assertThat(d.missReason()).as("the first reason stays").startsWith("no free job thread");
        assertThat(d.missCode()).isEqualTo("no_thread");
        d.retryAt(T.plusSeconds(4));
        d.toStore();
        assertThat(d.stage()).isEqualTo(Stage.REPORTED);
        d.decided(); // the answer settles the record
        assertThat(d.stage()).isEqualTo(Stage.DECIDED);
    }

    @Test
    void whatEachKindIsAtBirth() {
        DueSlot manual = DueSlot.manual(JOB, T);
        assertThat(manual.stage()).isEqualTo(Stage.QUEUED);
        assertThat(manual.manual).isTrue();
        assertThat(manual.leadsSchedule()).as("a trigger is outside the schedule: no second copy of it").isFalse();
        assertThat(DueSlot.scheduled(JOB, T).leadsSchedule()).as("a scheduled slot queues the next").isTrue();
        assertThat(manual.grace()).isEqualTo(DueSlot.MANUAL_GRACE);

        DueSlot abandon = DueSlot.recovery(JOB, T, Recover.NONE, Instant.MAX);
        assertThat(abandon.kind()).isEqualTo(DueSlot.Kind.ABANDON);
        assertThat(abandon.recovery()).isTrue();
        assertThat(abandon.needsThread()).as("abandoning a dead run waits for no thread").isFalse();
        assertThat(DueSlot.recovery(JOB, T, Recover.RERUN, Instant.MAX).mode()).isEqualTo(Mode.RECOVER);

        DueSlot missed = DueSlot.missed(JOB, T, "this worker fell behind its schedule", "fell_behind", T.plusSeconds(9));
        assertThat(missed.stage()).isEqualTo(Stage.MISS_ONLY);
        assertThat(missed.retryAt()).isEqualTo(T.plusSeconds(9));
        assertThat(missed.leadsSchedule()).isFalse();

        DueSlot first = DueSlot.catchUp(JOB, T, T.plusSeconds(60), T);
        DueSlot second = DueSlot.catchUp(JOB, T.plusSeconds(1), T.plusSeconds(60), T);
        first.then(second);
        assertThat(second.stage()).isEqualTo(Stage.CHAINED);
        assertThat(first.next()).isSameAs(second);
        assertThat(first.startDeadline()).isEqualTo(T.plusSeconds(60));
    }

    /** Every transition, tried from every stage: legal exactly where the table in {@link DueSlot} says. */
    @Test
    void everyMoveOutsideTheTableThrowsNamingTheSlotAndBothStages() {
        Map<String, Consumer<DueSlot>> moves = new LinkedHashMap<>();
        Map<String, Set<Stage>> allowed = new LinkedHashMap<>();
        Set<Stage> toClaim = EnumSet.of(Stage.QUEUED, Stage.WAITING_THREAD);
        Set<Stage> asked = EnumSet.of(Stage.CLAIMING, Stage.MISS_ONLY, Stage.REPORTED);
        move(moves, allowed, "then", d -> DueSlot.catchUp(JOB, T.minusSeconds(1), T, T).then(d), EnumSet.of(Stage.QUEUED));
        move(moves, allowed, "unchain", d -> d.unchain(T), EnumSet.of(Stage.CHAINED));
        move(moves, allowed, "ours", DueSlot::ours, EnumSet.of(Stage.UNSHARED));
        move(moves, allowed, "stepAside", d -> d.stepAside("b", T), EnumSet.of(Stage.UNSHARED));
        move(moves, allowed, "takeOver", DueSlot::takeOver, EnumSet.of(Stage.STEPPED_ASIDE));
        move(moves, allowed, "awaitThread", DueSlot::awaitThread, toClaim);
        move(moves, allowed, "missOnly", d -> d.missOnly("late", "late"), toClaim);
        Set<Stage> sendable = EnumSet.copyOf(toClaim);
        sendable.addAll(EnumSet.of(Stage.MISS_ONLY, Stage.REPORTED));
        move(moves, allowed, "toStore", DueSlot::toStore, sendable);
        move(moves, allowed, "reported", d -> d.reported("outage", "outage"), EnumSet.of(Stage.CLAIMING, Stage.MISS_ONLY));
        move(moves, allowed, "retryAt", d -> d.retryAt(T), asked);
        move(moves, allowed, "won", d -> d.won(false), EnumSet.of(Stage.CLAIMING));
        Set<Stage> decidable = EnumSet.copyOf(asked);
        decidable.add(Stage.STEPPED_ASIDE);
        move(moves, allowed, "decided", DueSlot::decided, decidable);

        List<String> checked = new ArrayList<>();
        for (Stage from : Stage.values()) {
            for (Map.Entry<String, Consumer<DueSlot>> m : moves.entrySet()) {
                DueSlot d = in(from);
                assertThat(d.stage()).isEqualTo(from);
                if (allowed.get(m.getKey()).contains(from)) {
                    m.getValue().accept(d);
                } else {
                    assertThatThrownBy(() -> m.getValue().accept(d)).as("%s from %s", m.getKey(), from)
                            .isInstanceOf(IllegalStateException.class)
                            .hasMessageContaining(d.key()).hasMessageContaining(m.getKey())
                            .hasMessageContaining("from " + from + " to ");
                    assertThat(d.stage()).as("an illegal move leaves the slot where it stood").isEqualTo(from);
                }
                checked.add(m.getKey() + "@" + from);
            }
        }
        assertThat(checked).hasSize(Stage.values().length * moves.size());
    }

    @Test
    void aSlotIsDecidedOnlyOnce() {
        DueSlot d = DueSlot.claim(JOB, T);
        d.toStore();
        d.decided();
        assertThatThrownBy(d::decided).isInstanceOf(IllegalStateException.class)
                .hasMessage("slot tick@" + T.toEpochMilli() + ": decided cannot move it from DECIDED to DECIDED"
                        + " (allowed from [STEPPED_ASIDE, CLAIMING, MISS_ONLY, REPORTED])");
        DueSlot missOnly = DueSlot.missed(JOB, T, "late", "late", T);
        missOnly.toStore();
        assertThatThrownBy(() -> missOnly.won(false)).as("a miss to record never starts")
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("from MISS_ONLY to RUNNING");
    }

    @Test
    void theQueueFilesEachSlotByItsStageAndRefusesOneOnItsWayToTheStore() throws InterruptedException {
        SlotQueue queue = new SlotQueue();
        DueSlot retry = DueSlot.claim(JOB, T);
        retry.toStore();
        retry.retryAt(T);
        DueSlot waiting = DueSlot.claim(JOB, T.minusSeconds(1));
        waiting.awaitThread();
        DueSlot aside = DueSlot.scheduled(JOB, T.plusSeconds(1));
        aside.stepAside("b", T.plusSeconds(1).plus(Preference.BACKOFF));
        DueSlot gone = DueSlot.claim(JOB, T.minusSeconds(2));
        gone.toStore();
        gone.won(false);
        queue.place(List.of(retry, waiting, aside, gone), T);

        List<DueSlot> due = queue.awaitDue(new ClusterClock(Clock.fixed(T, ZoneOffset.UTC)), new JobThreads(1));
        assertThat(due).as("the retry due now and the one waiting for a thread; not the peer's, nor the one running")
                .containsExactlyInAnyOrder(retry, waiting);

        DueSlot inFlight = DueSlot.claim(JOB, T);
        inFlight.toStore();
        assertThatThrownBy(() -> queue.place(inFlight, T)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("CLAIMING");
    }

    /**
     * An older slot of the job waiting to be asked again (the store did not answer) goes with a
     * newer one that falls due before its retry, so that the claimer sees both and starts them in
     * slot order; another job's retry, a manual run's, and a newer slot's wait for their own time.
     */
    @Test
    void aSlotFallingDueTakesTheOlderSlotsOfItsJobWaitingForARetryAlong() throws InterruptedException {
        SlotQueue queue = new SlotQueue();
        DueSlot older = DueSlot.claim(JOB, T.minusSeconds(2));
        older.toStore();
        older.retryAt(T.plusMillis(200)); // unanswered: asked again in 250 ms
        ScheduledJob other = new ScheduledJob(new JobDefinition("other", CronSchedule.of("* * * * * *", ZoneOffset.UTC),
                Job.class.getName(), Map.of(), Duration.ofSeconds(5), Duration.ofSeconds(2), Overlap.SKIP, Duration.ZERO, true), ctx -> { });
        DueSlot otherJob = DueSlot.claim(other, T.minusSeconds(2));
        otherJob.toStore();
        otherJob.retryAt(T.plusMillis(200));
        DueSlot manual = DueSlot.manual(JOB, T.minusMillis(1_500));
        manual.toStore();
        manual.retryAt(T.plusMillis(200));
        DueSlot newer = DueSlot.claim(JOB, T.minusSeconds(1));
        newer.toStore();
        newer.retryAt(T);
        queue.place(List.of(older, otherJob, manual, newer), T);

        List<DueSlot> due = queue.awaitDue(new ClusterClock(Clock.fixed(T, ZoneOffset.UTC)), new JobThreads(1));
        assertThat(due).containsExactlyInAnyOrder(newer, older);
    }

    private static void move(Map<String, Consumer<DueSlot>> moves, Map<String, Set<Stage>> allowed, String name,
            Consumer<DueSlot> move, Set<Stage> from) {
        moves.put(name, move);
        allowed.put(name, from);
    }

    private static final AtomicInteger SLOTS = new AtomicInteger();

    /** A fresh slot brought to {@code stage} by legal moves only. */
    private static DueSlot in(Stage stage) {
        Instant slot = T.plusSeconds(SLOTS.incrementAndGet());
        DueSlot d = switch (stage) {
            case UNSHARED, STEPPED_ASIDE, STAGED -> DueSlot.scheduled(JOB, slot);
            case MISS_ONLY -> DueSlot.missed(JOB, slot, "late", "late", slot);
            case CHAINED -> DueSlot.catchUp(JOB, slot, slot.plusSeconds(60), slot);
            default -> DueSlot.claim(JOB, slot);
        };
        switch (stage) {
            case STEPPED_ASIDE -> d.stepAside("b", slot);
            case CHAINED -> DueSlot.catchUp(JOB, slot.minusMillis(1), slot.plusSeconds(60), slot).then(d);
            case WAITING_THREAD -> d.awaitThread();
            case CLAIMING -> d.toStore();
            case REPORTED -> {
                d.toStore();
                d.reported("outage", "outage");
            }
            case STAGED -> {
                d.ours();
                d.toStore();
                d.won(true);
            }
            case RUNNING -> {
                d.toStore();
                d.won(false);
            }
            case DECIDED -> {
                d.toStore();
                d.decided();
            }
            default -> { }
        }
        return d;
    }
}
