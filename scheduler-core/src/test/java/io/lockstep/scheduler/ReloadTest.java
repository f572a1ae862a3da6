package io.lockstep.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.lockstep.scheduler.cron.CronSchedule;
import io.lockstep.scheduler.lock.InMemoryLockProvider;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link Scheduler#update}: a running scheduler takes a new set of definitions without a stop
 * (issue 22). Real schedulers on the in-memory store; the worker's SIGHUP and file watch are
 * checked with real processes and Redis in the examples' {@code ReloadIT}.
 */
class ReloadTest {

    private static final CronSchedule EVERY_SECOND = CronSchedule.of("* * * * * *", ZoneOffset.UTC);
    private static final CronSchedule YEARLY = CronSchedule.of("0 0 0 1 1 ?", ZoneOffset.UTC);

    @RegisterExtension
    final SchedulerHarness harness = new SchedulerHarness();

    private static JobDefinition job(String name, CronSchedule cron, Map<String, Object> params) {
        return new JobDefinition(name, cron, Job.class.getName(), params, Duration.ofSeconds(5), Duration.ofSeconds(2),
                Overlap.ALLOW, Duration.ZERO, true);
    }

    private static JobDefinition disabled(JobDefinition d) {
        return new JobDefinition(d.name(), d.schedule(), d.jobClass(), d.params(), d.lease(), d.misfireGrace(), d.overlap(),
                d.timeout(), false);
    }

    @Test
    void anAddedJobStartsAtItsNextSlotAndARemovedJobsRunningRunFinishesAndIsClosedAfterIt() {
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch holding = new CountDownLatch(1);
        AtomicInteger closed = new AtomicInteger();
        class Holding implements Job, AutoCloseable {
            @Override
            public void execute(JobContext ctx) throws Exception {
                holding.countDown();
                release.await(20, TimeUnit.SECONDS);
            }

            @Override
            public void close() {
                closed.incrementAndGet();
            }
        }
        Scheduler s = harness.start(Scheduler.builder(InMemoryLockProvider.create()).workerId("w")
                .job(job("old", EVERY_SECOND, Map.of()))
                .jobFactory(d -> d.name().equals("old") ? new Holding() : ctx -> { }));
        await().atMost(Duration.ofSeconds(10)).until(() -> holding.getCount() == 0);

        Instant at = Instant.now();
        ScheduleUpdate update = s.update(List.of(job("new", EVERY_SECOND, Map.of())));
        assertThat(update.added()).containsExactly("new");
        assertThat(update.removed()).containsExactly("old");
        assertThat(closed).as("not closed under its running run").hasValue(0);

        await().atMost(Duration.ofSeconds(10)).until(() -> !harness.events().named("job_started", "new").isEmpty());
        assertThat(harness.events().named("job_started", "new"))
                .allSatisfy(e -> assertThat(Instant.parse((String) e.get("slot"))).as("the new job's slots").isAfter(at));
        release.countDown();
        await().atMost(Duration.ofSeconds(10)).until(() -> !harness.events().named("job_succeeded", "old").isEmpty());
        // Nothing new of the removed job: one second later, still only the run that was in flight.
        Instant settled = Instant.now().plusSeconds(2);
        await().atMost(Duration.ofSeconds(10)).until(() -> harness.events().named("job_started", "new").stream()
                .anyMatch(e -> !Instant.parse((String) e.get("slot")).isBefore(settled)));
        // (A slot claimed ahead before the update, at most the next second, still starts: it was won before.)
        assertThat(harness.events().named("job_started", "old"))
                .allSatisfy(e -> assertThat(Instant.parse((String) e.get("slot"))).isBefore(at.plusSeconds(1)));
        assertThat(harness.events().named("slot_claimed", "old"))
                .allSatisfy(e -> assertThat(Instant.parse((String) e.get("slot"))).as("old's claims").isBefore(at.plusSeconds(1)));
        assertThat(harness.events().named("schedule_updated")).singleElement()
                .satisfies(e -> assertThat(e).containsEntry("added", "new").containsEntry("removed", "old"));
        s.close();
        assertThat(closed).as("the removed job's instance, once at the stop").hasValue(1);
    }

