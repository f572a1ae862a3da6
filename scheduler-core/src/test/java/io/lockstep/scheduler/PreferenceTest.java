package io.lockstep.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.lockstep.scheduler.cron.CronSchedule;
import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.Completion;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.Outcome;
import io.lockstep.scheduler.lock.StartRequest;
import io.lockstep.scheduler.lock.InMemoryLockProvider;
import io.lockstep.scheduler.lock.WorkerInfo;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The preferred claimer, on a fixed instant, without threads: who gets which slot, and what a peer
 * does after the backoff with the evidence of the slot records (claim a slot without one, step
 * aside for one that has one, and look at the runs once a lease that holds it would have run out).
 * The store is the in-memory one (same records as Redis); the live workers are given.
 */
class PreferenceTest {

    private static final Instant T = Instant.parse("2026-11-30T12:00:00Z");
    private static final String CONFIG = "cfg";

    /** Stages every claim made ahead (a claim at T for the slot T would else be the run's start, with its full lease). */
    private final InMemoryLockProvider store = InMemoryLockProvider.withClock(T::toEpochMilli).withStartWindow(Duration.ZERO);
    private final List<ScheduledJob> jobs = new ArrayList<>();

    PreferenceTest() {
        for (int i = 0; i < 40; i++) {
            JobDefinition d = new JobDefinition("job-" + i, CronSchedule.of("* * * * * *", ZoneOffset.UTC), Job.class.getName(),
                    Map.of(), Duration.ofSeconds(5), Duration.ofSeconds(2), Overlap.SKIP, Duration.ZERO, true);
            jobs.add(new ScheduledJob(d, ctx -> { }));
        }
    }

    /** One worker's view of the cluster: its Preference and its queue. */
    private final class Worker {
        final String id;
        final AtomicReference<List<String>> live = new AtomicReference<>();
        final Preference preference;
        final SlotQueue queue = new SlotQueue();
        /** The slots of the last {@link #share}, whatever became of them. */
        final List<DueSlot> shared = new ArrayList<>();

        Worker(String id, String... live) {
            this(store, id, live);
        }

        /** A worker that reads the store through {@code provider} (a faulty view of it). */
        Worker(io.lockstep.scheduler.lock.LockProvider provider, String id, String... live) {
            this.id = id;
            this.live.set(List.of(live));
            this.preference = new Preference(provider, id, () -> this.live.get().stream().map(PreferenceTest::worker).toList(),
                    () -> CONFIG, new Events(id));
        }

        /** Shares the scheduled slots at {@code slot} out; answers those to claim now. */
        List<DueSlot> share(Instant slot) {
            shared.clear();
            for (ScheduledJob job : jobs) {
                shared.add(DueSlot.scheduled(job, slot));
            }
            return preference.sift(new ArrayList<>(shared), queue, slot.minus(Preference.AHEAD));
        }
    }

    private static WorkerInfo worker(String id) {
        return new WorkerInfo(id, "host", 1, "dev", T, 8, 0, CONFIG, T);
    }

    @Test
    void everySlotIsSomeonesAndOnlyOnesAndTheyAgreeWithoutTalking() {
        Worker a = new Worker("a", "a", "b", "c");
        Worker b = new Worker("b", "a", "b", "c");
        Worker c = new Worker("c", "a", "b", "c");
        List<String> own = new ArrayList<>();
        for (Worker w : List.of(a, b, c)) {
            List<DueSlot> mine = w.share(T);
            assertThat(mine).allSatisfy(d -> {
                assertThat(d.stage()).isEqualTo(DueSlot.Stage.QUEUED);
                assertThat(d.ahead()).as("ours: claimed ahead").isEqualTo(Preference.AHEAD);
            });
            assertThat(mine).as("worker %s gets a share", w.id).isNotEmpty();
            mine.forEach(d -> own.add(d.definition().name()));
        }
        assertThat(own).as("each slot is exactly one worker's").hasSize(jobs.size()).doesNotHaveDuplicates();
    }

