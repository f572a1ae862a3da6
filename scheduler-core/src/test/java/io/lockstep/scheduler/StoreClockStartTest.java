package io.lockstep.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lockstep.scheduler.cron.CronSchedule;
import io.lockstep.scheduler.lock.InMemoryLockProvider;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * When a run starts, by the store's clock: its lateness is measured by the readings its own replies
 * carried (not by the worker's reckoning of the store's clock, which drifts between readings), and a
 * run of a job whose runs may overlap that its worker held up past its turn is not started, so that
 * no older slot begins after a newer one (guarantee 10).
 */
class StoreClockStartTest {

    private static final CronSchedule EVERY_SECOND = CronSchedule.of("* * * * * *", ZoneOffset.UTC);

    @RegisterExtension
    final SchedulerHarness harness = new SchedulerHarness();

    private static JobDefinition job(String name, Overlap overlap) {
        return new JobDefinition(name, EVERY_SECOND, Job.class.getName(), Map.of(), Duration.ofSeconds(5), Duration.ofSeconds(2),
                overlap, Duration.ZERO, true);
    }

    /**
     * The store's clock runs 5 % faster than this host's monotonic clock (a Redis host whose clock NTP
     * slews, or steps): between two readings the worker's reckoning falls behind it, by up to 150 ms
     * over a heartbeat's 3 s. In CI this made runs claimed ahead log {@code lateness_ms} of -100 to
     * -240 ms, and {@code audit} report them as started before their slots, though each began at its
     * slot by the store's clock (its start waits for it, counted from the claim's own reply).
     */
    @Test
    void latenessIsMeasuredByTheStoresClockAsTheRunsRepliesReadIt() {
        long base = System.currentTimeMillis();
        long baseNanos = System.nanoTime();
        InMemoryLockProvider store = InMemoryLockProvider.withClock(() -> base + (System.nanoTime() - baseNanos) * 105 / 100 / 1_000_000);
        harness.start(Scheduler.builder(store).workerId("w").job(job("drifting", Overlap.SKIP)).jobFactory(d -> ctx -> { }));
        await().atMost(Duration.ofSeconds(20)).until(() -> harness.events().named("job_started").size() >= 8);
        assertThat(harness.events().named("job_started")).allSatisfy(e ->
                assertThat(((Number) e.get("lateness_ms")).longValue()).as("lateness of %s", e.get("slot")).isBetween(0L, 1_000L));
    }

    @Test
    void aRunHeldUpPastTheNextSlotIsNotStartedAndIsReportedMissedInOrder() {
        InMemoryLockProvider store = InMemoryLockProvider.create();
        ThreadPoolExecutor pool = new ThreadPoolExecutor(1, 1, 60, TimeUnit.SECONDS, new LinkedBlockingQueue<>());
        CountDownLatch poolFree = new CountDownLatch(1);
        pool.execute(() -> { // the pool's only thread is taken (a starved or stalled worker): a claimed run waits
            try {
                poolFree.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        try {
            harness.start(Scheduler.builder(store).workerId("w").threads(1).executor(pool)
                    .job(job("overlapping", Overlap.ALLOW)).jobFactory(d -> ctx -> { }));
            await().atMost(Duration.ofSeconds(10)).until(() -> !harness.events().named("slot_claimed").isEmpty());
            Map<String, Object> claimed = harness.events().named("slot_claimed").get(0);
            Instant slot = Instant.parse((String) claimed.get("slot"));
            Object token = claimed.get("identifier");
            // Held up until well past the next slot by the store's clock, when a peer could have run it.
            await().atMost(Duration.ofSeconds(10)).until(() -> store.serverTimeMillis() > slot.toEpochMilli() + 1_300);
            assertThat(pool.getQueue()).as("the run still waits for a thread").hasSize(1);
            poolFree.countDown();
            await().atMost(Duration.ofSeconds(10)).until(() -> harness.events().named("slot_released").stream()
                    .anyMatch(e -> token.equals(e.get("identifier"))));

            assertThat(harness.events().named("job_started")).noneMatch(e -> slot.toString().equals(e.get("slot")));
            assertThat(harness.events().named("slot_missed")).filteredOn(e -> slot.toString().equals(e.get("slot"))).singleElement()
                    .satisfies(e -> assertThat(e).containsEntry("code", "order"));
            assertThat(harness.events().named("slot_released")).filteredOn(e -> token.equals(e.get("identifier"))).singleElement()
                    .satisfies(e -> assertThat(e).containsEntry("outcome", "missed").containsEntry("success", true));
            // Closed, not handed back: nobody runs it later (which would be later still), and the job goes on.
            List<String> runs = harness.events().named("job_started").stream().map(e -> (String) e.get("slot")).filter(Objects::nonNull).toList();
            await().atMost(Duration.ofSeconds(10)).until(() -> harness.events().named("job_started").size() >= runs.size() + 2);
            assertThat(harness.events().named("job_started")).noneMatch(e -> slot.toString().equals(e.get("slot")));
        } finally {
            poolFree.countDown();
            harness.closeAll();
            pool.shutdownNow();
        }
    }
}
