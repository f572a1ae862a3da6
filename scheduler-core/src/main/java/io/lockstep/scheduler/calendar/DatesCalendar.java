package io.lockstep.scheduler.calendar;

import io.lockstep.scheduler.JobCalendar;
import java.time.DayOfWeek;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.ZoneId;
import java.util.List;
import java.util.NavigableMap;
import java.util.Set;
import java.util.TreeMap;

/**
 * A calendar of the config's {@code calendars:} section: whole days (dates and inclusive date
 * ranges, listed or read from a file) and weekly windows (days of the week, optionally a time of
 * day range), all in one zone. An instant is in it when its local date is one of the days or its
 * local time falls in one of the windows. Immutable and thread-safe.
 *
 * @param name the name jobs refer to
 * @param zone the zone its dates and windows are in
 * @param days the days, each range from its first to its last day (inclusive), by first day
 * @param windows the weekly windows
 */
public record DatesCalendar(String name, ZoneId zone, NavigableMap<LocalDate, LocalDate> days, List<Window> windows)
        implements JobCalendar {

    /**
     * Days of the week and, within each, a time of day range {@code [from, to)} ({@code to} null:
     * to the end of the day).
     */
    public record Window(Set<DayOfWeek> days, LocalTime from, LocalTime to) {

        public Window {
            days = Set.copyOf(days);
        }

        boolean contains(LocalDateTime t) {
            return days.contains(t.getDayOfWeek()) && !t.toLocalTime().isBefore(from)
                    && (to == null || t.toLocalTime().isBefore(to));
        }

        @Override
        public String toString() {
            return days.stream().sorted().map(d -> d.name().substring(0, 3)).toList() + " " + from + "-" + (to == null ? "24:00" : to);
        }
    }

    public DatesCalendar {
        days = java.util.Collections.unmodifiableNavigableMap(merged(days));
        windows = List.copyOf(windows);
    }

    /** The ranges with those that overlap or touch merged, so that the range before a day is the only one that can hold it. */
    private static TreeMap<LocalDate, LocalDate> merged(NavigableMap<LocalDate, LocalDate> ranges) {
        TreeMap<LocalDate, LocalDate> out = new TreeMap<>();
        LocalDate from = null;
        LocalDate to = null;
        for (var r : new TreeMap<>(ranges).entrySet()) {
            if (to != null && !r.getKey().isAfter(to.plusDays(1))) {
                to = r.getValue().isAfter(to) ? r.getValue() : to;
                continue;
            }
            if (from != null) {
                out.put(from, to);
            }
            from = r.getKey();
            to = r.getValue();
        }
        if (from != null) {
            out.put(from, to);
        }
        return out;
    }

    @Override
    public boolean contains(Instant instant) {
        LocalDateTime local = LocalDateTime.ofInstant(instant, zone);
        var range = days.floorEntry(local.toLocalDate());
        if (range != null && !local.toLocalDate().isAfter(range.getValue())) {
            return true;
        }
        for (Window w : windows) {
            if (w.contains(local)) {
                return true;
            }
        }
        return false;
    }

    /** Its name, zone, and a digest of its days and windows: changes when its contents do. */
    @Override
    public String describe() {
        String contents = zone.getId() + " " + days + " " + windows;
        try {
            byte[] d = java.security.MessageDigest.getInstance("SHA-256").digest(contents.getBytes(java.nio.charset.StandardCharsets.UTF_8));
            return name + " (" + zone.getId() + ", " + days.size() + " ranges of days, " + windows.size() + " windows, "
                    + java.util.HexFormat.of().formatHex(d, 0, 6) + ")";
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }
}
