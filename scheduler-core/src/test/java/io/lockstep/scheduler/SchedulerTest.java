package io.lockstep.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lockstep.scheduler.cron.CronSchedule;
import io.lockstep.scheduler.lock.InMemoryLockProvider;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The scheduling loop on the in-memory store: real threads, real time, every outcome awaited. */
class SchedulerTest {

    private static final CronSchedule EVERY_SECOND = CronSchedule.of("* * * * * *", ZoneOffset.UTC);

    @RegisterExtension
    final SchedulerHarness harness = new SchedulerHarness();

    private static JobDefinition job(String name, Duration lease, Overlap overlap, Duration timeout) {
        return new JobDefinition(name, EVERY_SECOND, Job.class.getName(), Map.of(), lease, Duration.ofSeconds(2),
                overlap, timeout, true);
    }

    @Test
    void twoWorkersOnOneStoreRunEachSlotOnce() {
        InMemoryLockProvider store = InMemoryLockProvider.create();
        Map<Instant, List<String>> runs = new ConcurrentHashMap<>();
        for (String id : List.of("w1", "w2")) {
            harness.start(Scheduler.builder(store).workerId(id).job(job("tick", Duration.ofSeconds(5), Overlap.SKIP, Duration.ZERO))
                    .jobFactory(d -> ctx -> runs.computeIfAbsent(ctx.scheduledTime(), k -> new CopyOnWriteArrayList<>()).add(ctx.workerId())));
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> runs.size() >= 4);
        assertThat(runs.values()).allSatisfy(workers -> assertThat(workers).hasSize(1));
        assertThat(runs.keySet()).allSatisfy(slot -> assertThat(slot.getNano()).isZero());
    }

    @Test
    void aFailingJobKeepsItsSchedule() {
        AtomicInteger calls = new AtomicInteger();
        harness.start(Scheduler.builder(InMemoryLockProvider.create()).workerId("w")
                .job(job("boom", Duration.ofSeconds(5), Overlap.SKIP, Duration.ZERO))
                .jobFactory(d -> ctx -> {
                    calls.incrementAndGet();
                    throw new IllegalStateException("always fails");
                }));
        await().atMost(Duration.ofSeconds(10)).until(() -> calls.get() >= 3);
        await().until(() -> harness.events().named("job_failed").size() >= 3);
        assertThat(harness.events().named("job_failed").get(0))
                .containsEntry("level", "ERROR").containsEntry("error", "java.lang.IllegalStateException: always fails");
        assertThat(harness.events().named("slot_released")).anySatisfy(e -> assertThat(e).containsEntry("outcome", "failed"));
    }

    @Test
    void aBusyWorkerClaimsOnlyWhatItCanStartAndLeavesTheRestToItsPeer() {
        InMemoryLockProvider store = InMemoryLockProvider.create();
        Map<String, AtomicInteger> perWorker = new ConcurrentHashMap<>();
        Job slow = ctx -> {
            perWorker.computeIfAbsent(ctx.workerId(), k -> new AtomicInteger()).incrementAndGet();
            TimeUnit.MILLISECONDS.sleep(1_500);
        };
        JobDefinition a = job("a", Duration.ofSeconds(5), Overlap.ALLOW, Duration.ZERO);
        JobDefinition b = job("b", Duration.ofSeconds(5), Overlap.ALLOW, Duration.ZERO);
        harness.start(Scheduler.builder(store).workerId("narrow").threads(1).jobs(List.of(a, b)).jobFactory(d -> slow));
        harness.start(Scheduler.builder(store).workerId("wide").threads(8).jobs(List.of(a, b)).jobFactory(d -> slow));
        await().atMost(Duration.ofSeconds(15)).until(() -> harness.events().named("job_started").size() >= 12);
        // The narrow worker never holds more slots than its one thread can start: nothing waits in a queue.
        assertThat(harness.events().named("job_started")).allSatisfy(e -> assertThat((Long) e.get("lateness_ms")).isLessThan(1_000L));
        assertThat(perWorker.get("wide").get()).isGreaterThan(perWorker.getOrDefault("narrow", new AtomicInteger()).get());
        assertThat(harness.events().named("slot_missed")).isEmpty();
        Map<Object, Long> startsPerSlot = harness.events().named("job_started").stream()
                .collect(Collectors.groupingBy(e -> e.get("job") + "@" + e.get("slot"), Collectors.counting()));
        assertThat(startsPerSlot.values()).containsOnly(1L);
    }

