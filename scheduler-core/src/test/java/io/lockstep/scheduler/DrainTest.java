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
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * F3 of the 2026-12-04 trial: a deploy drains a worker before it stops it. {@link Scheduler#drain}
 * stops claiming and lets a running job finish within its own deadline, however much longer than
 * the shutdown timeout a SIGTERM allows; an operator's request ({@code lockstep drain}) reaches the
 * worker through its heartbeat.
 */
class DrainTest {

    @RegisterExtension
    final SchedulerHarness harness = new SchedulerHarness();

    private static JobDefinition everySecond(String name, Overlap overlap) {
        return new JobDefinition(name, CronSchedule.of("* * * * * *", ZoneOffset.UTC), Job.class.getName(), Map.of(),
                Duration.ofSeconds(5), Duration.ofSeconds(2), overlap, Duration.ZERO, true);
    }

    @Test
    void aDrainLetsARunLongerThanTheShutdownTimeoutFinishAndClaimsNothingNew() throws Exception {
        CountDownLatch running = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        List<Instant> finished = new CopyOnWriteArrayList<>();
        List<Instant> interrupted = new CopyOnWriteArrayList<>();
        List<Instant> begun = new CopyOnWriteArrayList<>();
        // overlap: allow and 4 threads: without the drain, each second would begin another run beside the held one.
        Scheduler scheduler = harness.start(Scheduler.builder(InMemoryLockProvider.create()).workerId("w").threads(4)
                .shutdownTimeout(Duration.ofMillis(200)).job(everySecond("batch", Overlap.ALLOW)).jobFactory(d -> ctx -> {
                    begun.add(ctx.scheduledTime());
                    running.countDown();
                    try {
                        release.await(); // the batch's work, held past the shutdown timeout by the test
                    } catch (InterruptedException e) {
                        interrupted.add(ctx.scheduledTime());
                        throw e;
                    }
                    finished.add(ctx.scheduledTime());
                }));
        assertThat(running.await(10, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
        Instant drainAt = Instant.now();
        Thread drainer = new Thread(() -> scheduler.drain(Duration.ofSeconds(30)), "test-drain");
        drainer.start();
        await().atMost(Duration.ofSeconds(5)).until(() -> scheduler.health().reason().equals("draining"));
        assertThat(scheduler.health().live()).as("alive while draining: a liveness probe must not restart it").isTrue();
        assertThat(scheduler.health().ready()).isFalse();
        // Well past the 200 ms shutdown timeout: a close would have interrupted the run by now.
        await().pollDelay(Duration.ofMillis(1_500)).atMost(Duration.ofSeconds(3)).until(drainer::isAlive);
        assertThat(interrupted).as("not interrupted: the drain's deadline is its own").isEmpty();
        // A slot claimed ahead just before the drain may still begin; none of the seconds after (each would have).
        assertThat(begun).as("nothing new claimed while draining").allMatch(slot -> slot.isBefore(drainAt.plusSeconds(1)));
        int begunAtDrain = begun.size();
        release.countDown();
        drainer.join(Duration.ofSeconds(10).toMillis());
        assertThat(drainer.isAlive()).isFalse();
        assertThat(finished).hasSize(begunAtDrain);
        assertThat(interrupted).isEmpty();
        assertThat(harness.events().named("job_succeeded")).hasSize(begunAtDrain);
        assertThat(harness.events().named("job_failed")).isEmpty();
        assertThat(harness.events().named("worker_stopping")).singleElement().satisfies(e -> assertThat(e).containsEntry("drain", true));
    }

    @Test
    void aCloseDuringADrainGivesTheRunningJobsNoMoreThanTheShutdownTimeout() throws Exception {
        CountDownLatch running = new CountDownLatch(1);
        List<Instant> interrupted = new CopyOnWriteArrayList<>();
        Scheduler scheduler = harness.start(Scheduler.builder(InMemoryLockProvider.create()).workerId("w")
                .shutdownTimeout(Duration.ofMillis(300)).job(everySecond("batch", Overlap.SKIP)).jobFactory(d -> ctx -> {
                    running.countDown();
                    try {
                        new CountDownLatch(1).await(); // never released: only an interrupt ends it
                    } catch (InterruptedException e) {
                        interrupted.add(ctx.scheduledTime());
                        throw e;
                    }
                }));
        assertThat(running.await(10, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
        Thread drainer = new Thread(() -> scheduler.drain(Duration.ofHours(1)), "test-drain");
        drainer.start();
        await().atMost(Duration.ofSeconds(5)).until(() -> scheduler.health().reason().equals("draining"));
        long closing = System.nanoTime();
        scheduler.close(); // a SIGTERM during the drain: the shutdown timeout from now, not the drain's hour
        drainer.join(Duration.ofSeconds(10).toMillis());
        assertThat(drainer.isAlive()).isFalse();
        assertThat(interrupted).as("cut off by the close").hasSize(1);
        assertThat((System.nanoTime() - closing) / 1_000_000).as("ms the close took (timeout 300 ms, then at most the 5 s interrupt grace)")
                .isLessThan(8_000L);
    }

    @Test
    void anOperatorsRequestReachesTheWorkerThroughItsHeartbeatAndByDefaultDrainsIt() {
        FaultyStore asked = new FaultyStore();
        asked.drainAsked.set(Duration.ofMinutes(7));
        List<Duration> told = new CopyOnWriteArrayList<>();
        harness.start(Scheduler.builder(asked).workerId("told")
                .job(everySecond("a", Overlap.SKIP)).jobFactory(d -> ctx -> { }).onDrainRequest(told::add));
        await().atMost(Duration.ofSeconds(10)).until(() -> !told.isEmpty());
        assertThat(told).containsExactly(Duration.ofMinutes(7));
        assertThat(harness.events().named("drain_requested")).singleElement().satisfies(e -> assertThat(e).containsEntry("within_ms", 420_000L));

        FaultyStore self = new FaultyStore();
        self.drainAsked.set(Duration.ofMinutes(1));
        Scheduler itself = harness.start(Scheduler.builder(self)
                .workerId("itself").job(everySecond("b", Overlap.SKIP)).jobFactory(d -> ctx -> { }));
        await().atMost(Duration.ofSeconds(10)).until(() -> harness.events().named("worker_stopped").stream()
                .anyMatch(e -> "itself".equals(e.get("worker"))));
    }
}
