package io.lockstep.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.lockstep.scheduler.cron.CronSchedule;
import io.lockstep.scheduler.lock.ClaimedThrough;
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
 * The preferred claimer's bookkeeping, on a fixed instant, without threads: who gets which slot,
 * and when a peer may trust a worker's word that its slots are decided. The store is the
 * in-memory one (it keeps the words like Redis does); the live workers are given.
 */
class PreferenceTest {

    private static final Instant T = Instant.parse("2026-11-30T12:00:00Z");
    private static final String CONFIG = "cfg";

    private final InMemoryLockProvider store = InMemoryLockProvider.withClock(T::toEpochMilli);
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
            this.id = id;
            this.live.set(List.of(live));
            this.preference = new Preference(store, id, () -> this.live.get().stream().map(PreferenceTest::worker).toList(),
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
            assertThat(mine).allSatisfy(d -> assertThat(d.standing).isEqualTo(DueSlot.Standing.OWN));
            assertThat(mine).as("worker %s gets a share", w.id).isNotEmpty();
            mine.forEach(d -> own.add(d.definition().name()));
        }
        assertThat(own).as("each slot is exactly one worker's").hasSize(jobs.size()).doesNotHaveDuplicates();
    }

    @Test
    void aPeerStepsAsideOnlyOnceThePreferredClaimerSaysItsSlotsAreDecided() {
        Worker a = new Worker("a", "a", "b");
        Worker b = new Worker("b", "a", "b");
        List<DueSlot> ownOfA = a.share(T);
        b.share(T); // b's copies of a's slots wait for the backoff
        tell(a, T.plusSeconds(1));
        assertThat(store.claimedThrough(List.of("a"))).as("nothing said while a's slots are undecided").isEmpty();

        assertThat(b.preference.sift(dueAgain(b), b.queue, T.plus(Preference.BACKOFF)))
                .as("without a's word, b claims a's slots itself").hasSize(ownOfA.size());

        ownOfA.forEach(a.preference::decided);
        tell(a, T.plusSeconds(1));
        Worker b2 = new Worker("b", "a", "b");
        b2.share(T);
        assertThat(b2.preference.sift(dueAgain(b2), b2.queue, T.plus(Preference.BACKOFF)))
                .as("with it, b steps aside for every one of them").isEmpty();
        // It never asked the store, so it looks for those runs dead once their lease would have run out.
        Instant leaseOut = T.plus(Duration.ofSeconds(5)).plus(Recovery.LOOK_MARGIN);
        assertThat(b2.queue.looksDue(leaseOut.minusMillis(1))).isEmpty();
        assertThat(b2.queue.looksDue(leaseOut)).containsExactlyInAnyOrderElementsOf(
                ownOfA.stream().map(d -> d.definition().name()).toList());
    }

    @Test
    void aWordNeverCoversASlotNotSharedOutYet() {
        Worker a = new Worker("a", "a", "b");
        List<DueSlot> ownOfA = a.share(T);
        ownOfA.forEach(a.preference::decided);
        tell(a, T); // the job's next slots are queued, but one is due at T itself: not shared yet
        ClaimedThrough word = store.claimedThrough(List.of("a")).get("a");
        assertThat(word == null || word.through() < T.toEpochMilli()).isTrue();
    }

    @Test
    void afterTheViewChangesAWordCoversNoSlotSharedUnderTheOldOne() {
        Worker a = new Worker("a", "a", "b");
        a.share(T).forEach(a.preference::decided);
        tell(a, T.plusSeconds(2));
        assertThat(store.claimedThrough(List.of("a")).get("a").through()).isGreaterThanOrEqualTo(T.toEpochMilli());

        a.live.set(List.of("a", "b", "c")); // c joins: a and b may now see different views for a while
        a.share(T.plusSeconds(1)).forEach(a.preference::decided);
        tell(a, T.plusSeconds(2));
        ClaimedThrough word = store.claimedThrough(List.of("a")).get("a");
        assertThat(word.since()).as("the new word starts past every slot shared under the old view")
                .isGreaterThan(T.toEpochMilli());
        assertThat(word.covers(word.view(), T.plusSeconds(1).toEpochMilli())).isTrue();
    }

    /** Ends a tick of {@code w} whose followers were queued, the earliest of them at {@code nextUnshared}. */
    private void tell(Worker w, Instant nextUnshared) {
        w.queue.addAll(List.of(DueSlot.scheduled(jobs.get(0), nextUnshared)));
        w.preference.tell(w.queue);
    }

    /** The slots a worker left to a peer, as they fall due again after the backoff. */
    private static List<DueSlot> dueAgain(Worker w) {
        return w.shared.stream().filter(d -> d.standing == DueSlot.Standing.PEER).toList();
    }
}
