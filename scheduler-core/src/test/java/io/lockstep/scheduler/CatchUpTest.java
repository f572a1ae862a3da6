package io.lockstep.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lockstep.scheduler.cron.CronSchedule;
import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.InMemoryLockProvider;
import io.lockstep.scheduler.lock.Lease;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A worker starting after the whole cluster was down: the catch-up chain holds the job's newer
 * slots back, and slots older than the catch-up keeps are counted in one event. On the in-memory
 * store, whose last decided slot the test seeds.
 */
class CatchUpTest {

    private static final CronSchedule EVERY_SECOND = CronSchedule.of("* * * * * *", ZoneOffset.UTC);

    @RegisterExtension
    final SchedulerHarness harness = new SchedulerHarness();

    private static JobDefinition job(String name, Duration grace) {
        return new JobDefinition(name, EVERY_SECOND, Job.class.getName(), Map.of(), Duration.ofSeconds(5), grace,
                Overlap.ALLOW, Duration.ZERO, true);
    }

    /** Records {@code slot} of {@code job} as decided (missed) in the store, as the last worker to run did. */
    private static void seedLastDecided(InMemoryLockProvider store, String job, Instant slot) {
        store.claim(List.of(new ClaimRequest(new Lease(job, slot, "seed", Duration.ofSeconds(5), false), "seed",
                Duration.ofSeconds(1), true)));
        assertThat(store.lastSlots(List.of(job))).containsEntry(job, slot);
    }

    @Test
    void theJobsRegularSlotsStartOnlyAfterTheCatchUpChainAndInSlotOrder() {
        FaultyStore store = new FaultyStore();
        // The cluster last decided a slot eight seconds ago: six or seven slots past their 1 s grace to catch up.
        Instant last = Instant.now().truncatedTo(ChronoUnit.SECONDS).minusSeconds(8);
        seedLastDecided(store.store, "chain", last);
        // Each catch-up claim takes 600 ms, so the job's regular slots fall due while the chain is decided.
        store.catchUpClaimDelayMillis = 600;
        List<Instant> startOrder = new CopyOnWriteArrayList<>();
        harness.start(Scheduler.builder(store).workerId("w").job(job("chain", Duration.ofSeconds(1)).withCatchUp(CatchUp.ALL, Duration.ofHours(1)))
                .jobFactory(d -> ctx -> startOrder.add(ctx.scheduledTime())));
        // A slot three seconds on is no catch-up slot, and with the chain's claims at 600 ms each it falls
        // due while the chain is still being decided.
        Instant later = Instant.now().truncatedTo(ChronoUnit.SECONDS).plusSeconds(3);
        await().atMost(Duration.ofSeconds(30)).until(() -> startOrder.stream().anyMatch(s -> !s.isBefore(later)));
        // In order (guarantee 10) is the order the slots are decided and handed to job threads, with
        // tokens in that order: two runs of this overlap: allow job handed out a millisecond apart
        // (the chain's last and the first regular slot) begin on their own threads in no set order.
        List<Map<String, Object>> events = harness.events().all();
        List<Map<String, Object>> claims = events.stream().filter(e -> "slot_claimed".equals(e.get("event"))).toList();
        List<Instant> claimOrder = claims.stream().map(e -> Instant.parse((String) e.get("slot"))).toList();
        assertThat(claimOrder).as("slots decided in slot order").isSorted().doesNotHaveDuplicates();
        assertThat(claims.stream().map(e -> Long.parseLong(String.valueOf(e.get("fencing_token")))).toList()).as("tokens in slot order").isSorted();
        assertThat(startOrder).as("each started once, as claimed").doesNotHaveDuplicates().isSubsetOf(claimOrder);
        List<Instant> chain = events.stream().filter(e -> "slot_claimed".equals(e.get("event")) && Boolean.TRUE.equals(e.get("catch_up")))
                .map(e -> Instant.parse((String) e.get("slot"))).toList();
        assertThat(chain).as("caught up, oldest first").hasSizeGreaterThanOrEqualTo(6).isSorted().first().isEqualTo(last.plusSeconds(1));
        Instant chainLast = chain.get(chain.size() - 1);
        // In the event order, no regular slot starts before the chain's last slot is decided (claimed).
        int lastLinkDecided = events.indexOf(events.stream().filter(e -> "slot_claimed".equals(e.get("event"))
                && chainLast.toString().equals(e.get("slot"))).findFirst().orElseThrow());
        for (int i = 0; i < lastLinkDecided; i++) {
            Map<String, Object> e = events.get(i);
            if ("job_started".equals(e.get("event"))) {
                assertThat(Instant.parse((String) e.get("slot"))).as("started before the chain's last slot was decided").isBeforeOrEqualTo(chainLast);
            }
        }
        assertThat(claimOrder.subList(0, chain.size())).as("the chain first").containsExactlyElementsOf(chain);
        // The slots that fell due while the chain was decided were held, and past their grace reported
        // (held past it, or let go by the chain's end too late to start), not started out of order. A
        // tick that falls behind on a loaded machine reports a slot as this worker's lag instead.
        assertThat(harness.events().named("slot_missed")).isNotEmpty().allSatisfy(e -> assertThat((String) e.get("reason"))
                .isIn("an older slot of the job had not started within misfireGrace", "later than misfireGrace",
                        "this worker fell behind its schedule"));
        Instant firstRegular = claimOrder.get(chain.size());
        assertThat(SlotCoverage.silent(harness.events().handledPerSlot().keySet(), List.of("chain"), last.plusSeconds(1),
                firstRegular, Duration.ofSeconds(1))).as("slots neither started nor reported").isEmpty();
    }

