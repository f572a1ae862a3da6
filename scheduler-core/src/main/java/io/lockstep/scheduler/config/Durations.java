package io.lockstep.scheduler.config;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Reads durations as the YAML writes them: {@code 250ms 30s 5m 1h 1d} or ISO-8601 ({@code PT30S}). */
public final class Durations {

    private static final Pattern SHORT = Pattern.compile("(\\d+)(ms|s|m|h|d)");

    private Durations() {}

    /** The duration {@code text} stands for; empty when it is none. */
    public static Optional<Duration> parse(String text) {
        String trimmed = text.trim();
        Matcher m = SHORT.matcher(trimmed);
        if (m.matches()) {
            long amount;
            try {
                amount = Long.parseLong(m.group(1));
            } catch (NumberFormatException e) {
                return Optional.empty();
            }
            return Optional.of(switch (m.group(2)) {
                case "ms" -> Duration.ofMillis(amount);
                case "s" -> Duration.ofSeconds(amount);
                case "m" -> Duration.ofMinutes(amount);
                case "h" -> Duration.ofHours(amount);
                default -> Duration.ofDays(amount);
            });
        }
        if (trimmed.startsWith("P") || trimmed.startsWith("p")) {
            try {
                return Optional.of(Duration.parse(trimmed));
            } catch (DateTimeParseException e) {
                return Optional.empty();
            }
        }
        return Optional.empty();
    }

    /** The short form for printing: {@code 30s}, {@code 250ms}, {@code 1h}. */
    public static String format(Duration d) {
        long ms = d.toMillis();
        if (ms == 0) {
            return "0s";
        }
        if (ms % 86_400_000 == 0) {
            return ms / 86_400_000 + "d";
        }
        if (ms % 3_600_000 == 0) {
            return ms / 3_600_000 + "h";
        }
        if (ms % 60_000 == 0) {
            return ms / 60_000 + "m";
        }
        if (ms % 1000 == 0) {
            return ms / 1000 + "s";
        }
        return ms + "ms";
    }
}
