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
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Cluster-wide limits ({@code uses:}) on two schedulers sharing a store: never more runs of the
 * limit's jobs at once than its size, permits granted in slot order, each run's permit token in its
 * context, and a slot that gets no permit within its grace closed and reported missed, code
 * {@code limit}, never run late.
 */
class LimitsTest {

    @RegisterExtension
    final SchedulerHarness harness = new SchedulerHarness();

    record Ran(String job, Instant slot, long token, int permit, long startNanos) {}

    private static JobDefinition job(String name) {
        return new JobDefinition(name, CronSchedule.of("*/3 * * * * *", ZoneOffset.UTC), Job.class.getName(), Map.of(),
                Duration.ofSeconds(5), Duration.ofSeconds(1), Overlap.SKIP, Duration.ZERO, true).withUses(Map.of("db", 2));
    }

    @Test
    void neverMoreThanTheLimitAtOncePermitsInSlotOrderAndASlotWithoutOneInItsGraceIsMissed() {
        InMemoryLockProvider store = InMemoryLockProvider.create();
        List<Ran> ran = new CopyOnWriteArrayList<>();
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        JobFactory factory = d -> ctx -> {
            most.accumulateAndGet(inside.incrementAndGet(), Math::max);
            try {
                ran.add(new Ran(ctx.jobName(), ctx.scheduledTime(), ctx.permitToken("db"), ctx.permitOf("db"), System.nanoTime()));
                // 4 jobs due together, 2 permits, runs of 1.5 s and a grace of 1 s: two run, two wait and miss
                TimeUnit.MILLISECONDS.sleep(1_500);
            } finally {
                inside.decrementAndGet();
            }
        };
        List<JobDefinition> jobs = List.of(job("a"), job("b"), job("c"), job("d"));
        harness.start(Scheduler.builder(store).workerId("w1").jobs(jobs).jobFactory(factory));
        harness.start(Scheduler.builder(store).workerId("w2").jobs(jobs).jobFactory(factory));
        await().atMost(Duration.ofSeconds(30)).until(() -> ran.size() >= 6
                && !harness.events().named("slot_missed").stream().filter(e -> "limit".equals(e.get("code"))).toList().isEmpty());
        harness.closeAll();

        assertThat(most.get()).as("runs of the limit's jobs at once").isBetween(1, 2);
        assertThat(ran).allSatisfy(r -> assertThat(r.permit()).isBetween(0, 1));
        for (Ran early : ran) { // permits in slot order: two waiters entitled to two free permits take them in either order
            for (Ran late : ran) {
                if (early.slot().isBefore(late.slot())) {
                    assertThat(early.startNanos()).as("%s started after %s", early, late)
                            .isLessThanOrEqualTo(late.startNanos() + TimeUnit.MILLISECONDS.toNanos(400));
                }
            }
        }
        assertThat(ran.stream().map(Ran::token).distinct()).as("a fencing token per grant").hasSize(ran.size());
        List<Map<String, Object>> missed = harness.events().named("slot_missed").stream().filter(e -> "limit".equals(e.get("code"))).toList();
        assertThat(missed).allSatisfy(e -> assertThat(String.valueOf(e.get("reason"))).contains("no permit of the limit db"));
        assertThat(missed).as("a missed slot never ran").noneMatch(e -> ran.stream()
                .anyMatch(r -> r.job().equals(e.get("job")) && r.slot().toString().equals(e.get("slot"))));
        assertThat(harness.events().named("job_started")).allSatisfy(e -> assertThat(String.valueOf(e.get("permits"))).contains("db#"));
    }

    @Test
    void aJobThatUsesALimitIsRefusedOnAStoreWithoutLimits() {
        io.lockstep.scheduler.lock.LockProvider none = new FaultyStore(InMemoryLockProvider.create()); // keeps no limits
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> Scheduler.builder(none).job(job("a")).build())
                .isInstanceOf(LockstepException.class).hasMessageContaining("job a: uses (limits) is not available");
    }
}
