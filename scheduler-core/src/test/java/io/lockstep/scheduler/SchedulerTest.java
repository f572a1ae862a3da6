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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The scheduling loop on the in-memory store: real threads, real time, every outcome awaited. */
class SchedulerTest {

    private static final CronSchedule EVERY_SECOND = CronSchedule.of("* * * * * *", ZoneOffset.UTC);

    private final List<Scheduler> schedulers = new ArrayList<>();
    private CapturedEvents events;

    @BeforeEach
    void capture() {
        events = new CapturedEvents();
    }

    @AfterEach
    void stop() {
        schedulers.forEach(Scheduler::close);
        events.close();
    }

    private static JobDefinition job(String name, Duration lease, Overlap overlap, Duration timeout) {
        return new JobDefinition(name, EVERY_SECOND, Job.class.getName(), Map.of(), lease, Duration.ofSeconds(2),
                overlap, timeout, true);
    }

    private Scheduler start(Scheduler.Builder builder) {
        Scheduler s = builder.build();
        schedulers.add(s);
        s.start();
        return s;
    }

    @Test
    void twoWorkersOnOneStoreRunEachSlotOnce() {
        InMemoryLockProvider store = InMemoryLockProvider.create();
        Map<Instant, List<String>> runs = new ConcurrentHashMap<>();
        for (String id : List.of("w1", "w2")) {
            start(Scheduler.builder(store).workerId(id).job(job("tick", Duration.ofSeconds(5), Overlap.SKIP, Duration.ZERO))
                    .jobFactory(d -> ctx -> runs.computeIfAbsent(ctx.scheduledTime(), k -> new CopyOnWriteArrayList<>()).add(ctx.workerId())));
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> runs.size() >= 4);
        assertThat(runs.values()).allSatisfy(workers -> assertThat(workers).hasSize(1));
        assertThat(runs.keySet()).allSatisfy(slot -> assertThat(slot.getNano()).isZero());
    }

    @Test
    void aFailingJobKeepsItsSchedule() {
        AtomicInteger calls = new AtomicInteger();
        start(Scheduler.builder(InMemoryLockProvider.create()).workerId("w")
                .job(job("boom", Duration.ofSeconds(5), Overlap.SKIP, Duration.ZERO))
                .jobFactory(d -> ctx -> {
                    calls.incrementAndGet();
                    throw new IllegalStateException("always fails");
                }));
        await().atMost(Duration.ofSeconds(10)).until(() -> calls.get() >= 3);
        await().until(() -> events.named("job_failed").size() >= 3);
        assertThat(events.named("job_failed").get(0))
                .containsEntry("level", "ERROR").containsEntry("error", "java.lang.IllegalStateException: always fails");
        assertThat(events.named("slot_released")).anySatisfy(e -> assertThat(e).containsEntry("outcome", "failed"));
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
        start(Scheduler.builder(store).workerId("narrow").threads(1).jobs(List.of(a, b)).jobFactory(d -> slow));
        start(Scheduler.builder(store).workerId("wide").threads(8).jobs(List.of(a, b)).jobFactory(d -> slow));
        await().atMost(Duration.ofSeconds(15)).until(() -> events.named("job_started").size() >= 12);
        // The narrow worker never holds more slots than its one thread can start: nothing waits in a queue.
        assertThat(events.named("job_started")).allSatisfy(e -> assertThat((Long) e.get("lateness_ms")).isLessThan(1_000L));
        assertThat(perWorker.get("wide").get()).isGreaterThan(perWorker.getOrDefault("narrow", new AtomicInteger()).get());
        assertThat(events.named("slot_missed")).isEmpty();
        Map<Object, Long> startsPerSlot = events.named("job_started").stream()
                .collect(Collectors.groupingBy(e -> e.get("job") + "@" + e.get("slot"), Collectors.counting()));
        assertThat(startsPerSlot.values()).containsOnly(1L);
    }

    @Test
    void aLoneOverloadedWorkerReportsEverySlotItCannotRunAsMissed() {
        Job slow = ctx -> TimeUnit.MILLISECONDS.sleep(1_800);
        List<JobDefinition> jobs = List.of(
                job("x", Duration.ofSeconds(5), Overlap.ALLOW, Duration.ZERO),
                job("y", Duration.ofSeconds(5), Overlap.ALLOW, Duration.ZERO));
        Scheduler s = start(Scheduler.builder(InMemoryLockProvider.create()).workerId("solo").threads(1)
                .jobs(jobs).jobFactory(d -> slow));
        await().atMost(Duration.ofSeconds(20)).until(() -> events.named("slot_missed").size() >= 3);
        s.close();
        // No silent miss: every slot that fell due either started or was reported missed, once.
        Set<String> started = keys("job_started");
        Set<String> missed = keys("slot_missed");
        assertThat(started).doesNotContainAnyElementsOf(missed);
        Instant first = events.named("job_started").stream().map(e -> Instant.parse((String) e.get("slot")))
                .min(Instant::compareTo).orElseThrow();
        Instant last = events.named("slot_missed").stream().map(e -> Instant.parse((String) e.get("slot")))
                .max(Instant::compareTo).orElseThrow();
        for (Instant slot = first; !slot.isAfter(last); slot = slot.plusSeconds(1)) {
            for (String job : List.of("x", "y")) {
                assertThat(started.contains(job + "@" + slot) || missed.contains(job + "@" + slot))
                        .as("%s@%s ran or was reported missed", job, slot).isTrue();
            }
        }
        assertThat(events.named("slot_missed")).allSatisfy(e -> assertThat((String) e.get("reason")).contains("no free job thread"));
    }

