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
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@code runOn: every-worker} on three workers of one in-memory store: each slot once per worker, through a restart. */
class EveryWorkerTest {

    @RegisterExtension
    final SchedulerHarness harness = new SchedulerHarness();

    private static final JobDefinition EVERY = new JobDefinition("refresh", CronSchedule.of("* * * * * *", ZoneOffset.UTC),
            Job.class.getName(), Map.of(), Duration.ofSeconds(5), Duration.ofSeconds(2), Overlap.SKIP, Duration.ZERO, true)
            .withRunOn(RunOn.EVERY_WORKER);

    record Ran(String worker, String job, Instant slot) {}

    private Scheduler start(InMemoryLockProvider store, String id, List<Ran> ran) {
        return harness.start(Scheduler.builder(store).workerId(id).job(EVERY)
                .jobFactory(d -> ctx -> ran.add(new Ran(ctx.workerId(), ctx.jobName(), ctx.scheduledTime()))));
    }

    @Test
    void eachSlotRunsOncePerWorkerAndARestartUnderTheSameIdRunsNoSlotTwice() {
        InMemoryLockProvider store = InMemoryLockProvider.create();
        List<Ran> ran = new CopyOnWriteArrayList<>();
        Scheduler first = start(store, "w1", ran);
        start(store, "w2", ran);
        start(store, "w3", ran);
        await().atMost(Duration.ofSeconds(15)).until(() -> ran.stream().map(Ran::worker).distinct().count() == 3 && ran.size() >= 9);
        first.close();
        Instant restarted = Instant.now();
        start(store, "w1", ran); // the same id: the same instance, its slots already decided stay decided
        await().atMost(Duration.ofSeconds(15)).until(() -> ran.stream().anyMatch(r -> r.worker().equals("w1") && r.slot().isAfter(restarted)));
        harness.closeAll();
        assertThat(ran).allSatisfy(r -> assertThat(r.job()).isEqualTo("refresh@" + r.worker()));
        Map<String, Long> perWorkerSlot = ran.stream().collect(Collectors.groupingBy(r -> r.worker() + " " + r.slot(), Collectors.counting()));
        assertThat(perWorkerSlot.values()).as("once per worker per slot").containsOnly(1L);
        Map<Instant, Long> perSlot = ran.stream().collect(Collectors.groupingBy(Ran::slot, Collectors.counting()));
        assertThat(perSlot.values()).as("a slot runs on several workers").anyMatch(n -> n == 3);
    }
}