    /**
     * Guarantee 12: a slot claimed ahead before the update runs under the definition it was claimed
     * under (here its params), the slots after it under the new one, and none is silent.
     */
    @Test
    void aSlotClaimedAheadBeforeAnUpdateRunsUnderTheOldDefinitionAndTheNextUnderTheNew() {
        Map<String, Object> seen = new ConcurrentHashMap<>();
        Scheduler s = harness.start(Scheduler.builder(InMemoryLockProvider.create()).workerId("w")
                .job(job("p", EVERY_SECOND, Map.of("v", 1)))
                .jobFactory(d -> ctx -> seen.put(ctx.scheduledTime().toString(), ctx.params().get("v"))));
        // A claim made ahead (50 ms ahead, the run's start): its slot is still to come when the update lands.
        Instant ahead = await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(5))
                .until(() -> harness.events().named("slot_claimed", "p").stream().map(e -> Instant.parse((String) e.get("slot")))
                        .filter(slot -> slot.isAfter(Instant.now().plusMillis(10))).findFirst(),
                java.util.Optional::isPresent).orElseThrow();
        Instant at = Instant.now();
        s.update(List.of(job("p", EVERY_SECOND, Map.of("v", 2))));
        assertThat(ahead).as("the claim ahead's slot is after the update").isAfter(at);
        Instant until = ahead.plusSeconds(3);
        await().atMost(Duration.ofSeconds(10)).until(() -> seen.containsKey(until.toString()));
        assertThat(seen.get(ahead.toString())).as("the slot claimed ahead before the update, %s", ahead).isEqualTo(1);
        for (Instant slot = ahead.plusSeconds(1); !slot.isAfter(until); slot = slot.plusSeconds(1)) {
            assertThat(seen.get(slot.toString())).as("slot %s, after the update", slot).isEqualTo(2);
        }
        Instant from = harness.events().named("job_started", "p").stream().map(e -> Instant.parse((String) e.get("slot")))
                .min(Instant::compareTo).orElseThrow(); // the first slot the scheduler had, before the update
        java.util.Set<String> handled = new java.util.HashSet<>();
        for (String name : List.of("job_started", "slot_missed", "slot_skipped")) {
            harness.events().named(name, "p").forEach(e -> handled.add(SlotCoverage.key("p", e.get("slot"))));
        }
        assertThat(SlotCoverage.silent(handled, List.of("p"), from, until, Duration.ofSeconds(1)))
                .as("no slot silent across the update").isEmpty();
    }

    @Test
    void aChangedCronTakesItsNextSlotFromTheUpdateAndAChangeNeverFiresARunByItself() {
        Scheduler s = harness.start(Scheduler.builder(InMemoryLockProvider.create()).workerId("w")
                .job(job("report", YEARLY, Map.of())).jobFactory(d -> ctx -> { }));
        Instant at = Instant.now();
        ScheduleUpdate update = s.update(List.of(job("report", CronSchedule.of("*/2 * * * * *", ZoneOffset.UTC), Map.of())));
        assertThat(update.changed()).containsExactly("report");
        Map<String, Object> first = await().atMost(Duration.ofSeconds(10))
                .until(() -> harness.events().named("job_started", "report"), l -> !l.isEmpty()).get(0);
        Instant slot = Instant.parse((String) first.get("slot"));
        // The new cron's first slot after the update, not the update instant: a whole, even second.
        Instant firstEven = Instant.ofEpochSecond(at.getEpochSecond() + (at.getEpochSecond() % 2 == 0 ? 2 : 1));
        assertThat(slot.getNano()).as("a whole second, not the update's instant %s", at).isZero();
        assertThat(slot.getEpochSecond() % 2).as("a slot of the new cron").isZero();
        assertThat(slot).as("no slot before the update's next even second").isAfterOrEqualTo(firstEven);

        // And back to yearly: no run from the change itself, none after it.
        Instant back = Instant.now();
        s.update(List.of(job("report", YEARLY, Map.of())));
        Instant later = Instant.now().plusSeconds(3);
        await().atMost(Duration.ofSeconds(10)).until(() -> Instant.now().isAfter(later));
        assertThat(harness.events().named("job_started", "report"))
                .allSatisfy(e -> assertThat(Instant.parse((String) e.get("slot"))).isBefore(back.plusMillis(1)));
    }

    @Test
    void anUpdateWhoseJobCannotBeCreatedChangesNothing() {
        AtomicInteger created = new AtomicInteger();
        Scheduler s = harness.start(Scheduler.builder(InMemoryLockProvider.create()).workerId("w")
                .job(job("steady", EVERY_SECOND, Map.of())).jobFactory(d -> {
                    if (d.name().equals("broken")) {
                        throw new IllegalStateException("no database");
                    }
                    created.incrementAndGet();
                    return ctx -> { };
                }));
        String hash = harness.events().named("worker_started").get(0).get("config_hash").toString();
        assertThatThrownBy(() -> s.update(List.of(job("steady", EVERY_SECOND, Map.of("x", 1)), job("broken", EVERY_SECOND, Map.of()))))
                .isInstanceOf(LockstepException.class).hasMessageContaining("job broken").hasMessageContaining("no database");
        int startsBefore = harness.events().named("job_started", "steady").size();
        await().atMost(Duration.ofSeconds(10)).until(() -> harness.events().named("job_started", "steady").size() >= startsBefore + 2);
        assertThat(harness.events().named("schedule_updated")).isEmpty();
        assertThat(harness.events().named("job_started", "broken")).isEmpty();
        // The changed "steady" was created (then closed with the failed update), and is not in force.
        assertThat(s.update(List.of(job("steady", EVERY_SECOND, Map.of()))).changedAnything()).isFalse();
        assertThat(harness.events().named("schedule_updated")).singleElement()
                .satisfies(e -> assertThat(e).containsEntry("config_hash", hash));
    }

    @Test
    void noSlotRunsTwiceOrGoesSilentWhileOneOfTwoWorkersUpdatesAgainAndAgain() {
        InMemoryLockProvider store = InMemoryLockProvider.create();
        List<String> names = List.of("a", "b", "c");
        List<JobDefinition> base = names.stream().map(n -> job(n, EVERY_SECOND, Map.of("v", 0))).toList();
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        JobFactory factory = d -> ctx -> runs.computeIfAbsent(ctx.jobName(), k -> new AtomicInteger()).incrementAndGet();
        harness.start(Scheduler.builder(store).workerId("steady").jobs(base).jobFactory(factory));
        Scheduler reloading = harness.start(Scheduler.builder(store).workerId("reloading").jobs(base).jobFactory(factory));
        Instant from = Instant.now().truncatedTo(ChronoUnit.SECONDS).plusSeconds(1);
        // Every 150 ms a new version of every job (a changed param), "c" disabled every other time.
        for (int i = 1; i <= 24; i++) {
            int v = i;
            List<JobDefinition> next = names.stream().map(n -> job(n, EVERY_SECOND, Map.of("v", v)))
                    .map(d -> d.name().equals("c") && v % 2 == 1 ? disabled(d) : d).toList();
            reloading.update(next);
            Instant until = Instant.now().plusMillis(150);
            await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(10)).until(() -> Instant.now().isAfter(until));
        }
        Instant to = Instant.now().truncatedTo(ChronoUnit.SECONDS).minusSeconds(1);
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(
                SlotCoverage.silent(harness.events().handledPerSlot().keySet(), names, from, to, Duration.ofSeconds(1)))
                .as("slots that neither started nor were reported").isEmpty());
        assertThat(harness.events().handledPerSlot())
                .allSatisfy((slot, times) -> assertThat(times).as("%s started or reported once", slot).isEqualTo(1L));
        // The reloading worker kept racing for the slots throughout (its hash differs from its peer's,
        // so each claims every slot ahead; the store decides each once).
        assertThat(harness.events().all()).filteredOn(e -> "reloading".equals(e.get("worker"))
                && List.of("slot_claimed", "slot_contended").contains(e.get("event"))
                && !Instant.parse((String) e.get("slot")).isBefore(from.plusSeconds(2))).isNotEmpty();
    }
}