    @Test
    void aLoneOverloadedWorkerReportsEverySlotItCannotRunAsMissed() {
        Job slow = ctx -> TimeUnit.MILLISECONDS.sleep(1_800);
        List<JobDefinition> jobs = List.of(
                job("x", Duration.ofSeconds(5), Overlap.ALLOW, Duration.ZERO),
                job("y", Duration.ofSeconds(5), Overlap.ALLOW, Duration.ZERO));
        Scheduler s = harness.start(Scheduler.builder(InMemoryLockProvider.create()).workerId("solo").threads(1)
                .jobs(jobs).jobFactory(d -> slow));
        await().atMost(Duration.ofSeconds(20)).until(() -> harness.events().named("slot_missed").size() >= 3);
        s.close();
        // No silent miss: every slot that fell due either started or was reported missed, once.
        Set<String> started = keys("job_started");
        Set<String> missed = keys("slot_missed");
        assertThat(started).doesNotContainAnyElementsOf(missed);
        Instant first = harness.events().named("job_started").stream().map(e -> Instant.parse((String) e.get("slot")))
                .min(Instant::compareTo).orElseThrow();
        Instant last = harness.events().named("slot_missed").stream().map(e -> Instant.parse((String) e.get("slot")))
                .max(Instant::compareTo).orElseThrow();
        for (Instant slot = first; !slot.isAfter(last); slot = slot.plusSeconds(1)) {
            for (String job : List.of("x", "y")) {
                assertThat(started.contains(job + "@" + slot) || missed.contains(job + "@" + slot))
                        .as("%s@%s ran or was reported missed", job, slot).isTrue();
            }
        }
        assertThat(harness.events().named("slot_missed")).allSatisfy(e -> assertThat((String) e.get("reason")).contains("no free job thread"));
    }

    @Test
    void aShutdownLetsTheRunningJobFinishAndRecordsItsOutcome() {
        InMemoryLockProvider store = InMemoryLockProvider.create();
        CountDownLatch running = new CountDownLatch(1);
        Scheduler s = harness.start(Scheduler.builder(store).workerId("w").shutdownTimeout(Duration.ofSeconds(10))
                .job(job("report", Duration.ofSeconds(5), Overlap.SKIP, Duration.ZERO))
                .jobFactory(d -> ctx -> {
                    running.countDown();
                    TimeUnit.MILLISECONDS.sleep(700);
                }));
        await().until(() -> running.getCount() == 0);
        Instant slot = Instant.parse((String) harness.events().named("job_started").get(0).get("slot"));
        s.close();
        assertThat(harness.events().named("job_succeeded")).extracting(e -> e.get("slot")).contains(slot.toString());
        assertThat(store.slotState("report", slot)).contains("done:succeeded");
        assertThat(harness.events().named("worker_stopped")).singleElement().satisfies(e -> assertThat(e).containsEntry("drained", true));
    }

    @Test
    void aShutdownInterruptsJobsThatOutliveTheTimeoutAndRecordsThat() {
        InMemoryLockProvider store = InMemoryLockProvider.create();
        CountDownLatch running = new CountDownLatch(1);
        Scheduler s = harness.start(Scheduler.builder(store).workerId("w").shutdownTimeout(Duration.ofMillis(200))
                .job(job("stuck", Duration.ofSeconds(5), Overlap.SKIP, Duration.ZERO))
                .jobFactory(d -> ctx -> {
                    running.countDown();
                    TimeUnit.SECONDS.sleep(60);
                }));
        await().until(() -> running.getCount() == 0);
        Instant slot = Instant.parse((String) harness.events().named("job_started").get(0).get("slot"));
        long before = System.nanoTime();
        s.close();
        assertThat(Duration.ofNanos(System.nanoTime() - before)).isLessThan(Duration.ofSeconds(5));
        assertThat(store.slotState("stuck", slot)).contains("done:interrupted");
        assertThat(harness.events().named("job_failed")).singleElement()
                .satisfies(e -> assertThat(e).containsEntry("reason", "interrupted by shutdown"));
    }

