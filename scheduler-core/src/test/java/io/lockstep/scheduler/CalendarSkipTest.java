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

/** Slots a job's calendars exclude, on two workers of one in-memory store: each recorded skipped once, never run. */
class CalendarSkipTest {

    @RegisterExtension
    final SchedulerHarness harness = new SchedulerHarness();

    /** Contains the even seconds: every other slot of a per-second job. */
    private static final JobCalendar EVEN = new JobCalendar() {
        public String name() {
            return "even";
        }

        public boolean contains(Instant instant) {
            return instant.getEpochSecond() % 2 == 0;
        }
    };

    private static JobDefinition everySecond(String name, Calendars calendars) {
        return new JobDefinition(name, CronSchedule.of("* * * * * *", ZoneOffset.UTC), Job.class.getName(), Map.of(),
                Duration.ofSeconds(5), Duration.ofSeconds(2), Overlap.SKIP, Duration.ZERO, true).withCalendars(calendars);
    }

    @Test
    void excludedSlotsAreRecordedSkippedOnceByOneWorkerAndNeverRun() {
        InMemoryLockProvider store = InMemoryLockProvider.create();
        Set<Instant> ran = ConcurrentHashMap.newKeySet();
        for (String id : List.of("w1", "w2")) {
            harness.start(Scheduler.builder(store).workerId(id)
                    .job(everySecond("odd", new Calendars(List.of(EVEN), List.of())))
                    .job(everySecond("even", new Calendars(List.of(), List.of(EVEN))))
                    .jobFactory(d -> ctx -> ran.add(ctx.scheduledTime().plusNanos(d.name().equals("odd") ? 1 : 2))));
        }
        await().atMost(Duration.ofSeconds(15)).until(() -> harness.events().named("slot_skipped", "odd").size() >= 3
                && harness.events().named("slot_skipped", "even").size() >= 3);
        harness.closeAll();
        List<Map<String, Object>> skipped = harness.events().named("slot_skipped");
        assertThat(skipped).allSatisfy(e -> assertThat(e).containsEntry("code", "calendar"));
        assertThat(harness.events().named("slot_skipped", "odd")).allSatisfy(e -> assertThat(e).containsEntry("reason", "calendar: skipOn even"));
        assertThat(harness.events().named("slot_skipped", "even")).allSatisfy(e -> assertThat(e).containsEntry("reason", "calendar: onlyOn even"));
        Map<String, Long> perSlot = skipped.stream().collect(Collectors.groupingBy(e -> e.get("job") + "@" + e.get("slot"), Collectors.counting()));
        assertThat(perSlot.values()).as("each slot skipped by one worker").containsOnly(1L);
        for (Map<String, Object> e : skipped) {
            Instant slot = Instant.parse((String) e.get("slot"));
            boolean even = slot.getEpochSecond() % 2 == 0;
            assertThat(even).as("%s", e).isEqualTo(e.get("job").equals("odd"));
            assertThat(ran).as("never run").doesNotContain(slot.plusNanos(e.get("job").equals("odd") ? 1 : 2));
        }
        assertThat(ran).as("the slots the calendars let through run").anyMatch(i -> i.getNano() == 1).anyMatch(i -> i.getNano() == 2);
        assertThat(ran).allSatisfy(i -> assertThat(i.getEpochSecond() % 2 == 0).isEqualTo(i.getNano() == 2));
    }

    @Test
    void aCalendarThatThrowsExcludesNothingAndIsReported() {
        JobCalendar broken = new JobCalendar() {
            public String name() {
                return "broken";
            }

            public boolean contains(Instant instant) {
                throw new IllegalStateException("table not loaded");
            }
        };
        Set<Instant> ran = ConcurrentHashMap.newKeySet();
        harness.start(Scheduler.builder(InMemoryLockProvider.create()).workerId("w")
                .job(everySecond("tick", new Calendars(List.of(broken), List.of())))
                .jobFactory(d -> ctx -> ran.add(ctx.scheduledTime())));
        await().atMost(Duration.ofSeconds(10)).until(() -> ran.size() >= 2);
        assertThat(harness.events().named("calendar_failed")).isNotEmpty().allSatisfy(e -> assertThat(e)
                .containsEntry("level", "ERROR").containsEntry("calendar", "broken")
                .containsEntry("error", "java.lang.IllegalStateException: table not loaded"));
        assertThat(harness.events().named("slot_skipped")).isEmpty();
    }
}