    @Test
    void slotsOlderThanTheCatchUpKeepsAreReportedInOneEventWithTheirCountAndRange() {
        AtomicLong offset = new AtomicLong();
        InMemoryLockProvider store = InMemoryLockProvider.withClock(() -> System.currentTimeMillis() + offset.get());
        // The cluster last decided a slot three hours ago: 10,800 slots missed, more than the 10,000 reported one by one.
        Instant last = Instant.now().truncatedTo(ChronoUnit.SECONDS).minus(Duration.ofHours(3));
        offset.set(last.toEpochMilli() + 10 - System.currentTimeMillis()); // decided at its time, by the store's clock
        seedLastDecided(store, "gone", last);
        offset.set(0);
        harness.start(Scheduler.builder(store).workerId("w").job(job("gone", Duration.ofSeconds(1)).withCatchUp(CatchUp.NONE, Duration.ofHours(4)))
                .jobFactory(d -> ctx -> { }));
        await().atMost(Duration.ofSeconds(60)).until(() -> oneByOne().size() >= CatchUpPlan.MAX_CATCH_UP_SLOTS);
        // Two more slots started after the reports: a second slots_missed would have shown by then.
        int started = harness.events().named("job_started").size();
        await().atMost(Duration.ofSeconds(10)).until(() -> harness.events().named("job_started").size() >= started + 2);

        List<Instant> reported = oneByOne().stream().sorted().toList();
        assertThat(reported).hasSize(CatchUpPlan.MAX_CATCH_UP_SLOTS).doesNotHaveDuplicates();
        assertThat(Duration.between(reported.get(0), reported.get(reported.size() - 1)).toSeconds())
                .as("one by one: the newest, contiguous").isEqualTo(CatchUpPlan.MAX_CATCH_UP_SLOTS - 1);
        Map<String, Object> counted = harness.events().named("slots_missed").stream().collect(Collectors.collectingAndThen(
                Collectors.toList(), list -> {
                    assertThat(list).as("slots_missed events").hasSize(1);
                    return list.get(0);
                }));
        Instant from = Instant.parse((String) counted.get("from"));
        Instant to = Instant.parse((String) counted.get("to"));
        assertThat(counted).containsEntry("level", "WARN").containsEntry("job", "gone");
        assertThat(from).as("from: the first slot after the last decided").isEqualTo(last.plusSeconds(1));
        assertThat(to.plusSeconds(1)).as("to: just before the first slot reported one by one").isEqualTo(reported.get(0));
        assertThat(((Number) counted.get("count")).longValue()).as("count: every slot from..to")
                .isEqualTo(Duration.between(from, to).toSeconds() + 1);
        // Nothing in between is silent: the counted range and the one-by-one reports meet.
        Set<String> handled = new HashSet<>(harness.events().handledPerSlot().keySet());
        for (Instant s = from; !s.isAfter(to); s = s.plusSeconds(1)) {
            handled.add(SlotCoverage.key("gone", s));
        }
        assertThat(SlotCoverage.silent(handled, List.of("gone"), from, reported.get(reported.size() - 1), Duration.ofSeconds(1))).isEmpty();
    }