    @Test
    void aRefusedRenewalInterruptsTheJobAndStopsRenewing() {
        FaultyStore store = new FaultyStore();
        CountDownLatch running = new CountDownLatch(1);
        List<Boolean> sawLost = new CopyOnWriteArrayList<>();
        harness.start(Scheduler.builder(store).workerId("w")
                .job(job("long", Duration.ofSeconds(1), Overlap.SKIP, Duration.ZERO))
                .jobFactory(d -> ctx -> {
                    running.countDown();
                    try {
                        TimeUnit.SECONDS.sleep(30);
                    } finally {
                        sawLost.add(ctx.isLeaseLost());
                    }
                }));
        await().until(() -> running.getCount() == 0);
        store.refuseRenewals = true;
        await().atMost(Duration.ofSeconds(5)).until(() -> !harness.events().named("lease_lost").isEmpty());
        await().until(() -> !sawLost.isEmpty());
        assertThat(sawLost.get(0)).isTrue();
        assertThat(harness.events().named("lease_lost").get(0)).containsEntry("level", "WARN")
                .containsEntry("reason", "renewal refused: the token no longer owns the lease");
        assertThat(harness.events().named("job_failed").get(0)).containsEntry("reason", "lease lost");
    }

    @Test
    void aRunOverItsTimeoutIsInterruptedAndReported() {
        CountDownLatch interrupted = new CountDownLatch(1);
        harness.start(Scheduler.builder(InMemoryLockProvider.create()).workerId("w")
                .job(job("bounded", Duration.ofSeconds(5), Overlap.SKIP, Duration.ofMillis(300)))
                .jobFactory(d -> ctx -> {
                    try {
                        TimeUnit.SECONDS.sleep(30);
                    } catch (InterruptedException e) {
                        interrupted.countDown();
                        throw e;
                    }
                }));
        await().atMost(Duration.ofSeconds(5)).until(() -> interrupted.getCount() == 0);
        await().until(() -> !harness.events().named("job_timed_out").isEmpty());
        await().until(() -> harness.events().named("slot_released").stream().anyMatch(e -> "timed_out".equals(e.get("outcome"))));
    }

    @Test
    void anUnreachableStoreFailsClosedWarnsOnceAndRecovers() {
        FaultyStore store = new FaultyStore();
        AtomicInteger runs = new AtomicInteger();
        harness.start(Scheduler.builder(store).workerId("w")
                .job(job("tick", Duration.ofSeconds(5), Overlap.SKIP, Duration.ZERO))
                .jobFactory(d -> ctx -> runs.incrementAndGet()));
        await().atMost(Duration.ofSeconds(5)).until(() -> runs.get() >= 1);
        store.down = true;
        int callsAtOutage = store.claimCalls;
        await().atMost(Duration.ofSeconds(5)).until(() -> store.claimCalls >= callsAtOutage + 8);
        int runsDuringOutage = runs.get();
        await().atMost(Duration.ofSeconds(5)).until(() -> store.claimCalls >= callsAtOutage + 12);
        assertThat(runs.get()).as("no job runs while claims fail").isEqualTo(runsDuringOutage);
        assertThat(harness.events().named("redis_error").stream().filter(e -> "WARN".equals(e.get("level")))).hasSize(1);

        store.down = false;
        await().atMost(Duration.ofSeconds(3)).until(() -> runs.get() > runsDuringOutage);
        assertThat(harness.events().named("redis_recovered")).hasSize(1);
    }

    @Test
    void aWorkerWhoseClockRunsAheadStillFiresOnTheStoreClock() {
        InMemoryLockProvider store = InMemoryLockProvider.create(); // "server time" is the true clock
        List<Long> earlyByMillis = new CopyOnWriteArrayList<>();
        harness.start(Scheduler.builder(store).workerId("fast").clock(Clock.offset(Clock.systemUTC(), Duration.ofSeconds(5)))
                .job(job("tick", Duration.ofSeconds(5), Overlap.SKIP, Duration.ZERO))
                .jobFactory(d -> ctx -> earlyByMillis.add(ctx.scheduledTime().toEpochMilli() - System.currentTimeMillis())));
        await().atMost(Duration.ofSeconds(10)).until(() -> earlyByMillis.size() >= 3);
        assertThat(earlyByMillis).allSatisfy(early -> assertThat(early).isLessThanOrEqualTo(0L));
    }

    // ---------------------------------------------------------------- policies

