package io.lockstep.scheduler.cron;

import com.cronutils.model.Cron;
import com.cronutils.model.CronType;
import com.cronutils.model.definition.CronDefinitionBuilder;
import com.cronutils.model.time.ExecutionTime;
import com.cronutils.parser.CronParser;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.temporal.ChronoUnit;
import java.time.zone.ZoneOffsetTransition;
import java.time.zone.ZoneRules;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * One cron expression evaluated in a time zone, with the daylight-saving rule of Vixie cron: the
 * parts a {@link CronSchedule} is made of.
 *
 * <p>Accepted forms: five fields (minute hour day-of-month month day-of-week), six fields (seconds
 * first), and the macros {@code @yearly @annually @monthly @weekly @daily @midnight @hourly}.
 * Parsing and field matching are done by cron-utils on local wall-clock times; this class only
 * decides how a local time maps to an instant:
 *
 * <ul>
 *   <li>a job with a fixed hour whose local time occurs twice (clocks go back) runs once, at the
 *       first occurrence;
 *   <li>a job with a fixed hour whose local time does not exist (clocks go forward) runs once, at
 *       the instant the gap ends;
 *   <li>a job whose hour field is a wildcard ({@code *}, {@code *}{@code /2}) follows elapsed time:
 *       it runs at both occurrences of a repeated hour and not at all in a skipped one.
 * </ul>
 *
 * <p>Immutable and thread-safe.
 */
final class OneCron {

    private static final CronParser FIVE_FIELDS =
            new CronParser(CronDefinitionBuilder.instanceDefinitionFor(CronType.UNIX));
    private static final CronParser SIX_FIELDS =
            new CronParser(CronDefinitionBuilder.instanceDefinitionFor(CronType.SPRING));
    private static final Map<String, String> MACROS = Map.of(
            "@yearly", "0 0 1 1 *",
            "@annually", "0 0 1 1 *",
            "@monthly", "0 0 1 * *",
            "@weekly", "0 0 * * 0",
            "@daily", "0 0 * * *",
            "@midnight", "0 0 * * *",
            "@hourly", "0 * * * *");
    /** Schedules are immutable, so jobs with the same expression and zone share one (and its memo). */
    private static final java.util.concurrent.ConcurrentMap<String, OneCron> SHARED =
            new java.util.concurrent.ConcurrentHashMap<>();

    /** One remembered answer of {@link #next}: the cron library takes tens of microseconds per call. */
    private record Memo(Instant after, Optional<Instant> next) {}

    private final String expression;
    private final ZoneId zone;
    private final ExecutionTime executionTime;
    private final boolean wildcardHour;
    /**
     * The last answer: every job of a schedule asks for the slot after the same instant once per
     * fire (1,000 per-second jobs ask 1,000 times a second), so one entry saves all but one call.
     */
    private volatile Memo memo;

    private OneCron(String expression, ZoneId zone, ExecutionTime executionTime, boolean wildcardHour) {
        this.expression = expression;
        this.zone = zone;
        this.executionTime = executionTime;
        this.wildcardHour = wildcardHour;
    }

    /**
     * Parses an expression for a zone.
     *
     * @throws IllegalArgumentException with a one-line reason when the expression is not valid
     */
    static OneCron of(String expression, ZoneId zone) {
        String key = zone.getId() + " " + (expression == null ? "" : expression.trim());
        OneCron shared = SHARED.get(key);
        if (shared != null) {
            return shared;
        }
        OneCron parsed = parse(expression, zone);
        OneCron previous = SHARED.putIfAbsent(key, parsed);
        return previous != null ? previous : parsed;
    }

    private static OneCron parse(String expression, ZoneId zone) {
        String trimmed = expression == null ? "" : expression.trim();
        String expanded = MACROS.getOrDefault(trimmed.toLowerCase(Locale.ROOT), trimmed);
        if (expanded.startsWith("@")) {
            throw new IllegalArgumentException("unknown cron macro \"" + trimmed + "\", expected one of "
                    + List.copyOf(new java.util.TreeSet<>(MACROS.keySet())));
        }
        String[] fields = expanded.split("\\s+");
        CronParser parser;
        int hourField;
        if (fields.length == 5) {
            parser = FIVE_FIELDS;
            hourField = 1;
        } else if (fields.length == 6) {
            parser = SIX_FIELDS;
            hourField = 2;
        } else {
            throw new IllegalArgumentException("cron expression must have 5 or 6 fields or be a macro, but was \""
                    + trimmed + "\" (" + (trimmed.isEmpty() ? 0 : fields.length) + " fields)");
        }
        Cron cron;
        try {
            cron = parser.parse(expanded);
            cron.validate();
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("invalid cron expression \"" + trimmed + "\": " + oneLine(e), e);
        }
        return new OneCron(trimmed, zone, ExecutionTime.forCron(cron), fields[hourField].startsWith("*"));
    }