    private static JobDefinition everyMinute(String name) {
        return new JobDefinition(name, CronSchedule.of("0 * * * * *", ZoneOffset.UTC), Job.class.getName(), Map.of(),
                Duration.ofSeconds(5), Duration.ofSeconds(1), Overlap.SKIP, Duration.ZERO, true).withCatchUp(CatchUp.ALL, Duration.ofHours(1));
    }

    /**
     * Review m6: a job disabled while the cluster ran, then re-enabled by a restart, caught up (here:
     * ran) every slot of the period it was disabled, while a reload that re-enables it starts it at
     * its next slot. The restart now owes only the slots that passed while it was not disabled.
     */
    @Test
    void aRestartThatReEnablesADisabledJobDoesNotCatchUpThePeriodItWasDisabled() {
        awayFromAMinuteBoundary();
        AtomicLong offset = new AtomicLong();
        InMemoryLockProvider store = InMemoryLockProvider.withClock(() -> System.currentTimeMillis() + offset.get());
        Instant t0 = Instant.now().truncatedTo(ChronoUnit.MINUTES).minus(Duration.ofMinutes(30));
        java.util.function.Consumer<Instant> at = t -> offset.set(t.toEpochMilli() - System.currentTimeMillis());
        // 30 minutes ago the job's slot was decided, and it was enabled...
        at.accept(t0.plusMillis(10));
        seedLastDecided(store, "report", t0);
        store.stampInForce(List.of("report", "other"), List.of(), false);
        // ...then a restart disabled it (enabled: false): twenty minutes of the keeper's stamps...
        for (int m = 1; m <= 20; m++) {
            at.accept(t0.plus(Duration.ofMinutes(m)));
            store.stampInForce(List.of("other"), List.of("report"), false);
        }
        // ...then every worker was down for ten, and now one starts with the job enabled again.
        offset.set(0);
        // Slots more than their 1 s grace older than this instant are past due when the worker starts: caught up.
        Instant beforeStart = Instant.now();
        harness.start(Scheduler.builder(store).workerId("w").job(everyMinute("report")).jobFactory(d -> ctx -> { }));

        // Out of force from its first disabled stamp, but no sooner than 2 minutes (InForce.GAP) after its
        // last enabled one, to its last disabled stamp: the 2 minutes are the stamps' margin (owed, caught up).
        Instant outFrom = t0.plus(Duration.ofMinutes(3));
        Instant outTo = t0.plus(Duration.ofMinutes(20));
        long owed = 2 + Duration.between(outTo, beforeStart.minusSeconds(1)).toMinutes(); // t0+1m, t0+2m, then the outage
        await().atMost(Duration.ofSeconds(30)).until(() -> caughtUp().size() >= owed);
        assertThat(caughtUp()).as("caught up: the slots that passed while the job was not disabled, and only those")
                .allSatisfy(s -> assertThat(s.isBefore(outFrom) || s.isAfter(outTo)).as(s.toString()).isTrue())
                .doesNotHaveDuplicates().contains(t0.plus(Duration.ofMinutes(1)), outTo.plus(Duration.ofMinutes(1)));
        Map<String, Object> notOwed = harness.events().named("slots_not_owed").stream().findFirst().orElseThrow(
                () -> new AssertionError("no slots_not_owed event: " + harness.events().all()));
        assertThat(notOwed).containsEntry("job", "report").containsEntry("from", outFrom.toString())
                .containsEntry("to", outTo.toString()).containsEntry("count", 18L);
        assertThat(harness.events().all()).as("no slot of the disabled period is claimed or reported missed")
                .filteredOn(e -> e.get("slot") != null && "report".equals(e.get("job")))
                .allSatisfy(e -> {
                    Instant slot = Instant.parse((String) e.get("slot"));
                    assertThat(slot.isBefore(outFrom) || slot.isAfter(outTo)).as(e.toString()).isTrue();
                });
    }