    @Test
    void aFailedRunIsRetriedWithinTheSameClaimUntilItSucceeds() {
        Map<Instant, List<Integer>> attempts = new ConcurrentHashMap<>();
        Map<Instant, Set<Long>> fences = new ConcurrentHashMap<>();
        JobDefinition flaky = job("flaky", Duration.ofSeconds(5), Overlap.ALLOW, Duration.ZERO)
                .withRetry(new Retry(3, Duration.ofMillis(50), Duration.ofMillis(80)));
        harness.start(Scheduler.builder(InMemoryLockProvider.create()).workerId("w").job(flaky).jobFactory(d -> ctx -> {
            attempts.computeIfAbsent(ctx.scheduledTime(), k -> new CopyOnWriteArrayList<>()).add(ctx.attempt());
            fences.computeIfAbsent(ctx.scheduledTime(), k -> ConcurrentHashMap.newKeySet()).add(ctx.fencingToken());
            if (ctx.attempt() < 3) {
                throw new IllegalStateException("attempt " + ctx.attempt() + " fails");
            }
        }));
        await().atMost(Duration.ofSeconds(10)).until(() -> harness.events().named("job_succeeded").size() >= 2);
        Instant slot = Instant.parse((String) harness.events().named("job_succeeded").get(0).get("slot"));
        assertThat(attempts.get(slot)).containsExactly(1, 2, 3);
        assertThat(fences.get(slot)).hasSize(1); // one claim, one fencing token
        List<Map<String, Object>> failed = harness.events().named("job_failed").stream()
                .filter(e -> slot.toString().equals(e.get("slot"))).toList();
        assertThat(failed).extracting(e -> e.get("attempt")).containsExactly(1, 2);
        assertThat(failed).allSatisfy(e -> assertThat(e).containsEntry("will_retry", true));
        assertThat(failed.get(1)).containsEntry("retry_in_ms", 80L);
        assertThat(harness.events().named("job_started").stream().filter(e -> slot.toString().equals(e.get("slot"))))
                .extracting(e -> e.get("attempt")).containsExactly(1, 2, 3);
        assertThat(harness.events().named("slot_released").stream().filter(e -> slot.toString().equals(e.get("slot"))))
                .singleElement().satisfies(e -> assertThat(e).containsEntry("outcome", "succeeded"));
    }

    @Test
    void aRunThatFailsEveryAttemptIsReportedFailedOnceItsAttemptsAreSpent() {
        JobDefinition broken = job("broken", Duration.ofSeconds(5), Overlap.ALLOW, Duration.ZERO)
                .withRetry(new Retry(2, Duration.ofMillis(20), Duration.ofMillis(20)));
        harness.start(Scheduler.builder(InMemoryLockProvider.create()).workerId("w").job(broken).jobFactory(d -> ctx -> {
            throw new IllegalStateException("always");
        }));
        await().atMost(Duration.ofSeconds(10)).until(() -> !harness.events().named("slot_released").isEmpty());
        Map<String, Object> released = harness.events().named("slot_released").get(0);
        List<Map<String, Object>> failed = harness.events().named("job_failed").stream()
                .filter(e -> released.get("slot").equals(e.get("slot"))).toList();
        assertThat(failed).extracting(e -> e.get("attempt"), e -> e.get("will_retry"))
                .containsExactly(org.assertj.core.groups.Tuple.tuple(1, true), org.assertj.core.groups.Tuple.tuple(2, false));
        assertThat(released).containsEntry("outcome", "failed");
    }

    @Test
    void replaceRevokesTheRunningLeaseAndTheOldRunIsToldAndStops() {
        InMemoryLockProvider store = InMemoryLockProvider.create();
        Map<Instant, Boolean> sawLost = new ConcurrentHashMap<>();
        harness.start(Scheduler.builder(store).workerId("w").shutdownTimeout(Duration.ofMillis(100)).job(job("latest-wins", Duration.ofSeconds(1), Overlap.REPLACE, Duration.ZERO))
                .jobFactory(d -> ctx -> {
                    try {
                        TimeUnit.SECONDS.sleep(30);
                    } finally {
                        sawLost.put(ctx.scheduledTime(), ctx.isLeaseLost());
                    }
                }));
        await().atMost(Duration.ofSeconds(10)).until(() -> harness.events().named("lease_lost").size() >= 2);
        assertThat(harness.events().named("slot_skipped")).isEmpty();
        Map<String, Object> lost = harness.events().named("lease_lost").get(0);
        Instant slot = Instant.parse((String) lost.get("slot"));
        assertThat(lost).containsEntry("reason", "renewal refused: the token no longer owns the lease");
        await().until(() -> sawLost.containsKey(slot));
        assertThat(sawLost.get(slot)).isTrue();
        assertThat(store.slotState("latest-wins", slot)).contains("replaced");
        // The newer run holds a higher fencing token than the one it replaced.
        long oldFence = fenceOf("latest-wins", slot);
        assertThat(harness.events().named("job_started")).anySatisfy(e -> assertThat((Long) e.get("fencing_token")).isGreaterThan(oldFence));
    }

