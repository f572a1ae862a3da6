package io.lockstep.scheduler.cron;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Cron evaluation stepped on a manual clock (pure calls of {@link CronSchedule#next}) across the
 * 2026 daylight-saving transitions of Europe/Berlin (29 March, 25 October) and America/New_York
 * (8 March, 1 November).
 */
class CronScheduleTest {

    private static final ZoneId BERLIN = ZoneId.of("Europe/Berlin");
    private static final ZoneId NEW_YORK = ZoneId.of("America/New_York");
    private static final ZoneId UTC = ZoneId.of("UTC");

    /** Every fire time in [from, to), stepping from one to the next as the scheduler does. */
    static List<Instant> fires(CronSchedule schedule, String from, String to) {
        List<Instant> result = new ArrayList<>();
        Instant cursor = Instant.parse(from).minusNanos(1);
        Instant end = Instant.parse(to);
        while (true) {
            Instant next = schedule.next(cursor).orElseThrow();
            if (!next.isBefore(end)) {
                return result;
            }
            result.add(next);
            cursor = next;
        }
    }

    private static List<Instant> instants(String... values) {
        return java.util.Arrays.stream(values).map(Instant::parse).toList();
    }

    @Test
    void berlinFixedHourInTheSpringGapRunsOnceRightAfterTheGap() {
        CronSchedule daily = CronSchedule.of("30 2 * * *", BERLIN);
        assertThat(fires(daily, "2026-03-28T00:00:00Z", "2026-03-31T00:00:00Z")).containsExactlyElementsOf(instants(
                "2026-03-28T01:30:00Z",   // 02:30 CET
                "2026-03-29T01:00:00Z",   // 02:30 does not exist: 03:00 CEST, when the gap ends
                "2026-03-30T00:30:00Z")); // 02:30 CEST
    }

    @Test
    void berlinFixedHourInTheAutumnOverlapRunsOnceAtTheFirstOccurrence() {
        CronSchedule daily = CronSchedule.of("30 2 * * *", BERLIN);
        assertThat(fires(daily, "2026-10-24T00:00:00Z", "2026-10-27T00:00:00Z")).containsExactlyElementsOf(instants(
                "2026-10-24T00:30:00Z",   // 02:30 CEST
                "2026-10-25T00:30:00Z",   // 02:30 CEST, the first of the two 02:30s; not again at 01:30Z
                "2026-10-26T01:30:00Z")); // 02:30 CET
    }

    @Test
    void berlinWildcardHourFollowsElapsedTimeThroughBothTransitions() {
        CronSchedule hourly = CronSchedule.of("30 * * * *", BERLIN);
        List<Instant> spring = fires(hourly, "2026-03-28T23:00:00Z", "2026-03-29T03:00:00Z");
        List<Instant> autumn = fires(hourly, "2026-10-24T22:00:00Z", "2026-10-25T03:00:00Z");
        assertThat(spring).containsExactlyElementsOf(instants(
                "2026-03-28T23:30:00Z", "2026-03-29T00:30:00Z", "2026-03-29T01:30:00Z", "2026-03-29T02:30:00Z"));
        assertThat(autumn).containsExactlyElementsOf(instants(
                "2026-10-24T22:30:00Z", "2026-10-24T23:30:00Z",
                "2026-10-25T00:30:00Z",   // 02:30 CEST
                "2026-10-25T01:30:00Z",   // 02:30 CET: the repeated hour runs again
                "2026-10-25T02:30:00Z"));
        assertThat(gaps(spring)).containsOnly(Duration.ofHours(1));
        assertThat(gaps(autumn)).containsOnly(Duration.ofHours(1));
    }

    @Test
    void newYorkSixFieldFixedTimeInTheSpringGapRunsOnceAtThreeAm() {
        CronSchedule daily = CronSchedule.of("0 30 2 * * *", NEW_YORK);
        assertThat(fires(daily, "2026-03-07T00:00:00Z", "2026-03-10T00:00:00Z")).containsExactlyElementsOf(instants(
                "2026-03-07T07:30:00Z",   // 02:30 EST
                "2026-03-08T07:00:00Z",   // 03:00 EDT
                "2026-03-09T06:30:00Z")); // 02:30 EDT
    }

    @Test
    void newYorkFixedTimeInTheRepeatedHourRunsOnce() {
        CronSchedule daily = CronSchedule.of("30 1 * * *", NEW_YORK);
        assertThat(fires(daily, "2026-10-31T00:00:00Z", "2026-11-03T00:00:00Z")).containsExactlyElementsOf(instants(
                "2026-10-31T05:30:00Z",   // 01:30 EDT
                "2026-11-01T05:30:00Z",   // 01:30 EDT only, not 01:30 EST
                "2026-11-02T06:30:00Z")); // 01:30 EST
    }

    @Test
    void newYorkEveryFifteenMinutesCountsElapsedTimeAcrossTheRepeatedHour() {
        CronSchedule quarter = CronSchedule.of("*/15 * * * *", NEW_YORK);
        // 00:00 EDT (04:00Z) to 03:00 EST (08:00Z) is four elapsed hours on the day clocks go back.
        List<Instant> fires = fires(quarter, "2026-11-01T04:00:00Z", "2026-11-01T08:00:00Z");
        assertThat(fires).hasSize(16).doesNotHaveDuplicates();
        assertThat(gaps(fires)).containsOnly(Duration.ofMinutes(15));
        // and three elapsed hours on the day they go forward (00:00 EST to 04:00 EDT)
        assertThat(fires(quarter, "2026-03-08T05:00:00Z", "2026-03-08T08:00:00Z")).hasSize(12);
    }

    @Test
    void severalFixedTimesInsideTheGapRunOnceTogether() {
        CronSchedule twice = CronSchedule.of("15,45 2 * * *", BERLIN);
        assertThat(fires(twice, "2026-03-29T00:00:00Z", "2026-03-29T12:00:00Z"))
                .containsExactly(Instant.parse("2026-03-29T01:00:00Z"));
    }

    @Test
    void fiveFieldsAreMinutesAndSixFieldsStartWithSeconds() {
        Instant from = Instant.parse("2026-06-01T10:00:00.500Z");
        assertThat(CronSchedule.of("*/5 * * * *", UTC).next(from)).contains(Instant.parse("2026-06-01T10:05:00Z"));
        assertThat(CronSchedule.of("*/5 * * * * *", UTC).next(from)).contains(Instant.parse("2026-06-01T10:00:05Z"));
        assertThat(CronSchedule.of("* * * * * *", UTC).next(from)).contains(Instant.parse("2026-06-01T10:00:01Z"));
    }

    @Test
    void macrosExpand() {
        Instant from = Instant.parse("2026-06-01T10:20:00Z");
        assertThat(CronSchedule.of("@hourly", UTC).next(from)).contains(Instant.parse("2026-06-01T11:00:00Z"));
        assertThat(CronSchedule.of("@daily", UTC).next(from)).contains(Instant.parse("2026-06-02T00:00:00Z"));
        assertThat(CronSchedule.of("@midnight", UTC).next(from)).contains(Instant.parse("2026-06-02T00:00:00Z"));
        assertThat(CronSchedule.of("@weekly", UTC).next(from)).contains(Instant.parse("2026-06-07T00:00:00Z"));
        assertThat(CronSchedule.of("@monthly", UTC).next(from)).contains(Instant.parse("2026-07-01T00:00:00Z"));
        assertThat(CronSchedule.of("@yearly", UTC).next(from)).contains(Instant.parse("2027-01-01T00:00:00Z"));
    }

    @Test
    void badExpressionsFailWithOneLineSayingWhy() {
        assertThatThrownBy(() -> CronSchedule.of("* * *", UTC))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("5 or 6 fields");
        assertThatThrownBy(() -> CronSchedule.of("61 * * * *", UTC))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("invalid cron expression \"61 * * * *\"")
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
        assertThatThrownBy(() -> CronSchedule.of("@fortnightly", UTC))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("unknown cron macro");
    }

    private static List<Duration> gaps(List<Instant> fires) {
        List<Duration> gaps = new ArrayList<>();
        for (int i = 1; i < fires.size(); i++) {
            gaps.add(Duration.between(fires.get(i - 1), fires.get(i)));
        }
        return gaps;
    }

    @Test
    void jobsWithTheSameScheduleShareOneAndItsAnswersStayRight() {
        CronSchedule a = CronSchedule.of("*/5 * * * * *", ZoneId.of("UTC"));
        CronSchedule b = CronSchedule.of(" */5 * * * * * ", ZoneId.of("UTC"));
        assertThat(b).isSameAs(a);
        assertThat(CronSchedule.of("*/5 * * * * *", ZoneId.of("Europe/Berlin"))).isNotSameAs(a);
        Instant t = Instant.parse("2026-03-01T10:00:01Z");
        assertThat(a.next(t)).contains(Instant.parse("2026-03-01T10:00:05Z"));
        assertThat(b.next(t)).contains(Instant.parse("2026-03-01T10:00:05Z")); // remembered
        assertThat(a.next(t.plusSeconds(5))).contains(Instant.parse("2026-03-01T10:00:10Z"));
        assertThat(b.next(t)).contains(Instant.parse("2026-03-01T10:00:05Z"));
    }
}
