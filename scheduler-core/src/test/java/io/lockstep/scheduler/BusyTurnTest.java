package io.lockstep.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lockstep.scheduler.cron.CronSchedule;
import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.ClaimResult;
import io.lockstep.scheduler.lock.Completion;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.Outcome;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A rerun behind a live run that holds its job's exclusive lease (review m3 of 2026-12-04): it was
 * asked every 250 ms for that run's whole length; a back-off alone let it starve behind a frequent
 * job's back-to-back runs. Now a rerun answered busy holds the job's next turn in the store, so later
 * slots yield to it once the lease is free, and its worker backs off from 250 ms to 2 s.
 */
class BusyTurnTest {

    @RegisterExtension
    final SchedulerHarness harness = new SchedulerHarness();

    /** A run of {@code job} at {@code slot} whose worker died: its 300 ms lease runs out with no outcome. */
    private static void deadRun(FaultyStore store, String job, Instant slot) {
        store.store.claim(List.of(new ClaimRequest(new Lease(job, slot, "dead", Duration.ofMillis(300), true), "gone",
                Duration.ofSeconds(30), false)));
        await().atMost(Duration.ofSeconds(5)).until(() -> store.store.runsInFlight(List.of(job)).get(0).expired().contains(slot));
    }

    @Test
    void aRerunBehindALongLiveRunBacksOffAndRunsOnceTheLeaseFrees() {
        FaultyStore store = new FaultyStore();
        Instant dead = Instant.now().truncatedTo(ChronoUnit.SECONDS).minusSeconds(2);
        deadRun(store, "yearly", dead);
        // A later run, live, holds the job's exclusive lease for a minute.
        Lease live = new Lease("yearly", dead.plusSeconds(1), "live", Duration.ofMinutes(1), true);
        assertThat(store.store.claim(List.of(new ClaimRequest(live, "peer", Duration.ofSeconds(30), false))).get(0).status())
                .isEqualTo(ClaimResult.Status.CLAIMED);
        List<Instant> reruns = new CopyOnWriteArrayList<>();
        JobDefinition yearly = new JobDefinition("yearly", CronSchedule.of("0 0 0 1 1 ?", ZoneOffset.UTC), Job.class.getName(), Map.of(),
                Duration.ofSeconds(2), Duration.ofSeconds(10), Overlap.SKIP, Duration.ZERO, true).withRecover(Recover.RERUN);
        harness.start(Scheduler.builder(store).workerId("w").job(yearly).jobFactory(d -> ctx -> reruns.add(ctx.scheduledTime())));
        String key = "yearly@" + dead;
        await().atMost(Duration.ofSeconds(30)).until(() -> store.requestNanos.getOrDefault(key, List.of()).size() >= 6);
        List<Long> asked = store.requestNanos.get(key);
        // Waits of at least 250, 500, 1000, 2000 and 2000 ms (a loaded machine only makes them longer);
        // asked every 250 ms, the sixth request came 1.25 s after the first.
        assertThat((asked.get(5) - asked.get(0)) / 1_000_000).as("ms from the first request to the sixth").isGreaterThanOrEqualTo(5_750);
        assertThat(reruns).as("never beside the live run").isEmpty();
        store.store.complete(List.of(new Completion(live, Outcome.SUCCEEDED)));
        await().atMost(Duration.ofSeconds(15)).until(() -> !reruns.isEmpty());
        harness.closeAll();
        assertThat(reruns).containsExactly(dead);
    }

    /**
     * The case that starved the back-off alone: a job every second whose runs take 950 ms, so its
     * lease is free only for moments between them. The rerun answered busy takes the next turn: the
     * first slot that finds the lease free is skipped (overlap: skip) and the rerun runs.
     */
    @Test
    void aRerunBehindBackToBackRunsGetsTheNextTurn() {
        FaultyStore store = new FaultyStore();
        Instant dead = Instant.now().truncatedTo(ChronoUnit.SECONDS).minusSeconds(3);
        deadRun(store, "busy", dead);
        List<Instant> ran = new CopyOnWriteArrayList<>();
        JobDefinition busy = new JobDefinition("busy", CronSchedule.of("* * * * * *", ZoneOffset.UTC), Job.class.getName(), Map.of(),
                Duration.ofSeconds(3), Duration.ofSeconds(1), Overlap.SKIP, Duration.ZERO, true).withRecover(Recover.RERUN);
        harness.start(Scheduler.builder(store).workerId("w").threads(4).job(busy).jobFactory(d -> ctx -> {
            ran.add(ctx.scheduledTime());
            Thread.sleep(950); // the job's work (not a wait for an outcome): the next slot comes due 50 ms after it ends
        }));
        String key = "busy@" + dead;
        await().atMost(Duration.ofSeconds(20)).until(() -> !store.requestModes.getOrDefault(key, List.of()).isEmpty());
        // Without the turn, a rerun asked every 2 s hits a 50 ms gap about one time in forty.
        await().atMost(Duration.ofSeconds(8)).until(() -> ran.contains(dead));
        harness.closeAll();
        assertThat(ran).filteredOn(dead::equals).as("the rerun ran once").hasSize(1);
    }
}
