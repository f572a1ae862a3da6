package io.lockstep.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lockstep.scheduler.cron.CronSchedule;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Claims ahead that do not wait for threads ({@link JobThreads#canQueue}): a worker with fewer job
 * threads than its share of an instant claims, ahead and in one round trip, every slot its short
 * runs let a thread take within 250 ms, and its pool starts them as threads free up; a run that still
 * finds no thread within its grace is handed back unstarted and reported, never run late or lost.
 */
class BacklogTest {

    private static final CronSchedule EVERY_SECOND = CronSchedule.of("* * * * * *", ZoneOffset.UTC);

    @RegisterExtension
    final SchedulerHarness harness = new SchedulerHarness();

    private static List<JobDefinition> jobs(int n, Duration grace) {
        return IntStream.range(0, n).mapToObj(i -> new JobDefinition("j" + i, EVERY_SECOND, Job.class.getName(), Map.of(),
                Duration.ofSeconds(5), grace, Overlap.SKIP, Duration.ZERO, true)).toList();
    }

    /**
     * 24 slots an instant on 2 threads, each claim round trip 20 ms. Waiting for threads, the worker
     * claimed 2 slots a round trip: 12 calls an instant, each after a run ended. Queuing them, once a
     * few runs showed how short they are, it claims the instant's slots in one call or two.
     */
    @Test
    void aWorkerWithFewThreadsClaimsAheadEverySlotItsShortRunsLetAThreadTakeSoon() {
        FaultyStore store = new FaultyStore();
        store.claimDelayMillis = 20;
        harness.start(Scheduler.builder(store).workerId("w").threads(2).jobs(jobs(24, Duration.ofSeconds(5))).jobFactory(d -> ctx -> { }));
        await().atMost(Duration.ofSeconds(20)).until(() -> harness.events().named("job_succeeded").size() >= 48); // two instants: the mean is known
        Instant from = Instant.now().truncatedTo(ChronoUnit.SECONDS).plusSeconds(1);
        await().atMost(Duration.ofSeconds(5)).until(() -> !Instant.now().isBefore(from.minusMillis(500)));
        int callsBefore = store.claimCalls;
        Instant to = from.plusSeconds(4);
        await().atMost(Duration.ofSeconds(10)).until(() -> !Instant.now().isBefore(to.minusMillis(500)));
        int calls = store.claimCalls - callsBefore;
        assertThat(calls).as("claim calls for the 4 instants from %s (12 an instant when claims waited for threads)", from)
                .isLessThanOrEqualTo(4 * 3);
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(
                SlotCoverage.silent(harness.events().handledPerSlot().keySet(), names(24), from, to, Duration.ofSeconds(1)))
                .as("slots neither started nor reported").isEmpty());
        assertThat(harness.events().named("slot_missed")).isEmpty();
        assertThat(harness.events().handledPerSlot().values()).containsOnly(1L);
    }

    /**
     * On one thread, 4 runs claimed ahead for one instant (short runs so far), and the first of them
     * to get the thread holds it 1.5 s, past the others' grace of 1 s: they never start late, each is
     * handed back unstarted and reported missed by its recovery, once.
     */
    @Test
    void aQueuedRunThatGetsNoThreadWithinItsGraceIsHandedBackAndReportedNeverRunLate() {
        Instant slow = Instant.now().truncatedTo(ChronoUnit.SECONDS).plusSeconds(4);
        harness.start(Scheduler.builder(new FaultyStore()).workerId("w").threads(1).jobs(jobs(4, Duration.ofSeconds(1)))
                .jobFactory(d -> ctx -> {
                    if (ctx.scheduledTime().equals(slow)) {
                        TimeUnit.MILLISECONDS.sleep(1_500);
                    }
                }));
        List<String> keys = names(4).stream().map(j -> SlotCoverage.key(j, slow)).toList();
        await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> assertThat(harness.events().handledPerSlot().keySet())
                .as("the slow instant's slots, each started or reported").containsAll(keys));
        List<String> started = harness.events().named("job_started").stream().map(e -> e.get("job") + "@" + e.get("slot"))
                .filter(keys::contains).toList();
        assertThat(started).as("the one run that got the thread").hasSize(1);
        assertThat(harness.events().named("job_started")).filteredOn(e -> keys.contains(e.get("job") + "@" + e.get("slot")))
                .allSatisfy(e -> assertThat((Long) e.get("lateness_ms")).isLessThan(1_000L));
        Map<String, Long> missed = harness.events().named("slot_missed").stream().map(e -> e.get("job") + "@" + e.get("slot"))
                .filter(keys::contains).collect(Collectors.groupingBy(k -> k, Collectors.counting()));
        assertThat(missed).as("the runs queued behind it").hasSize(3).allSatisfy((k, n) -> assertThat(n).isEqualTo(1L));
        assertThat(harness.events().handledPerSlot().values()).containsOnly(1L);
    }

    private static List<String> names(int n) {
        return IntStream.range(0, n).mapToObj(i -> "j" + i).toList();
    }
}