    private static String oneLine(RuntimeException e) {
        String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        return message.replaceAll("\\s+", " ").trim();
    }

    /** The expression as written. */
    String expression() {
        return expression;
    }

    /** The zone the expression is evaluated in. */
    ZoneId zone() {
        return zone;
    }

    /**
     * The first fire time strictly after {@code after}, or empty when the expression never fires
     * again (for example a date that has passed).
     */
    Optional<Instant> next(Instant after) {
        Memo m = memo;
        if (m != null && m.after().equals(after)) {
            return m.next();
        }
        Optional<Instant> next = compute(after);
        memo = new Memo(after, next);
        return next;
    }

    private Optional<Instant> compute(Instant after) {
        ZoneRules rules = zone.getRules();
        // Fire times are whole seconds; cron-utils would otherwise carry the fraction along.
        LocalDateTime cursor = LocalDateTime.ofInstant(after, zone).truncatedTo(ChronoUnit.SECONDS);
        // Wall-clock time runs backwards once at an overlap: while `after` lies in the first pass of
        // a repeated hour, the second pass starts at a local time earlier than `after`'s own.
        List<ZoneOffset> offsets = rules.getValidOffsets(cursor);
        if (offsets.size() == 2 && rules.getOffset(after).equals(offsets.get(0))) {
            cursor = rules.getTransition(cursor).getDateTimeAfter().minusSeconds(1);
        }
        Instant best = null;
        for (int guard = 0; guard < 1_000_000; guard++) {
            Optional<LocalDateTime> match = nextLocal(cursor);
            if (match.isEmpty()) {
                break;
            }
            LocalDateTime local = match.get();
            if (best != null && earliestInstantOf(local, rules).isAfter(best)) {
                break;
            }
            for (Instant candidate : instantsOf(local, rules)) {
                if (candidate.isAfter(after) && (best == null || candidate.isBefore(best))) {
                    best = candidate;
                }
            }
            cursor = local;
        }
        return Optional.ofNullable(best);
    }

    /** A lower bound of every instant a local time can stand for; ends the search in {@link #next}. */
    private static Instant earliestInstantOf(LocalDateTime local, ZoneRules rules) {
        List<ZoneOffset> offsets = rules.getValidOffsets(local);
        if (offsets.isEmpty()) {
            return rules.getTransition(local).getInstant();
        }
        return offsets.stream().map(local::toInstant).min(Instant::compareTo).orElseThrow();
    }

    private Optional<LocalDateTime> nextLocal(LocalDateTime cursor) {
        return executionTime.nextExecution(cursor.atZone(ZoneOffset.UTC)).map(ZonedDateTime::toLocalDateTime);
    }

    /** The instants at which the local time {@code local} fires, under the DST rule above. */
    private List<Instant> instantsOf(LocalDateTime local, ZoneRules rules) {
        List<ZoneOffset> offsets = rules.getValidOffsets(local);
        if (offsets.size() == 1) {
            return List.of(local.toInstant(offsets.get(0)));
        }
        if (offsets.isEmpty()) {
            if (wildcardHour) {
                return List.of();
            }
            ZoneOffsetTransition gap = rules.getTransition(local);
            return List.of(gap.getInstant());
        }
        // An overlap: the local time happens twice, first under the offset before the transition.
        Instant first = local.toInstant(offsets.get(0));
        Instant second = local.toInstant(offsets.get(1));
        if (second.isBefore(first)) {
            Instant swap = first;
            first = second;
            second = swap;
        }
        return wildcardHour ? List.of(first, second) : List.of(first);
    }

    @Override
    public String toString() {
        return expression + " (" + zone + ")";
    }
}
