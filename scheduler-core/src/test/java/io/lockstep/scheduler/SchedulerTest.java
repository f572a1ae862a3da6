package io.lockstep.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lockstep.scheduler.cron.CronSchedule;
import io.lockstep.scheduler.lock.InMemoryLockProvider;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
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

    /**
     * Each job's counters exist at zero from the first scrape (issue 20: they appeared only with
     * their first event, so {@code rate()} and the README's alerts gave no data instead of 0).
     */
    @Test
    void everyJobsCountersExistAtZeroBeforeAnythingHappened() {
        io.micrometer.core.instrument.simple.SimpleMeterRegistry meters = new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
        JobDefinition yearly = new JobDefinition("yearly", CronSchedule.of("0 0 0 1 1 ?", ZoneOffset.UTC), Job.class.getName(), Map.of(),
                Duration.ofSeconds(5), Duration.ofSeconds(5), Overlap.SKIP, Duration.ZERO, true);
        harness.start(Scheduler.builder(InMemoryLockProvider.create()).workerId("w").meterRegistry(meters).job(yearly).jobFactory(d -> ctx -> { }));
        for (String counter : List.of("lockstep.slots.missed", "lockstep.slots.skipped", "lockstep.leases.lost", "lockstep.runs")) {
            assertThat(meters.find(counter).tag("job", "yearly").counters()).as(counter).isNotEmpty()
                    .allSatisfy(c -> assertThat(c.count()).isZero());
        }
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
        // Two 1.5 s runs fall due every second: the narrow worker's one thread can start at most one
        // of every three, so over 20 starts the wide worker must have run most of them.
        await().atMost(Duration.ofSeconds(30)).until(() -> harness.events().named("job_started").size() >= 20);
        // A slot the narrow worker claimed while its one thread was busy would wait for that run to end,
        // up to 1.5 s: it starts the slots it claims on time (a slot it had to let go went to the wide
        // worker, BACKOFF after the slot, not to it once its thread freed up).
        assertThat(harness.events().named("job_started")).filteredOn(e -> "narrow".equals(e.get("worker")))
                .allSatisfy(e -> assertThat((Long) e.get("lateness_ms")).as("narrow's start of %s", e.get("slot")).isLessThan(1_000L));
        assertThat(harness.events().named("job_started"))
                .allSatisfy(e -> assertThat((Long) e.get("lateness_ms")).isLessThanOrEqualTo(a.misfireGrace().toMillis()));
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
        // Every slot from the next whole second on falls due on this worker, the only one: six
        // seconds of them, twelve slots for one thread that can run one every 1.8 s.
        Instant from = Instant.now().truncatedTo(ChronoUnit.SECONDS).plusSeconds(1);
        Instant to = from.plusSeconds(6);
        List<String> names = List.of("x", "y");
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(
                SlotCoverage.silent(harness.events().handledPerSlot().keySet(), names, from, to, Duration.ofSeconds(1)))
                .as("slots that neither started nor were reported missed").isEmpty());
        s.close();
        // No silent miss, and no slot both started and reported, or reported twice.
        Map<String, Long> handled = harness.events().handledPerSlot();
        assertThat(handled).allSatisfy((slot, times) -> assertThat(times).as("%s started or reported once", slot).isEqualTo(1L));
        assertThat(SlotCoverage.silent(handled.keySet(), names, from, to, Duration.ofSeconds(1))).isEmpty();
        // The reason is the busy thread; a tick that a loaded machine delayed past the grace reports
        // the slot as late instead, which is as good a report (seen with other tests on the 2 cores).
        assertThat(harness.events().named("slot_missed")).isNotEmpty()
                .allSatisfy(e -> assertThat((String) e.get("reason")).isIn("no free job thread on any worker within misfireGrace",
                        "later than misfireGrace", "this worker fell behind its schedule"))
                .anySatisfy(e -> assertThat((String) e.get("reason")).contains("no free job thread"));
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

    /**
     * A second close (Spring's destroy after its shutdown phase timed out) returns only when the
     * first has drained: whoever closes the provider after it cannot cut the drain short.
     */
    @Test
    void aSecondCloseReturnsOnlyWhenTheFirstHasDrained() throws Exception {
        CountDownLatch running = new CountDownLatch(1);
        Scheduler s = harness.start(Scheduler.builder(InMemoryLockProvider.create()).workerId("w").shutdownTimeout(Duration.ofSeconds(10))
                .job(job("report", Duration.ofSeconds(5), Overlap.SKIP, Duration.ZERO))
                .jobFactory(d -> ctx -> {
                    running.countDown();
                    TimeUnit.MILLISECONDS.sleep(800);
                }));
        await().until(() -> running.getCount() == 0);
        Thread first = new Thread(s::close);
        first.start();
        await().until(() -> !harness.events().named("worker_stopping").isEmpty());
        s.close();
        assertThat(harness.events().named("worker_stopped")).as("drained when the second close returned").hasSize(1);
        assertThat(harness.events().named("job_succeeded")).isNotEmpty();
        first.join();
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
        CountDownLatch running = new CountDownLatch(2);
        CountDownLatch stop = new CountDownLatch(1);
        Map<String, Boolean> sawLost = new ConcurrentHashMap<>();
        Job longRun = ctx -> {
            running.countDown();
            try {
                TimeUnit.SECONDS.sleep(30);
            } catch (InterruptedException e) {
                sawLost.putIfAbsent(ctx.jobName(), ctx.isLeaseLost());
                if (ctx.jobName().equals("long")) {
                    // Slow to stop: it goes on after being told, and its lease must not be renewed meanwhile.
                    stop.await(20, TimeUnit.SECONDS);
                }
                throw e;
            }
        };
        // "steady" keeps a lease renewed beside the one refused: its renewals count the watchdog's rounds.
        harness.start(Scheduler.builder(store).workerId("w").shutdownTimeout(Duration.ofMillis(200))
                .jobs(List.of(job("long", Duration.ofSeconds(2), Overlap.SKIP, Duration.ZERO),
                        job("steady", Duration.ofSeconds(2), Overlap.SKIP, Duration.ZERO)))
                .jobFactory(d -> longRun));
        await().atMost(Duration.ofSeconds(10)).until(() -> running.getCount() == 0);
        String refused = tokenOfFirstClaim("long");
        String kept = tokenOfFirstClaim("steady");
        store.refusedTokens.add(refused);
        await().atMost(Duration.ofSeconds(10)).until(() -> !harness.events().named("lease_lost").isEmpty());
        int renewalsAtLoss = store.renewals(refused);
        int roundsAtLoss = store.renewals(kept);
        // Three more rounds of the watchdog (each renews the kept lease): none of them sends the lost one.
        await().atMost(Duration.ofSeconds(15)).until(() -> store.renewals(kept) >= roundsAtLoss + 3);
        assertThat(store.renewals(refused)).as("renewals of the lost lease after lease_lost").isEqualTo(renewalsAtLoss);
        assertThat(sawLost.get("long")).as("interrupted, and told the lease is lost").isTrue();
        stop.countDown();
        assertThat(harness.events().named("lease_lost")).singleElement()
                .satisfies(e -> assertThat(e).containsEntry("level", "WARN").containsEntry("job", "long").containsEntry("identifier", refused)
                        .containsEntry("reason", "renewal refused: the token no longer owns the lease"));
        await().atMost(Duration.ofSeconds(5)).until(() -> !harness.events().named("job_failed").isEmpty());
        assertThat(harness.events().named("job_failed").get(0)).containsEntry("job", "long").containsEntry("reason", "lease lost");
    }

    @Test
    void checkLeaseThrowsOnceTheLeaseIsGoneAndNotBefore() {
        FaultyStore store = new FaultyStore();
        java.util.concurrent.atomic.AtomicLong checksPassed = new java.util.concurrent.atomic.AtomicLong();
        // When each check that passed was begun: taken before the call, so a check still in flight when
        // the lease was declared lost counts as begun before it.
        List<Long> passedCheckBegunNanos = new CopyOnWriteArrayList<>();
        List<Throwable> thrown = new CopyOnWriteArrayList<>();
        harness.start(Scheduler.builder(store).workerId("w").shutdownTimeout(Duration.ofMillis(200))
                .job(job("careful", Duration.ofSeconds(2), Overlap.SKIP, Duration.ZERO))
                .jobFactory(d -> ctx -> {
                    long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                    try {
                        while (System.nanoTime() < giveUp) { // a job that checks its lease between steps of work
                            long begun = System.nanoTime();
                            ctx.checkLease();
                            checksPassed.incrementAndGet();
                            passedCheckBegunNanos.add(begun);
                            java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
                        }
                    } catch (RuntimeException e) {
                        thrown.add(e);
                        throw e;
                    }
                }));
        // The lease is renewed twice while the job keeps checking it: no throw while it is ours.
        await().atMost(Duration.ofSeconds(10)).until(() -> harness.events().named("lease_renewed").size() >= 2);
        assertThat(thrown).isEmpty();
        assertThat(checksPassed.get()).isPositive();
        String token = tokenOfFirstClaim("careful");
        store.refusedTokens.add(token);
        await().atMost(Duration.ofSeconds(10)).until(() -> !thrown.isEmpty());
        Instant slot = Instant.parse((String) harness.events().named("slot_claimed").get(0).get("slot"));
        assertThat(thrown).singleElement().isInstanceOfSatisfying(LeaseLostException.class, e -> {
            assertThat(e.job()).isEqualTo("careful");
            assertThat(e.slot()).isEqualTo(slot);
            assertThat(e).hasMessage("lease lost for job careful slot " + slot + ": renewal refused: the token no longer owns the lease");
        });
        assertThat(harness.events().named("lease_lost")).singleElement().satisfies(e -> assertThat(e).containsEntry("identifier", token));
        // No check begun after the job was told passed: the watchdog declares the lease lost before it
        // logs lease_lost, so a check begun once that event was logged must throw.
        long toldAt = harness.events().nanosOf("lease_lost").get(0);
        assertThat(passedCheckBegunNanos).as("checks passed").isNotEmpty()
                .allSatisfy(begun -> assertThat(begun).as("a check that passed, begun %d µs after lease_lost",
                        TimeUnit.NANOSECONDS.toMicros(begun - toldAt)).isLessThan(toldAt));
    }

    @Test
    void aRunWhoseLeaseIsGoneBeforeAThreadPicksItUpIsNeverStarted() {
        FaultyStore store = new FaultyStore();
        store.refuseRenewals = true; // the first renewal of any lease is refused: it is lost before the job can start
        java.util.concurrent.ThreadPoolExecutor pool = new java.util.concurrent.ThreadPoolExecutor(1, 1, 60, TimeUnit.SECONDS,
                new java.util.concurrent.LinkedBlockingQueue<>());
        CountDownLatch poolFree = new CountDownLatch(1);
        pool.execute(() -> {
            try {
                poolFree.await(); // the pool's only thread is busy: a claimed run waits in its queue
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        List<Instant> started = new CopyOnWriteArrayList<>();
        try {
            harness.start(Scheduler.builder(store).workerId("w").threads(1).executor(pool)
                    .job(job("queued", Duration.ofSeconds(2), Overlap.SKIP, Duration.ZERO))
                    .jobFactory(d -> ctx -> started.add(ctx.scheduledTime())));
            await().atMost(Duration.ofSeconds(10)).until(() -> !harness.events().named("lease_lost").isEmpty());
            Map<String, Object> lost = harness.events().named("lease_lost").get(0);
            String slot = (String) lost.get("slot");
            assertThat(pool.getQueue()).as("the run still waits for a thread").hasSize(1);
            poolFree.countDown();
            Object token = lost.get("identifier");
            await().atMost(Duration.ofSeconds(10)).until(() -> harness.events().named("slot_released").stream()
                    .anyMatch(e -> token.equals(e.get("identifier"))));
            Object fence = harness.events().named("slot_claimed").stream().filter(e -> token.equals(e.get("identifier")))
                    .findFirst().orElseThrow().get("fencing_token");
            // The claim whose lease was gone never ran: it went back to the store as never started ...
            assertThat(harness.events().named("job_started")).filteredOn(e -> slot.equals(e.get("slot")))
                    .noneSatisfy(e -> assertThat(e.get("fencing_token")).isEqualTo(fence));
            assertThat(harness.events().named("lease_lost")).filteredOn(e -> token.equals(e.get("identifier"))).hasSize(1);
            assertThat(harness.events().named("slot_released")).filteredOn(e -> token.equals(e.get("identifier"))).singleElement()
                    .satisfies(e -> assertThat(e).containsEntry("outcome", "not_started"));
            // ... so the slot may still run, once, under a higher token (a run that never started is safe to run).
            assertThat(harness.events().named("job_started")).filteredOn(e -> slot.equals(e.get("slot"))).hasSizeLessThanOrEqualTo(1)
                    .allSatisfy(e -> assertThat(((Number) e.get("fencing_token")).longValue()).isGreaterThan(((Number) fence).longValue()));
        } finally {
            poolFree.countDown();
            harness.closeAll(); // drains and shuts down the pool it was given; shut down here too, should build have failed
            pool.shutdownNow();
        }
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
        assertThat(failed).allSatisfy(e -> assertThat(e).containsEntry("will_retry", true).containsEntry("level", "WARN"));
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
        assertThat(failed).extracting(e -> e.get("attempt"), e -> e.get("will_retry"), e -> e.get("level"))
                .containsExactly(org.assertj.core.groups.Tuple.tuple(1, true, "WARN"), org.assertj.core.groups.Tuple.tuple(2, false, "ERROR"));
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
        // Three more ticks of each peer (each decides or steps aside from one more slot, then looks at
        // runs in flight): a second abandonment of any slot would show by then.
        awaitThreeMoreTicks("peer-1", "peer-2");
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
        // The cluster is down until, by the store's clock, four more slots are past their grace (300 ms)
        // and the 400 ms margin the list of down slots below leaves.
        Instant fourMissed = lastBefore.plusSeconds(4).plusMillis(500);
        await().atMost(Duration.ofSeconds(10)).until(() -> store.serverTimeMillis() > fourMissed.toEpochMilli());
        Instant restart = Instant.now();
        for (String id : List.of("back-1", "back-2")) {
            harness.start(Scheduler.builder(store).workerId(id).jobs(jobs)
                    .jobFactory(d -> ctx -> runs.computeIfAbsent(ctx.jobName(), k -> new CopyOnWriteArrayList<>()).add(ctx.scheduledTime())));
        }
        List<Instant> downSlots = new ArrayList<>();
        for (Instant s = lastBefore.plusSeconds(1); s.plusMillis(400).isBefore(restart); s = s.plusSeconds(1)) {
            downSlots.add(s);
        }
        assertThat(downSlots).hasSizeGreaterThanOrEqualTo(4);
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            for (Instant slot : downSlots) {
                assertThat(keys("slot_missed")).as("none: reported").contains("none@" + slot);
                assertThat(runs.get("all")).as("all: ran").contains(slot);
            }
            assertThat(runs.get("latest")).contains(downSlots.get(downSlots.size() - 1));
            for (Instant slot : downSlots.subList(0, downSlots.size() - 1)) {
                assertThat(keys("slot_missed")).contains("latest@" + slot);
            }
        });
        // Three more ticks of each worker that came back: a second run or report of a slot would show by then.
        awaitThreeMoreTicks("back-1", "back-2");
        for (Instant slot : downSlots) {
            assertThat(runs.get("all")).as("all: ran once").containsOnlyOnce(slot);
            assertThat(runs.get("none")).doesNotContain(slot);
        }
        assertThat(runs.get("latest")).containsOnlyOnce(downSlots.get(downSlots.size() - 1));
        for (Instant slot : downSlots.subList(0, downSlots.size() - 1)) {
            assertThat(runs.get("latest")).doesNotContain(slot);
        }
        Map<Object, Long> perSlot = harness.events().named("slot_missed").stream()
                .collect(Collectors.groupingBy(e -> e.get("job") + "@" + e.get("slot"), Collectors.counting()));
        assertThat(perSlot.values()).as("none: reported once").containsOnly(1L);
    }

    private static JobDefinition rename(JobDefinition d, String name) {
        return new JobDefinition(name, d.schedule(), d.jobClass(), d.params(), d.lease(), d.misfireGrace(), d.overlap(),
                d.timeout(), d.enabled());
    }

    private long fenceOf(String job, Instant slot) {
        return harness.events().named("slot_claimed").stream().filter(e -> job.equals(e.get("job")) && slot.toString().equals(e.get("slot")))
                .map(e -> (Long) e.get("fencing_token")).findFirst().orElseThrow();
    }

    /** The token of the job's first claim (its {@code identifier}). */
    private String tokenOfFirstClaim(String job) {
        return harness.events().named("slot_claimed").stream().filter(e -> job.equals(e.get("job")))
                .map(e -> (String) e.get("identifier")).findFirst().orElseThrow();
    }

    /**
     * Waits until each worker has dealt with (claimed, lost to a peer, stepped aside from, skipped)
     * three slot times newer than the newest it had dealt with when called: three more ticks, whatever
     * the number of jobs, and however late an event about an older slot arrives.
     */
    private void awaitThreeMoreTicks(String... workers) {
        Map<String, Instant> newestThen = new java.util.HashMap<>();
        for (String w : workers) {
            java.util.NavigableSet<Instant> dealt = slotsDealtWith(w);
            newestThen.put(w, dealt.isEmpty() ? Instant.EPOCH : dealt.last());
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> newestThen.entrySet().stream()
                .allMatch(t -> slotsDealtWith(t.getKey()).tailSet(t.getValue(), false).size() >= 3));
    }

    /** The slot times the worker has dealt with, each once however many jobs fell due at it. */
    private java.util.NavigableSet<Instant> slotsDealtWith(String worker) {
        return harness.events().all().stream()
                .filter(e -> worker.equals(e.get("worker")) && Set.of("slot_claimed", "slot_contended", "slot_stepped_aside", "slot_skipped")
                        .contains(e.get("event")))
                .map(e -> Instant.parse((String) e.get("slot")))
                .collect(Collectors.toCollection(java.util.TreeSet::new));
    }

    private Set<String> keys(String event) {
        return harness.events().named(event).stream().map(e -> e.get("job") + "@" + e.get("slot")).collect(Collectors.toSet());
    }
}
