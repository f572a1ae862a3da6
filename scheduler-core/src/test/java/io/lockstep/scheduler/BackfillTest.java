package io.lockstep.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lockstep.scheduler.cron.CronSchedule;
import io.lockstep.scheduler.lock.Backfill;
import io.lockstep.scheduler.lock.InMemoryLockProvider;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Backfills on an in-memory store: every undecided slot of the range runs once, in slot order,
 * decided ones are left alone and counted, a cancel stops it, and two workers that both drive it
 * (the in-memory store's heartbeat knows only its caller, so each thinks itself the driver) still
 * run each slot once and in order: the store's cursor, not the choice of driver, keeps that.
 */
class BackfillTest {

    @RegisterExtension
    final SchedulerHarness harness = new SchedulerHarness();

    private static JobDefinition everySecond(String name) {
        return new JobDefinition(name, CronSchedule.of("* * * * * *", ZoneOffset.UTC), Job.class.getName(), Map.of(),
                Duration.ofSeconds(5), Duration.ofSeconds(2), Overlap.SKIP, Duration.ZERO, true);
    }

    /** Every run's slot, in the order the runs started, and whether each was a backfill's. */
    private final List<Instant> started = Collections.synchronizedList(new ArrayList<>());

    /** Asks for a backfill of one of {@link #everySecond}'s jobs, as {@code lockstep backfill} does (the plan checks it first). */
    private static Backfill ask(InMemoryLockProvider store, String job, Instant from, Instant to, double perSecond) {
        return BackfillPlan.of(everySecond(job), from, to, store).request(store, perSecond, "test");
    }

    private static java.util.Optional<Backfill.Progress> progress(InMemoryLockProvider store, String job) {
        return store.backfills().stream().filter(e -> e.backfill().job().equals(job) && e.progress() != null)
                .map(Backfill.Entry::progress).findFirst();
    }

    private static boolean ended(InMemoryLockProvider store, String job) {
        return progress(store, job).filter(Backfill.Progress::ended).isPresent();
    }

    private Scheduler.Builder worker(InMemoryLockProvider store, String id, String... jobs) {
        Scheduler.Builder b = Scheduler.builder(store).workerId(id).jobFactory(d -> ctx -> started.add(ctx.scheduledTime()));
        for (String job : jobs) {
            b.job(everySecond(job));
        }
        return b;
    }

    @Test
    void everyUndecidedSlotRunsOnceInOrderAndDecidedOnesAreCounted() {
        InMemoryLockProvider store = InMemoryLockProvider.create();
        Instant begun = Instant.now().truncatedTo(ChronoUnit.SECONDS);
        harness.start(worker(store, "w1", "report"));
        await().atMost(Duration.ofSeconds(10)).until(() -> harness.events().named("job_succeeded", "report").size() >= 3);
        Instant from = begun.minusSeconds(40);
        Instant to = begun.plusSeconds(2); // reaches into the slots the schedule itself ran
        Backfill b = ask(store, "report", from, to, 50);

        await().atMost(Duration.ofSeconds(20)).until(() -> ended(store, "report"));
        Backfill.Progress p = progress(store, "report").orElseThrow();
        assertThat(p.state()).isEqualTo("done");
        assertThat(p.total()).as("the slots of the range, up to misfireGrace and a second ago").isBetween(41L, 43L);
        assertThat(p.passed()).isEqualTo(p.total());
        assertThat(p.ran()).as("every slot before the workers started").isGreaterThanOrEqualTo(40);
        harness.closeAll();

        List<Instant> runs = List.copyOf(started);
        Set<Instant> once = new java.util.HashSet<>();
        assertThat(runs).allSatisfy(s -> assertThat(once.add(s)).as("slot %s ran twice", s).isTrue());
        for (Instant s = from; s.isBefore(begun); s = s.plusSeconds(1)) {
            assertThat(runs).as("backfilled %s", s).contains(s);
        }
        List<Instant> backfilled = harness.events().named("slot_claimed", "report").stream()
                .filter(e -> "backfill".equals(e.get("origin"))).map(e -> Instant.parse((String) e.get("slot"))).toList();
        assertThat(backfilled).hasSize((int) p.ran()).isSorted();
        assertThat(harness.events().named("slot_claimed", "report")).filteredOn(e -> "backfill".equals(e.get("origin")))
                .allSatisfy(e -> assertThat(e).containsEntry("backfill", b.id()).doesNotContainKey("catch_up"));
        assertThat(harness.events().named("job_started", "report")).filteredOn(e -> backfilled.contains(Instant.parse((String) e.get("slot"))))
                .allSatisfy(e -> assertThat(e).containsEntry("origin", "backfill"));
        assertThat(harness.events().named("backfill_ended", "report")).hasSize(1);
    }

    @Test
    void aCancelledBackfillClaimsNothingMore() {
        InMemoryLockProvider store = InMemoryLockProvider.create();
        Instant begun = Instant.now().truncatedTo(ChronoUnit.SECONDS);
        harness.start(worker(store, "w1", "slow"));
        ask(store, "slow", begun.minusSeconds(100), begun.minusSeconds(1), 4);
        await().atMost(Duration.ofSeconds(15)).until(() -> backfilledRuns() >= 2);
        store.cancelBackfill("slow");
        long atCancel = backfilledRuns();
        await().atMost(Duration.ofSeconds(10)).until(() -> ended(store, "slow"));
        assertThat(progress(store, "slow").orElseThrow().state()).isEqualTo("cancelled");
        // One claim may have been on its way as the cancel landed; none after it.
        await().during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(4)).until(() -> backfilledRuns() <= atCancel + 1);
        assertThat(backfilledRuns()).isLessThan(99);
    }

    @Test
    void aBackfillWaitsWhileItsJobIsPausedAndGoesOnWhenResumed() {
        InMemoryLockProvider store = InMemoryLockProvider.create();
        Instant begun = Instant.now().truncatedTo(ChronoUnit.SECONDS);
        store.pause("held");
        harness.start(worker(store, "w1", "held"));
        ask(store, "held", begun.minusSeconds(20), begun.minusSeconds(11), 50);
        await().atMost(Duration.ofSeconds(10)).until(() -> progress(store, "held").isPresent());
        await().during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(4)).until(() -> backfilledRuns() == 0);
        store.resume("held");
        await().atMost(Duration.ofSeconds(15)).until(() -> ended(store, "held"));
        assertThat(progress(store, "held").orElseThrow().ran()).isEqualTo(10);
    }

    @Test
    void twoDriversAtOnceStillRunEachSlotOnceInOrder() {
        InMemoryLockProvider store = InMemoryLockProvider.create();
        Instant begun = Instant.now().truncatedTo(ChronoUnit.SECONDS);
        harness.start(worker(store, "w1", "twice"));
        harness.start(worker(store, "w2", "twice"));
        ask(store, "twice", begun.minusSeconds(60), begun.minusSeconds(5), 200);
        await().atMost(Duration.ofSeconds(20)).until(() -> ended(store, "twice"));
        await().atMost(Duration.ofSeconds(10)).until(() -> harness.events().named("backfill_ended", "twice").size() == 2);
        assertThat(harness.events().named("backfill_driving", "twice")).extracting(e -> e.get("worker")).as("both drove it")
                .containsExactlyInAnyOrder("w1", "w2");
        List<Instant> backfilled = harness.events().named("slot_claimed", "twice").stream()
                .filter(e -> "backfill".equals(e.get("origin"))).map(e -> Instant.parse((String) e.get("slot"))).toList();
        assertThat(backfilled).as("each slot once, in order, whichever worker claimed it").hasSize(56).doesNotHaveDuplicates().isSorted();
    }

    /**
     * A driver that handed the backfill over (a peer ranked first for a while: it woke from a stall,
     * say) takes it up again when that peer is gone; a driver whose store failed goes on at a later
     * heartbeat. Neither is left undriven.
     */
    @Test
    void aDriverTakesTheBackfillUpAgainAfterAHandOverAndAfterAFailedRead() {
        InMemoryLockProvider memory = InMemoryLockProvider.create();
        FaultyStore store = new FaultyStore(memory);
        Instant begun = Instant.now().truncatedTo(ChronoUnit.SECONDS);
        harness.start(Scheduler.builder(store).workerId("w1").jobFactory(d -> ctx -> started.add(ctx.scheduledTime()))
                .job(everySecond("handed")));
        await().atMost(Duration.ofSeconds(10)).until(() -> store.lastSelf != null);
        store.backfillViewFailures.set(1); // the first read fails: backfill_interrupted, then a later heartbeat goes on
        Backfill b = BackfillPlan.of(everySecond("handed"), begun.minusSeconds(110), begun.minusSeconds(5), memory).request(memory, 10, "test");
        // A peer of the same config that ranks above w1 for this backfill (nobody drives while it lives).
        io.lockstep.scheduler.lock.WorkerInfo self = store.lastSelf;
        long w1 = Preference.mix(Preference.hash("w1") ^ Preference.hash(b.id()));
        String peer = java.util.stream.IntStream.range(0, 1000).mapToObj(i -> "peer-" + i)
                .filter(id -> Preference.mix(Preference.hash(id) ^ Preference.hash(b.id())) > w1).findFirst().orElseThrow();
        await().atMost(Duration.ofSeconds(15)).until(() -> harness.events().named("backfill_interrupted", "handed").size() == 1
                && backfilledRuns() >= 5);
        store.peers.add(new io.lockstep.scheduler.lock.WorkerInfo(peer, "elsewhere", 1, self.version(), self.started(), 8, 0,
                self.configHash(), self.lastSeen(), false, java.util.Set.of()));
        await().atMost(Duration.ofSeconds(10)).until(() -> harness.events().named("backfill_handed_on", "handed").size() == 1);
        long atHandOver = backfilledRuns();
        // One slot in the claimer's hands as the drive stopped may still run; none after it.
        await().during(Duration.ofSeconds(4)).atMost(Duration.ofSeconds(8)).until(() -> backfilledRuns() <= atHandOver + 1);
        long handedAt = backfilledRuns();
        assertThat(handedAt).as("handed over midway").isLessThan(106);
        store.peers.clear(); // the peer is gone: w1 ranks first again
        await().atMost(Duration.ofSeconds(30)).until(() -> ended(memory, "handed"));
        assertThat(progress(memory, "handed").orElseThrow().state()).isEqualTo("done");
        List<Instant> backfilled = harness.events().named("job_started", "handed").stream()
                .filter(e -> "backfill".equals(e.get("origin"))).map(e -> Instant.parse((String) e.get("slot"))).toList();
        assertThat(backfilled).as("every slot once, in order, across the three drives").hasSize(106).doesNotHaveDuplicates().isSorted();
        assertThat(harness.events().named("backfill_driving", "handed")).hasSizeGreaterThanOrEqualTo(3);
    }

    private long backfilledRuns() {
        return harness.events().named("job_started").stream().filter(e -> "backfill".equals(e.get("origin"))).count();
    }
}
