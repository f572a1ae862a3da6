package io.lockstep.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.lockstep.scheduler.cron.CronSchedule;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The slots waiting for a job thread: the tick takes only what can go (the expired ones and the
 * oldest as many as threads are free), and a job's waiting slot holds its newer slots back, not its older.
 */
class WaitingTest {

    private static final Instant T = Instant.parse("2026-11-30T12:00:00Z");

    private static ScheduledJob job(String name) {
        return job(name, Duration.ofSeconds(2));
    }

    private static ScheduledJob job(String name, Duration grace) {
        return new ScheduledJob(new JobDefinition(name, CronSchedule.of("* * * * * *", ZoneOffset.UTC), Job.class.getName(), Map.of(),
                Duration.ofSeconds(5), grace, Overlap.SKIP, Duration.ZERO, true), ctx -> { });
    }

    @Test
    void theEarliestDeadlineAndTheExpiredAreFoundWhateverEachJobsGrace() {
        Waiting w = new Waiting();
        w.add(waiting(job("long", Duration.ofSeconds(30)), T));
        w.add(waiting(job("short", Duration.ofSeconds(1)), T.plusSeconds(5)));
        w.add(waiting(job("mid", Duration.ofSeconds(10)), T.plusSeconds(2)));
        assertThat(w.earliestDeadline(T.plusSeconds(60))).isEqualTo(T.plusSeconds(6));
        assertThat(w.earliestDeadline(T.plusSeconds(3))).as("the fallback when earlier").isEqualTo(T.plusSeconds(3));
        List<DueSlot> expired = w.take(T.plusMillis(6500), 0, d -> false);
        assertThat(expired).as("only the short-grace slot has passed its deadline, though it is the newest")
                .singleElement().satisfies(d -> assertThat(d.definition().name()).isEqualTo("short"));
        assertThat(w.size()).isEqualTo(2);
    }

    private static DueSlot waiting(ScheduledJob job, Instant slot) {
        DueSlot d = DueSlot.scheduled(job, slot);
        d.ours();
        d.awaitThread();
        return d;
    }

    @Test
    void aBacklogGivesTheTickOnlyWhatCanGoOldestFirst() {
        Waiting w = new Waiting();
        List<ScheduledJob> jobs = new ArrayList<>();
        for (int i = 0; i < 1000; i++) {
            jobs.add(job("job-" + i));
        }
        for (int s = 3; s >= 0; s--) { // added newest first: taken oldest first all the same
            for (ScheduledJob j : jobs) {
                w.add(waiting(j, T.plusSeconds(s)));
            }
        }
        Instant now = T.plusMillis(2500); // the slots at T are past their 2 s grace; the rest may start
        List<DueSlot> taken = w.take(now, 8, d -> false);
        assertThat(taken).hasSize(1000 + 8);
        assertThat(taken.subList(0, 1000)).allSatisfy(d -> assertThat(d.slot).isEqualTo(T));
        assertThat(taken.subList(1000, 1008)).allSatisfy(d -> assertThat(d.slot).isEqualTo(T.plusSeconds(1)));
        assertThat(w.size()).isEqualTo(3000 - 8);
        assertThat(w.take(now, 0, d -> false)).as("no thread free, nothing expired: nothing").isEmpty();
    }

    /** A job whose slots must wait (it catches up) is passed over without a thread: the others get the threads. */
    @Test
    void aHeldJobsSlotsDoNotKeepTheThreadsFromTheOthers() {
        Waiting w = new Waiting();
        ScheduledJob blocked = job("blocked");
        ScheduledJob other = job("other");
        for (int s = 0; s < 5; s++) {
            w.add(waiting(blocked, T.plusMillis(100 * s)));
        }
        w.add(waiting(other, T.plusSeconds(1)));
        List<DueSlot> taken = w.take(T.plusMillis(1500), 2, d -> d.definition().name().equals("blocked"));
        assertThat(taken).extracting(d -> d.definition().name()).containsExactly("other");
        assertThat(w.size()).isEqualTo(5);
        assertThat(w.holdsOlder("blocked", T.plusSeconds(9))).isTrue();
    }

    @Test
    void aWaitingSlotHoldsBackItsJobsNewerSlotsNotItsOlderOnes() {
        Waiting w = new Waiting();
        ScheduledJob a = job("a");
        w.add(waiting(a, T.plusSeconds(1)));
        assertThat(w.holdsOlder("a", T.plusSeconds(2))).as("a newer slot waits behind it").isTrue();
        assertThat(w.holdsOlder("a", T.plusSeconds(1))).as("itself").isFalse();
        assertThat(w.holdsOlder("a", T)).as("an older slot goes first").isFalse();
        assertThat(w.holdsOlder("b", T.plusSeconds(2))).isFalse();
        assertThat(w.take(T.plusMillis(1100), 1, d -> false)).hasSize(1);
        assertThat(w.holdsOlder("a", T.plusSeconds(2))).as("once taken, it holds nothing back").isFalse();
    }
}
