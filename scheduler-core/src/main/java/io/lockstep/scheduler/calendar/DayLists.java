package io.lockstep.scheduler.calendar;

import java.time.DateTimeException;
import java.time.DayOfWeek;
import java.time.LocalDate;
import java.time.LocalTime;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The text forms of a calendar's days and windows: a date or an inclusive range
 * ({@code 2026-12-25}, {@code 2026-12-24..2026-12-26}), a weekly window ({@code SAT,SUN},
 * {@code MON-FRI 09:00-17:00}, {@code FRI 18:00-24:00}), a file of dates (one per line, {@code #}
 * comments) and an iCalendar file of holidays (each {@code VEVENT}'s {@code DTSTART} to
 * {@code DTEND}, all-day: the usual export of a holiday calendar). Each parse throws
 * {@link IllegalArgumentException} with a one-line reason (and the line of a file).
 */
public final class DayLists {

    private static final Pattern WINDOW = Pattern.compile("([A-Za-z,\\-]+)(?:\\s+(\\d{1,2}:\\d{2}(?::\\d{2})?)-(\\d{1,2}:\\d{2}(?::\\d{2})?))?");
    private static final List<String> DAY_NAMES = List.of("MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN");

    private DayLists() {}

    /** {@code 2026-12-25} or {@code 2026-12-24..2026-12-26}: {from, to}, inclusive. */
    public static LocalDate[] range(String text) {
        String t = text.trim();
        int dots = t.indexOf("..");
        LocalDate from = date(dots < 0 ? t : t.substring(0, dots));
        LocalDate to = dots < 0 ? from : date(t.substring(dots + 2));
        if (to.isBefore(from)) {
            throw new IllegalArgumentException("range \"" + t + "\" ends before it begins");
        }
        return new LocalDate[] {from, to};
    }

    private static LocalDate date(String text) {
        try {
            return LocalDate.parse(text.trim());
        } catch (DateTimeParseException e) {
            throw new IllegalArgumentException("invalid date \"" + text.trim() + "\" (use YYYY-MM-DD, or FROM..TO for a range)");
        }
    }

    /** {@code MON-FRI 09:00-17:00}: days (a range may wrap, {@code FRI-MON}) and an optional time of day range. */
    public static DatesCalendar.Window window(String text) {
        Matcher m = WINDOW.matcher(text.trim());
        if (!m.matches()) {
            throw new IllegalArgumentException("invalid weekly window \"" + text.trim() + "\" (use days and an optional time range, "
                    + "like MON-FRI 09:00-17:00 or SAT,SUN)");
        }
        Set<DayOfWeek> days = EnumSet.noneOf(DayOfWeek.class);
        for (String part : m.group(1).split(",")) {
            String[] ends = part.split("-", -1);
            if (ends.length > 2) {
                throw new IllegalArgumentException("invalid days \"" + part + "\" in \"" + text.trim() + "\"");
            }
            int from = day(ends[0], text);
            int to = ends.length == 2 ? day(ends[1], text) : from;
            for (int d = from; ; d = (d + 1) % 7) {
                days.add(DayOfWeek.of(d + 1));
                if (d == to) {
                    break;
                }
            }
        }
        if (m.group(2) == null) {
            return new DatesCalendar.Window(days, LocalTime.MIDNIGHT, null);
        }
        LocalTime from = time(m.group(2), text);
        LocalTime to = m.group(3).startsWith("24:00") ? null : time(m.group(3), text);
        if (to != null && !to.isAfter(from)) {
            throw new IllegalArgumentException("the window \"" + text.trim() + "\" ends before it begins (a window past midnight "
                    + "is two: FRI 22:00-24:00 and SAT 00:00-02:00)");
        }
        return new DatesCalendar.Window(days, from, to);
    }

    private static int day(String name, String text) {
        int i = DAY_NAMES.indexOf(name.trim().toUpperCase(Locale.ROOT));
        if (i < 0) {
            throw new IllegalArgumentException("unknown day \"" + name.trim() + "\" in \"" + text.trim() + "\" (use MON TUE WED THU FRI SAT SUN)");
        }
        return i;
    }

    private static LocalTime time(String value, String text) {
        try {
            return LocalTime.parse(value.length() == 4 || value.length() == 7 ? "0" + value : value);
        } catch (DateTimeException e) {
            throw new IllegalArgumentException("invalid time \"" + value + "\" in \"" + text.trim() + "\" (use HH:MM, or 24:00 for the end of the day)");
        }
    }

    /** A file of dates and ranges, one per line; blank lines and {@code #} comments are skipped. */
    public static List<LocalDate[]> lines(String text) {
        List<LocalDate[]> out = new ArrayList<>();
        String[] lines = text.split("\r?\n", -1);
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i].replaceFirst("#.*", "").trim();
            if (line.isEmpty()) {
                continue;
            }
            try {
                out.add(range(line));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("line " + (i + 1) + ": " + e.getMessage());
            }
        }
        return out;
    }

    /**
     * The days of an iCalendar file's events: {@code DTSTART} to {@code DTEND} (exclusive, as
     * iCalendar writes all-day events; one day without {@code DTEND}), by their dates. A recurring
     * event ({@code RRULE}) is refused: its days would need a recurrence engine; list each year's.
     */
    public static List<LocalDate[]> ics(String text) {
        List<String> lines = new ArrayList<>();
        for (String raw : text.split("\r?\n", -1)) {
            if ((raw.startsWith(" ") || raw.startsWith("\t")) && !lines.isEmpty()) {
                lines.set(lines.size() - 1, lines.get(lines.size() - 1) + raw.substring(1)); // folded (RFC 5545, 3.1)
            } else {
                lines.add(raw);
            }
        }
        List<LocalDate[]> out = new ArrayList<>();
        LocalDate start = null;
        LocalDate end = null;
        boolean inEvent = false;
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).trim();
            String name = line.replaceFirst("[;:].*", "").toUpperCase(Locale.ROOT);
            String value = line.indexOf(':') < 0 ? "" : line.substring(line.indexOf(':') + 1).trim();
            switch (name) {
                case "BEGIN" -> {
                    if (value.equalsIgnoreCase("VEVENT")) {
                        inEvent = true;
                        start = null;
                        end = null;
                    }
                }
                case "DTSTART" -> start = inEvent ? icsDate(value, i) : start;
                case "DTEND" -> end = inEvent ? icsDate(value, i) : end;
                case "RRULE" -> {
                    if (inEvent) {
                        throw new IllegalArgumentException("line " + (i + 1) + ": a recurring event (RRULE) is not supported; list each date");
                    }
                }
                case "END" -> {
                    if (inEvent && value.equalsIgnoreCase("VEVENT")) {
                        if (start == null) {
                            throw new IllegalArgumentException("line " + (i + 1) + ": an event without DTSTART");
                        }
                        LocalDate last = end == null || !end.isAfter(start) ? start : end.minusDays(1);
                        out.add(new LocalDate[] {start, last});
                        inEvent = false;
                    }
                }
                default -> { }
            }
        }
        return out;
    }

    private static LocalDate icsDate(String value, int line) {
        String digits = value.length() >= 8 ? value.substring(0, 8) : value;
        try {
            return LocalDate.parse(digits, java.time.format.DateTimeFormatter.BASIC_ISO_DATE);
        } catch (DateTimeParseException e) {
            throw new IllegalArgumentException("line " + (line + 1) + ": invalid date \"" + value + "\" (iCalendar dates are YYYYMMDD)");
        }
    }
}