    @Test
    void aRunWhoseWorkerWentSilentIsRerunOnceByAPeerUnderAHigherFence() {
        InMemoryLockProvider shared = InMemoryLockProvider.create();
        FaultyStore cutOff = new FaultyStore(shared);
        JobDefinition report = job("report", Duration.ofSeconds(1), Overlap.ALLOW, Duration.ZERO).withRecover(Recover.RERUN);
        Map<Instant, Long> doomedRuns = new ConcurrentHashMap<>();
        Map<Instant, Long> peerRuns = new ConcurrentHashMap<>();
        Job work = ctx -> {
            if (ctx.workerId().equals("doomed")) {
                doomedRuns.put(ctx.scheduledTime(), ctx.fencingToken());
                TimeUnit.SECONDS.sleep(30);
            } else {
                peerRuns.put(ctx.scheduledTime(), ctx.fencingToken());
            }
        };
        harness.start(Scheduler.builder(cutOff).workerId("doomed").job(report).jobFactory(d -> work));
        await().atMost(Duration.ofSeconds(5)).until(() -> !doomedRuns.isEmpty());
        cutOff.down = true; // the doomed worker can no longer renew: to the cluster it is dead
        harness.start(Scheduler.builder(shared).workerId("peer").job(report).jobFactory(d -> work));

        await().atMost(Duration.ofSeconds(5)).until(() -> peerRuns.keySet().containsAll(doomedRuns.keySet()));
        for (Map.Entry<Instant, Long> doomed : doomedRuns.entrySet()) {
            assertThat(peerRuns.get(doomed.getKey())).as("rerun under a higher fence").isGreaterThan(doomed.getValue());
            assertThat(harness.events().named("slot_recovered").stream().filter(e -> doomed.getKey().toString().equals(e.get("slot"))))
                    .singleElement().satisfies(e -> assertThat(e).containsEntry("worker", "peer").containsEntry("level", "WARN"));
        }
        await().until(() -> harness.events().named("lease_lost").stream().anyMatch(e -> "doomed".equals(e.get("worker"))));
        assertThat(harness.events().named("slot_abandoned")).isEmpty();
    }

    @Test
    void aRunWhoseWorkerWentSilentIsAbandonedExactlyOnceWithRecoverNone() {
        InMemoryLockProvider shared = InMemoryLockProvider.create();
        FaultyStore cutOff = new FaultyStore(shared);
        JobDefinition report = job("report", Duration.ofSeconds(1), Overlap.ALLOW, Duration.ZERO);
        Set<Instant> doomedRuns = ConcurrentHashMap.newKeySet();
        Set<Instant> peerRuns = ConcurrentHashMap.newKeySet();
        Job work = ctx -> {
            if (ctx.workerId().equals("doomed")) {
                doomedRuns.add(ctx.scheduledTime());
                TimeUnit.SECONDS.sleep(30);
            } else {
                peerRuns.add(ctx.scheduledTime());
            }
        };
        harness.start(Scheduler.builder(cutOff).workerId("doomed").job(report).jobFactory(d -> work));
        await().atMost(Duration.ofSeconds(5)).until(() -> !doomedRuns.isEmpty());
        cutOff.down = true;
        for (String id : List.of("peer-1", "peer-2")) {
            harness.start(Scheduler.builder(shared).workerId(id).job(report).jobFactory(d -> work));
        }
        await().atMost(Duration.ofSeconds(5)).until(() -> keys("slot_abandoned").containsAll(
                doomedRuns.stream().map(slot -> "report@" + slot).toList()));
        await().pollDelay(Duration.ofMillis(1_500)).until(() -> true); // a few more sweeps by both peers
        Map<Object, Long> perSlot = harness.events().named("slot_abandoned").stream()
                .collect(Collectors.groupingBy(e -> e.get("slot"), Collectors.counting()));
        assertThat(perSlot.values()).containsOnly(1L);
        assertThat(peerRuns).doesNotContainAnyElementsOf(doomedRuns);
        for (Instant slot : doomedRuns) {
            assertThat(shared.slotState("report", slot)).contains("abandoned");
        }
    }

