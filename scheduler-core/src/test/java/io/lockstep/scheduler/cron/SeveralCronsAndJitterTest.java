package io.lockstep.scheduler.cron;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Several expressions per schedule, Jenkins' {@code H}, and the stable jitter offset (pure calls of {@link CronSchedule#next}). */
class SeveralCronsAndJitterTest {

    private static final ZoneId UTC = ZoneId.of("UTC");

    private static List<Instant> fires(CronSchedule schedule, String from, String to) {
        return CronScheduleTest.fires(schedule, from, to);
    }

    @Test
    void severalExpressionsFireAtTheirUnionAndAnInstantTwoShareIsOneSlot() {
        // Fri 2026-12-04, Sat 12-05, Sun 12-06, Mon 12-07: weekdays at 9, Saturdays at 12, and every day at 9 again.
        CronSchedule s = CronSchedule.of(List.of("0 0 9 * * MON-FRI", "0 0 12 * * SAT", "0 9 * * *"), UTC, "report");
        assertThat(fires(s, "2026-12-04T00:00:00Z", "2026-12-08T00:00:00Z")).containsExactly(
                Instant.parse("2026-12-04T09:00:00Z"), // both the first and the third: one slot
                Instant.parse("2026-12-05T09:00:00Z"),
                Instant.parse("2026-12-05T12:00:00Z"),
                Instant.parse("2026-12-06T09:00:00Z"),
                Instant.parse("2026-12-07T09:00:00Z"));
        assertThat(s.expression()).isEqualTo("0 0 9 * * MON-FRI; 0 0 12 * * SAT; 0 9 * * *");
    }

    @Test
    void hIsTheSameForTheSameNameEverywhereAndStaysInItsRange() {
        List<String> first = CronSchedule.of(List.of("H H(1-3) * * *", "H/15 * * * *", "0 H * * H"), UTC, "nightly-export").expanded();
        List<String> again = CronSchedule.of(List.of("H H(1-3) * * *", "H/15 * * * *", "0 H * * H"), UTC, "nightly-export").expanded();
        assertThat(again).isEqualTo(first);
        // The hash is SHA-256 of the name, field and position: pinned, so that no version moves a slot.
        assertThat(first).containsExactly("41 3 * * *", "11-59/15 * * * *", "0 17 * * 3");
        Set<String> minutes = new HashSet<>();
        for (int i = 0; i < 200; i++) {
            String[] f = CronSchedule.of(List.of("H H(1-3) H * *"), UTC, "job-" + i).expanded().get(0).split(" ");
            assertThat(Integer.parseInt(f[0])).isBetween(0, 59);
            assertThat(Integer.parseInt(f[1])).isBetween(1, 3);
            assertThat(Integer.parseInt(f[2])).isBetween(1, 28); // every month has it
            minutes.add(f[0]);
        }
        assertThat(minutes).as("200 names spread over the hour").hasSizeGreaterThan(40);
    }

    @Test
    void dayNamesWithAnHAreDaysNotHashes() {
        // THU holds an H: it is a day name, with or without a name to hash (a review found it read as Jenkins' H).
        CronSchedule thursdays = CronSchedule.of("0 9 * * THU", UTC);
        assertThat(thursdays.next(Instant.parse("2026-12-04T00:00:00Z"))).contains(Instant.parse("2026-12-10T09:00:00Z"));
        CronSchedule named = CronSchedule.of(List.of("0 9 * * MON-THU", "0 0 12 * * TUE,THU"), UTC, "report");
        assertThat(named.expanded()).containsExactly("0 9 * * MON-THU", "0 0 12 * * TUE,THU");
        assertThat(CronSchedule.of(List.of("H 9 * * THU"), UTC, "report").expanded().get(0)).endsWith(" 9 * * THU");
    }

    @Test
    void hEveryFifteenMinutesFiresFourTimesAnHourFromItsOffset() {
        CronSchedule s = CronSchedule.of(List.of("H/15 * * * *"), UTC, "nightly-export"); // 11-59/15
        assertThat(fires(s, "2026-12-04T10:00:00Z", "2026-12-04T11:00:00Z")).containsExactly(
                Instant.parse("2026-12-04T10:11:00Z"), Instant.parse("2026-12-04T10:26:00Z"),
                Instant.parse("2026-12-04T10:41:00Z"), Instant.parse("2026-12-04T10:56:00Z"));
    }