    @Test
    void aPeerClaimsASlotWithoutARecordAndStepsAsideForOneThatHasOne() {
        Worker a = new Worker("a", "a", "b");
        Worker b = new Worker("b", "a", "b");
        List<DueSlot> ownOfA = a.share(T);
        b.share(T); // b's copies of a's slots wait for the backoff
        assertThat(b.preference.sift(dueAgain(b), b.queue, T.plus(Preference.BACKOFF)))
                .as("no record yet (a is slow or gone): b claims a's slots itself").hasSize(ownOfA.size());

        List<ClaimRequest> claims = ownOfA.stream().map(PreferenceTest::stagedClaim).toList();
        assertThat(store.claim(claims)).allSatisfy(r -> assertThat(r.status()).isEqualTo(io.lockstep.scheduler.lock.ClaimResult.Status.CLAIMED));
        Worker b2 = new Worker("b", "a", "b");
        b2.share(T);
        assertThat(b2.preference.sift(dueAgain(b2), b2.queue, T.plus(Preference.BACKOFF)))
                .as("claimed ahead by a: b steps aside for every one").isEmpty();
        // Not started yet: b looks for those claims dead once their short lease would have run out.
        Instant shortLeaseOut = T.plus(ClaimRequest.STAGED_MARGIN).plus(Recovery.LOOK_MARGIN);
        assertThat(b2.queue.looks().looksDue(shortLeaseOut.minusMillis(1))).isEmpty();
        assertThat(b2.queue.looks().looksDue(shortLeaseOut)).containsExactlyInAnyOrderElementsOf(
                ownOfA.stream().map(d -> d.definition().name()).toList());
    }

    @Test
    void aPeerStepsAsideForADecidedSlotWithoutALook() {
        Worker a = new Worker("a", "a", "b");
        List<DueSlot> ownOfA = a.share(T);
        List<ClaimRequest> claims = ownOfA.stream().map(PreferenceTest::stagedClaim).toList();
        store.claim(claims);
        store.start(claims.stream().map(c -> new StartRequest(c.lease(), c.misfireGrace())).toList());
        store.complete(claims.stream().map(c -> new Completion(c.lease(), Outcome.SUCCEEDED)).toList());
        Worker b = new Worker("b", "a", "b");
        b.share(T);
        assertThat(b.preference.sift(dueAgain(b), b.queue, T.plus(Preference.BACKOFF))).isEmpty();
        assertThat(b.queue.looks().looksDue(T.plusSeconds(60))).as("nothing in flight to look at").isEmpty();
    }

    /**
     * m2 of the 2026-12-04 review: a read of the records that threw anything but a LockException
     * (a client bug) escaped the sift, and every slot of the tick was dropped. It is now "cannot be
     * read": the slots are claimed and the claim script decides (here: taken by the preferred one).
     */
    @Test
    void recordsThatCannotBeReadForAnUnexpectedReasonAreClaimedNotDropped() {
        Worker a = new Worker("a", "a", "b");
        List<DueSlot> ownOfA = a.share(T);
        store.claim(ownOfA.stream().map(PreferenceTest::stagedClaim).toList());
        FaultyStore buggy = new FaultyStore(store);
        buggy.slotStatesThrowBug = true;
        Worker b = new Worker(buggy, "b", "a", "b");
        b.share(T);
        List<DueSlot> again = dueAgain(b);
        assertThat(again).isNotEmpty();
        assertThat(b.preference.sift(new ArrayList<>(again), b.queue, T.plus(Preference.BACKOFF)))
                .as("every slot stepped aside for is claimed, the store decides").containsExactlyInAnyOrderElementsOf(again)
                .allSatisfy(d -> assertThat(d.stage()).isEqualTo(DueSlot.Stage.QUEUED));
        assertThat(buggy.slotStatesCalls.get()).isEqualTo(1);
    }

    private static ClaimRequest stagedClaim(DueSlot d) {
        JobDefinition def = d.definition();
        return new ClaimRequest(new Lease(def.name(), d.slot, "token-" + def.name(), def.lease(), true), "a", def.misfireGrace(),
                ClaimRequest.Mode.CLAIM, false, false, Preference.AHEAD);
    }

    /** The peer's copies of the slots it stepped aside for, due again after the backoff. */
    private static List<DueSlot> dueAgain(Worker w) {
        return new ArrayList<>(w.shared.stream().filter(d -> d.stage() == DueSlot.Stage.STEPPED_ASIDE).toList());
    }
}