    /**
     * A job enabled up to an outage, after which a worker of another config (which does not have the
     * job at all) started first: nothing says the job was disabled, so the whole outage is owed and
     * caught up (a first design inferred "out of force" from missing stamps and dropped these slots).
     */
    @Test
    void aJobEnabledUpToAnOutageCatchesUpTheWholeOutageWhoeverStartsFirst() {
        awayFromAMinuteBoundary();
        AtomicLong offset = new AtomicLong();
        InMemoryLockProvider store = InMemoryLockProvider.withClock(() -> System.currentTimeMillis() + offset.get());
        Instant t0 = Instant.now().truncatedTo(ChronoUnit.MINUTES).minus(Duration.ofMinutes(10));
        offset.set(t0.plusMillis(10).toEpochMilli() - System.currentTimeMillis());
        seedLastDecided(store, "report", t0);
        store.stampInForce(List.of("report", "other"), List.of(), false);
        offset.set(Duration.ofMinutes(-2).toMillis()); // two minutes ago, a worker whose config lacks the job started
        store.stampInForce(List.of("other"), List.of(), true);
        offset.set(0);
        // Counted from before the start: a start slow enough to cross a minute boundary must not count the
        // new minute's slot, which the worker claims as a regular slot (within its grace), not as catch-up.
        Instant beforeStart = Instant.now();
        harness.start(Scheduler.builder(store).workerId("w").job(everyMinute("report")).jobFactory(d -> ctx -> { }));
        long downSlots = Duration.between(t0, beforeStart.minusSeconds(1)).toMinutes();
        await().atMost(Duration.ofSeconds(30)).until(() -> caughtUp().size() >= downSlots);
        assertThat(caughtUp()).first().isEqualTo(t0.plus(Duration.ofMinutes(1)));
        assertThat(harness.events().named("slots_not_owed")).isEmpty();
    }

    /**
     * Waits until the wall clock is 2-45 s into a minute, so that the catch-up chain (a few seconds)
     * ends before the job's next regular slot falls due. A regular slot that falls due during the
     * chain, past its 1 s grace, has its miss (code order) recorded before the chain's last links,
     * and the store then reads those as too old to decide (stale): a known order edge, left open for
     * the claim protocol's rework (issue 34; CI saw it twice), not what these tests are about.
     */
    private static void awayFromAMinuteBoundary() {
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100)).until(() -> {
            int second = java.time.LocalTime.now(ZoneOffset.UTC).getSecond();
            return second >= 2 && second <= 45;
        });
    }

    /** The slots of "report" claimed as catch-up. */
    private List<Instant> caughtUp() {
        return harness.events().named("slot_claimed").stream()
                .filter(e -> "report".equals(e.get("job")) && Boolean.TRUE.equals(e.get("catch_up")))
                .map(e -> Instant.parse((String) e.get("slot"))).toList();
    }

    /** The slots of "gone" reported missed one by one because no worker was running. */
    private List<Instant> oneByOne() {
        return harness.events().named("slot_missed").stream()
                .filter(e -> "gone".equals(e.get("job")) && ((String) e.get("reason")).contains("no worker was running"))
                .map(e -> Instant.parse((String) e.get("slot"))).toList();
    }
}