    @Test
    void aMalformedHOrOneWithoutANameIsRefusedWithOneLine() {
        assertThatThrownBy(() -> CronSchedule.of("H 2 * * *", UTC)).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("\"H 2 * * *\" uses H, which needs a name to hash (a job's name or jitterSeed)");
        assertThatThrownBy(() -> CronSchedule.of(List.of("H(50-70) * * * *"), UTC, "a"))
                .hasMessage("H(50-70) in the minute of \"H(50-70) * * * *\" must be a range within 0-59");
        assertThatThrownBy(() -> CronSchedule.of(List.of("0 H2 * * *"), UTC, "a"))
                .hasMessage("invalid H \"H2\" in the hour of \"0 H2 * * *\": use H, H(a-b), H/n or H(a-b)/n");
        assertThatThrownBy(() -> CronSchedule.of(List.of("H/0 * * * *"), UTC, "a"))
                .hasMessageContaining("needs a step of at least 1");
        assertThatThrownBy(() -> CronSchedule.of(List.of(), UTC, "a")).hasMessage("needs at least one cron expression");
    }

    @Test
    void jitterShiftsEverySlotByOneStableOffsetBelowIt() {
        CronSchedule hourly = CronSchedule.of(List.of("0 * * * *"), UTC, "sync-a").withJitter(Duration.ofMinutes(5), "sync-a");
        CronSchedule again = CronSchedule.of(List.of("0 * * * *"), UTC, "sync-a").withJitter(Duration.ofMinutes(5), "sync-a");
        Duration offset = hourly.offset();
        assertThat(again.offset()).isEqualTo(offset);
        assertThat(offset).isEqualTo(Duration.ofSeconds(267)); // pinned: SHA-256, not a JVM's hashCode
        List<Instant> slots = fires(hourly, "2026-12-04T10:00:00Z", "2026-12-04T13:00:00Z");
        assertThat(slots).containsExactly(
                Instant.parse("2026-12-04T10:04:27Z"), Instant.parse("2026-12-04T11:04:27Z"), Instant.parse("2026-12-04T12:04:27Z"));
        // Stepping from a slot gives the next one (the scheduler's and the audit's walk).
        assertThat(hourly.next(slots.get(0))).contains(slots.get(1));
        assertThat(hourly.next(slots.get(0).minusMillis(1))).contains(slots.get(0));
        Set<Duration> offsets = new HashSet<>();
        for (int i = 0; i < 300; i++) {
            Duration o = CronSchedule.of(List.of("0 * * * *"), UTC, "j" + i).withJitter(Duration.ofMinutes(5), "j" + i).offset();
            assertThat(o).isBetween(Duration.ZERO, Duration.ofSeconds(299));
            assertThat(o.toMillis() % 1000).isZero();
            offsets.add(o);
        }
        assertThat(offsets).as("300 jobs at :00 spread over 5 minutes").hasSizeGreaterThan(150);
    }

    @Test
    void aJitterLongerThanThePeriodOrUnderASecondIsRefused() {
        CronSchedule twiceAMinute = CronSchedule.of(List.of("0 * * * * *", "30 * * * * *"), UTC, "a"); // :00 and :30
        assertThat(twiceAMinute.period()).contains(Duration.ofSeconds(30));
        // Nominal: a daily job in a zone with daylight saving has a period of a day all year (no 23 h day in spring).
        assertThat(CronSchedule.of(List.of("@daily"), ZoneId.of("Europe/Berlin"), "a").withJitter(Duration.ofHours(24), "a").offset())
                .isLessThan(Duration.ofHours(24));
        assertThatThrownBy(() -> twiceAMinute.withJitter(Duration.ofMinutes(1), "a"))
                .hasMessageContaining("is longer than the schedule's period");
        assertThat(twiceAMinute.withJitter(Duration.ofSeconds(30), "a").offset()).isLessThan(Duration.ofSeconds(30));
        assertThatThrownBy(() -> twiceAMinute.withJitter(Duration.ofMillis(500), "a")).hasMessageContaining("at least 1s");
    }
}