    @Test
    void slotsMissedWhileTheClusterWasDownAreHandledOnceByTwoWorkersComingBack() {
        InMemoryLockProvider store = InMemoryLockProvider.create();
        JobDefinition base = new JobDefinition("tick", EVERY_SECOND, Job.class.getName(), Map.of(), Duration.ofSeconds(5),
                Duration.ofMillis(300), Overlap.ALLOW, Duration.ZERO, true);
        List<JobDefinition> jobs = List.of(
                rename(base, "none").withCatchUp(CatchUp.NONE, Duration.ofHours(1)),
                rename(base, "latest").withCatchUp(CatchUp.LATEST, Duration.ofHours(1)),
                rename(base, "all").withCatchUp(CatchUp.ALL, Duration.ofHours(1)));
        Map<String, List<Instant>> runs = new ConcurrentHashMap<>();
        Scheduler first = harness.start(Scheduler.builder(store).workerId("first").jobs(jobs)
                .jobFactory(d -> ctx -> runs.computeIfAbsent(ctx.jobName(), k -> new CopyOnWriteArrayList<>()).add(ctx.scheduledTime())));
        await().atMost(Duration.ofSeconds(5)).until(() -> runs.keySet().size() == 3);
        first.close();
        Instant lastBefore = store.lastSlots(List.of("all")).get("all");
        await().pollDelay(Duration.ofMillis(3_500)).atMost(Duration.ofSeconds(5)).until(() -> true); // the cluster is down
        int before = harness.events().named("job_started").size();
        Instant restart = Instant.now();
        for (String id : List.of("back-1", "back-2")) {
            harness.start(Scheduler.builder(store).workerId(id).jobs(jobs)
                    .jobFactory(d -> ctx -> runs.computeIfAbsent(ctx.jobName(), k -> new CopyOnWriteArrayList<>()).add(ctx.scheduledTime())));
        }
        await().atMost(Duration.ofSeconds(5)).until(() -> harness.events().named("slot_claimed").stream().filter(e -> Boolean.TRUE.equals(e.get("catch_up"))).count() >= 4);
        await().pollDelay(Duration.ofMillis(500)).until(() -> true);
        List<Instant> downSlots = new ArrayList<>();
        for (Instant s = lastBefore.plusSeconds(1); s.plusMillis(400).isBefore(restart); s = s.plusSeconds(1)) {
            downSlots.add(s);
        }
        assertThat(downSlots).hasSizeGreaterThanOrEqualTo(3);
        for (Instant slot : downSlots) {
            assertThat(keys("slot_missed")).as("none: reported once").contains("none@" + slot);
            assertThat(runs.get("all")).as("all: ran once").containsOnlyOnce(slot);
            assertThat(runs.get("none")).doesNotContain(slot);
        }
        assertThat(runs.get("latest")).containsOnlyOnce(downSlots.get(downSlots.size() - 1));
        for (Instant slot : downSlots.subList(0, downSlots.size() - 1)) {
            assertThat(keys("slot_missed")).contains("latest@" + slot);
            assertThat(runs.get("latest")).doesNotContain(slot);
        }
        Map<Object, Long> perSlot = harness.events().named("slot_missed").stream()
                .collect(Collectors.groupingBy(e -> e.get("job") + "@" + e.get("slot"), Collectors.counting()));
        assertThat(perSlot.values()).containsOnly(1L);
        assertThat(before).isPositive();
    }

    private static JobDefinition rename(JobDefinition d, String name) {
        return new JobDefinition(name, d.schedule(), d.jobClass(), d.params(), d.lease(), d.misfireGrace(), d.overlap(),
                d.timeout(), d.enabled());
    }

    private long fenceOf(String job, Instant slot) {
        return harness.events().named("slot_claimed").stream().filter(e -> job.equals(e.get("job")) && slot.toString().equals(e.get("slot")))
                .map(e -> (Long) e.get("fencing_token")).findFirst().orElseThrow();
    }

    private Set<String> keys(String event) {
        return harness.events().named(event).stream().map(e -> e.get("job") + "@" + e.get("slot")).collect(Collectors.toSet());
    }
}
