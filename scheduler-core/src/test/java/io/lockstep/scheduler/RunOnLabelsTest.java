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
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Jobs with {@code runOn: {labels}} on workers with and without them, on one in-memory store. */
class RunOnLabelsTest {

    @RegisterExtension
    final SchedulerHarness harness = new SchedulerHarness();

    private static JobDefinition everySecond(String name, Set<String> labels) {
        return new JobDefinition(name, CronSchedule.of("* * * * * *", ZoneOffset.UTC), Job.class.getName(), Map.of(),
                Duration.ofSeconds(5), Duration.ofSeconds(1), Overlap.SKIP, Duration.ZERO, true).withRunOn(new RunOn(labels));
    }

    @Test
    void aLabelledJobRunsOnlyWhereItsLabelsAreAndAJobNoWorkerCanRunIsReportedEverySlot() {
        InMemoryLockProvider store = InMemoryLockProvider.create();
        Map<String, Set<String>> ranOn = new ConcurrentHashMap<>(); // job -> workers
        Map<String, Set<Instant>> slots = new ConcurrentHashMap<>();
        for (String id : List.of("gpu-box", "plain-1", "plain-2")) {
            harness.start(Scheduler.builder(store).workerId(id).labels(id.equals("gpu-box") ? Set.of("gpu") : Set.of())
                    .job(everySecond("render", Set.of("gpu")))
                    .job(everySecond("train", Set.of("tpu")))
                    .job(everySecond("any", Set.of()))
                    .jobFactory(d -> ctx -> {
                        ranOn.computeIfAbsent(d.name(), k -> ConcurrentHashMap.newKeySet()).add(ctx.workerId());
                        slots.computeIfAbsent(d.name(), k -> ConcurrentHashMap.newKeySet()).add(ctx.scheduledTime());
                    }));
        }
        await().atMost(Duration.ofSeconds(20)).until(() -> harness.events().named("slot_missed", "train").size() >= 4
                && slots.getOrDefault("render", Set.of()).size() >= 4);
        harness.closeAll();
        assertThat(ranOn.get("render")).as("only the worker with the label").containsExactly("gpu-box");
        assertThat(ranOn).doesNotContainKey("train");
        List<Map<String, Object>> missed = harness.events().named("slot_missed", "train");
        assertThat(missed).allSatisfy(e -> assertThat(e).containsEntry("code", "no_worker"));
        assertThat(missed.stream().collect(Collectors.groupingBy(e -> e.get("slot"), Collectors.counting())).values())
                .as("each slot reported once, by the worker whose miss decided it").containsOnly(1L);
        // Every slot of the job, from the first reported to the last, was reported: none silent.
        List<Instant> reported = missed.stream().map(e -> Instant.parse((String) e.get("slot"))).sorted().toList();
        assertThat(Duration.between(reported.get(0), reported.get(reported.size() - 1)).toSeconds() + 1).isEqualTo(reported.size());
        assertThat(harness.events().named("slot_missed", "render")).as("the labelled worker runs its slots").isEmpty();
    }
}