    @Test
    void aShutdownLetsTheRunningJobFinishAndRecordsItsOutcome() {
        InMemoryLockProvider store = InMemoryLockProvider.create();
        CountDownLatch running = new CountDownLatch(1);
        Scheduler s = start(Scheduler.builder(store).workerId("w").shutdownTimeout(Duration.ofSeconds(10))
                .job(job("report", Duration.ofSeconds(5), Overlap.SKIP, Duration.ZERO))
                .jobFactory(d -> ctx -> {
                    running.countDown();
                    TimeUnit.MILLISECONDS.sleep(700);
                }));
        await().until(() -> running.getCount() == 0);
        Instant slot = Instant.parse((String) events.named("job_started").get(0).get("slot"));
        s.close();
        assertThat(events.named("job_succeeded")).extracting(e -> e.get("slot")).contains(slot.toString());
        assertThat(store.slotState("report", slot)).contains("done:succeeded");
        assertThat(events.named("worker_stopped")).singleElement().satisfies(e -> assertThat(e).containsEntry("drained", true));
    }

    @Test
    void aShutdownInterruptsJobsThatOutliveTheTimeoutAndRecordsThat() {
        InMemoryLockProvider store = InMemoryLockProvider.create();
        CountDownLatch running = new CountDownLatch(1);
        Scheduler s = start(Scheduler.builder(store).workerId("w").shutdownTimeout(Duration.ofMillis(200))
                .job(job("stuck", Duration.ofSeconds(5), Overlap.SKIP, Duration.ZERO))
                .jobFactory(d -> ctx -> {
                    running.countDown();
                    TimeUnit.SECONDS.sleep(60);
                }));
        await().until(() -> running.getCount() == 0);
        Instant slot = Instant.parse((String) events.named("job_started").get(0).get("slot"));
        long before = System.nanoTime();
        s.close();
        assertThat(Duration.ofNanos(System.nanoTime() - before)).isLessThan(Duration.ofSeconds(5));
        assertThat(store.slotState("stuck", slot)).contains("done:interrupted");
        assertThat(events.named("job_failed")).singleElement()
                .satisfies(e -> assertThat(e).containsEntry("reason", "interrupted by shutdown"));
    }

    @Test
    void aRefusedRenewalInterruptsTheJobAndStopsRenewing() {
        FaultyStore store = new FaultyStore();
        CountDownLatch running = new CountDownLatch(1);
        List<Boolean> sawLost = new CopyOnWriteArrayList<>();
        start(Scheduler.builder(store).workerId("w")
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
        await().atMost(Duration.ofSeconds(5)).until(() -> !events.named("lease_lost").isEmpty());
        await().until(() -> !sawLost.isEmpty());
        assertThat(sawLost.get(0)).isTrue();
        assertThat(events.named("lease_lost").get(0)).containsEntry("level", "WARN")
                .containsEntry("reason", "renewal refused: the token no longer owns the lease");
        assertThat(events.named("job_failed").get(0)).containsEntry("reason", "lease lost");
    }

    @Test
    void aRunOverItsTimeoutIsInterruptedAndReported() {
        CountDownLatch interrupted = new CountDownLatch(1);
        start(Scheduler.builder(InMemoryLockProvider.create()).workerId("w")
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
        await().until(() -> !events.named("job_timed_out").isEmpty());
        await().until(() -> events.named("slot_released").stream().anyMatch(e -> "timed_out".equals(e.get("outcome"))));
    }

    @Test
    void anUnreachableStoreFailsClosedWarnsOnceAndRecovers() {
        FaultyStore store = new FaultyStore();
        AtomicInteger runs = new AtomicInteger();
        start(Scheduler.builder(store).workerId("w")
                .job(job("tick", Duration.ofSeconds(5), Overlap.SKIP, Duration.ZERO))
                .jobFactory(d -> ctx -> runs.incrementAndGet()));
        await().atMost(Duration.ofSeconds(5)).until(() -> runs.get() >= 1);
        store.down = true;
        int callsAtOutage = store.claimCalls;
        await().atMost(Duration.ofSeconds(5)).until(() -> store.claimCalls >= callsAtOutage + 8);
        int runsDuringOutage = runs.get();
        await().atMost(Duration.ofSeconds(5)).until(() -> store.claimCalls >= callsAtOutage + 12);
        assertThat(runs.get()).as("no job runs while claims fail").isEqualTo(runsDuringOutage);
        assertThat(events.named("redis_error").stream().filter(e -> "WARN".equals(e.get("level")))).hasSize(1);

        store.down = false;
        await().atMost(Duration.ofSeconds(3)).until(() -> runs.get() > runsDuringOutage);
        assertThat(events.named("redis_recovered")).hasSize(1);
    }

    @Test
    void aWorkerWhoseClockRunsAheadStillFiresOnTheStoreClock() {
        InMemoryLockProvider store = InMemoryLockProvider.create(); // "server time" is the true clock
        List<Long> earlyByMillis = new CopyOnWriteArrayList<>();
        start(Scheduler.builder(store).workerId("fast").clock(Clock.offset(Clock.systemUTC(), Duration.ofSeconds(5)))
                .job(job("tick", Duration.ofSeconds(5), Overlap.SKIP, Duration.ZERO))
                .jobFactory(d -> ctx -> earlyByMillis.add(ctx.scheduledTime().toEpochMilli() - System.currentTimeMillis())));
        await().atMost(Duration.ofSeconds(10)).until(() -> earlyByMillis.size() >= 3);
        assertThat(earlyByMillis).allSatisfy(early -> assertThat(early).isLessThanOrEqualTo(0L));
    }

    private Set<String> keys(String event) {
        return events.named(event).stream().map(e -> e.get("job") + "@" + e.get("slot")).collect(Collectors.toSet());
    }
}
