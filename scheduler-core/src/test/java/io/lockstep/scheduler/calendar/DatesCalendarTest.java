package io.lockstep.scheduler.calendar;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneId;
import java.util.List;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/** Days, ranges and weekly windows in a zone; the text forms and the iCalendar reader. */
class DatesCalendarTest {

    private static final ZoneId LISBON = ZoneId.of("Europe/Lisbon");
    private static final ZoneId TOKYO = ZoneId.of("Asia/Tokyo");

    private static DatesCalendar of(ZoneId zone, List<String> dates, List<String> weekly) {
        TreeMap<LocalDate, LocalDate> days = new TreeMap<>();
        dates.forEach(d -> {
            LocalDate[] r = DayLists.range(d);
            days.merge(r[0], r[1], (a, b) -> a.isAfter(b) ? a : b);
        });
        return new DatesCalendar("c", zone, days, weekly.stream().map(DayLists::window).toList());
    }

    @Test
    void aDayIsTheWholeLocalDayInTheCalendarsZone() {
        DatesCalendar christmas = of(TOKYO, List.of("2026-12-25"), List.of());
        assertThat(christmas.contains(Instant.parse("2026-12-24T15:00:00Z"))).as("00:00 in Tokyo").isTrue();
        assertThat(christmas.contains(Instant.parse("2026-12-25T14:59:59Z"))).as("23:59:59 in Tokyo").isTrue();
        assertThat(christmas.contains(Instant.parse("2026-12-25T15:00:00Z"))).as("the 26th in Tokyo").isFalse();
        assertThat(christmas.contains(Instant.parse("2026-12-24T14:59:59Z"))).isFalse();
    }

    @Test
    void rangesAreInclusiveAndOverlappingOnesMerge() {
        DatesCalendar c = of(ZoneId.of("UTC"), List.of("2026-12-20..2026-12-31", "2026-12-24..2026-12-25", "2027-01-05"), List.of());
        assertThat(c.days()).containsExactly(java.util.Map.entry(LocalDate.parse("2026-12-20"), LocalDate.parse("2026-12-31")),
                java.util.Map.entry(LocalDate.parse("2027-01-05"), LocalDate.parse("2027-01-05")));
        assertThat(c.contains(Instant.parse("2026-12-28T12:00:00Z"))).as("inside the long range, past the short one").isTrue();
        assertThat(c.contains(Instant.parse("2026-12-31T23:59:59Z"))).isTrue();
        assertThat(c.contains(Instant.parse("2027-01-01T00:00:00Z"))).isFalse();
        assertThat(c.contains(Instant.parse("2027-01-05T00:00:00Z"))).isTrue();
    }

    @Test
    void weeklyWindowsHaveDaysAHalfOpenTimeRangeAndMayWrapTheWeek() {
        // 2026-12-04 is a Friday.
        DatesCalendar office = of(LISBON, List.of(), List.of("MON-FRI 09:00-17:30"));
        assertThat(office.contains(Instant.parse("2026-12-04T09:00:00Z"))).isTrue(); // Lisbon is UTC in winter
        assertThat(office.contains(Instant.parse("2026-12-04T17:29:59Z"))).isTrue();
        assertThat(office.contains(Instant.parse("2026-12-04T17:30:00Z"))).isFalse();
        assertThat(office.contains(Instant.parse("2026-12-05T10:00:00Z"))).as("Saturday").isFalse();
        DatesCalendar weekend = of(LISBON, List.of(), List.of("FRI-SUN", "MON 00:00-06:00"));
        assertThat(weekend.contains(Instant.parse("2026-12-04T00:00:00Z"))).isTrue();
        assertThat(weekend.contains(Instant.parse("2026-12-06T23:59:59Z"))).isTrue();
        assertThat(weekend.contains(Instant.parse("2026-12-07T05:59:59Z"))).isTrue();
        assertThat(weekend.contains(Instant.parse("2026-12-07T06:00:00Z"))).isFalse();
        DatesCalendar evening = of(LISBON, List.of(), List.of("sat,sun 18:00-24:00"));
        assertThat(evening.contains(Instant.parse("2026-12-05T23:59:59Z"))).isTrue();
        assertThat(evening.contains(Instant.parse("2026-12-05T17:59:59Z"))).isFalse();
    }

    @Test
    void badTextIsRefusedWithOneLineSayingWhy() {
        assertThatThrownBy(() -> DayLists.range("2026-02-30")).hasMessage("invalid date \"2026-02-30\" (use YYYY-MM-DD, or FROM..TO for a range)");
        assertThatThrownBy(() -> DayLists.range("2026-12-26..2026-12-24")).hasMessage("range \"2026-12-26..2026-12-24\" ends before it begins");
        assertThatThrownBy(() -> DayLists.window("MON-FRY 09:00-17:00")).hasMessageContaining("unknown day \"FRY\"");
        assertThatThrownBy(() -> DayLists.window("MON 17:00-09:00")).hasMessageContaining("ends before it begins");
        assertThatThrownBy(() -> DayLists.window("MON 9-17")).hasMessageContaining("invalid weekly window");
        assertThatThrownBy(() -> DayLists.window("MON 25:00-26:00")).hasMessageContaining("invalid time \"25:00\"");
        assertThatThrownBy(() -> DayLists.lines("2026-12-25\n# comment\n\n2026-13-01\n")).hasMessage("line 4: invalid date \"2026-13-01\""
                + " (use YYYY-MM-DD, or FROM..TO for a range)");
    }

    @Test
    void anICalendarFilesAllDayEventsAreItsDays() {
        String ics = String.join("\r\n", "BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//example//holidays//EN",
                "BEGIN:VEVENT", "UID:1", "DTSTART;VALUE=DATE:20261225", "DTEND;VALUE=DATE:20261226", "SUMMARY:Christmas", "END:VEVENT",
                "BEGIN:VEVENT", "UID:2", "DTSTART;VALUE=DATE:20261231", "DTEND;VALUE=DATE:", " 20270102", "SUMMARY:New Year", "END:VEVENT",
                "BEGIN:VEVENT", "UID:3", "DTSTART:20270406T000000Z", "SUMMARY:Easter Monday", "END:VEVENT", "END:VCALENDAR", "");
        assertThat(DayLists.ics(ics)).extracting(r -> r[0] + ".." + r[1])
                .containsExactly("2026-12-25..2026-12-25", "2026-12-31..2027-01-01", "2027-04-06..2027-04-06");
        assertThatThrownBy(() -> DayLists.ics("BEGIN:VEVENT\nDTSTART;VALUE=DATE:20261225\nRRULE:FREQ=YEARLY\nEND:VEVENT\n"))
                .hasMessage("line 3: a recurring event (RRULE) is not supported; list each date");
        assertThatThrownBy(() -> DayLists.ics("BEGIN:VEVENT\nDTSTART:2026-12-25\nEND:VEVENT\n")).hasMessageContaining("line 2: invalid date");
    }

    @Test
    void itsDescriptionChangesWithItsContents() {
        assertThat(of(LISBON, List.of("2026-12-25"), List.of()).describe())
                .isEqualTo(of(LISBON, List.of("2026-12-25"), List.of()).describe())
                .isNotEqualTo(of(LISBON, List.of("2026-12-26"), List.of()).describe())
                .isNotEqualTo(of(TOKYO, List.of("2026-12-25"), List.of()).describe())
                .startsWith("c (Europe/Lisbon, 1 ranges of days, 0 windows, ");
    }
}
