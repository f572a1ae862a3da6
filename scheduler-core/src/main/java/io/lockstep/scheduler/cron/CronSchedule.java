package io.lockstep.scheduler.cron;

import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A job's schedule: one or more cron expressions evaluated in a time zone, optionally shifted by a
 * stable offset ({@code jitter}). A slot is an instant at which any of the expressions fires, plus
 * the offset; instants at which several fire are one slot.
 *
 * <p>Each expression has five fields (minute hour day-of-month month day-of-week), six fields
 * (seconds first), or is one of the macros {@code @yearly @annually @monthly @weekly @daily
 * @midnight @hourly}; fields may use Jenkins' {@code H} (see {@link HashedFields}), hashed from a
 * key the caller gives (the job's name, or its {@code jitterSeed}). Daylight saving follows Vixie
 * cron, see {@link OneCron}.
 *
 * <p>The jitter offset lies in [0, jitter), whole seconds, derived by SHA-256 from the same key, so
 * every worker and every restart computes the same slots: a slot's identity, and with it
 * exactly-once, is unchanged. Changing the key or the jitter moves the slots, as changing the cron
 * does (a rollout then says so, see {@code Fingerprints.rollout}). A jitter longer than the
 * schedule's period is refused: it would move slots past the next one.
 *
 * <p>Immutable and thread-safe.
 */
public final class CronSchedule {

    /** How many fires {@link #period} looks at. */
    private static final int PERIOD_SAMPLE = 60;

    /** Single-expression schedules without H or jitter are immutable alike: jobs that share one share its parts' memo too. */
    private static final java.util.concurrent.ConcurrentMap<String, CronSchedule> SHARED =
            new java.util.concurrent.ConcurrentHashMap<>();

    private final List<String> expressions;
    private final List<OneCron> parts;
    private final ZoneId zone;
    private final Duration jitter;
    private final long offsetMillis;

    private CronSchedule(List<String> expressions, List<OneCron> parts, ZoneId zone, Duration jitter, long offsetMillis) {
        this.expressions = List.copyOf(expressions);
        this.parts = List.copyOf(parts);
        this.zone = zone;
        this.jitter = jitter;
        this.offsetMillis = offsetMillis;
    }

    /**
     * Parses one expression for a zone; {@code H} is refused (it needs a key: use
     * {@link #of(List, ZoneId, String)}).
     *
     * @throws IllegalArgumentException with a one-line reason when the expression is not valid
     */
    public static CronSchedule of(String expression, ZoneId zone) {
        return of(List.of(expression == null ? "" : expression), zone, null);
    }

    /**
     * Parses several expressions for a zone, each {@code H} hashed from {@code hashKey}.
     *
     * @param hashKey the job's name (or its {@code jitterSeed}); null refuses {@code H}
     * @throws IllegalArgumentException with a one-line reason when an expression is not valid
     */
    public static CronSchedule of(List<String> expressions, ZoneId zone, String hashKey) {
        if (expressions.isEmpty()) {
            throw new IllegalArgumentException("needs at least one cron expression");
        }
        boolean plain = expressions.size() == 1 && !HashedFields.hashed(expressions.get(0));
        String key = plain ? zone.getId() + " " + (expressions.get(0) == null ? "" : expressions.get(0).trim()) : null;
        CronSchedule shared = plain ? SHARED.get(key) : null;
        if (shared != null) {
            return shared;
        }
        List<OneCron> parts = new ArrayList<>();
        for (String e : expressions) {
            parts.add(OneCron.of(HashedFields.expand(e, hashKey), zone));
        }
        CronSchedule parsed = new CronSchedule(expressions.stream().map(e -> e == null ? "" : e.trim()).toList(), parts, zone, Duration.ZERO, 0);
        if (plain) {
            CronSchedule previous = SHARED.putIfAbsent(key, parsed);
            return previous != null ? previous : parsed;
        }
        return parsed;
    }

    /**
     * This schedule shifted by a stable offset in [0, jitter) (whole seconds) derived from
     * {@code hashKey}; {@link Duration#ZERO} for none.
     *
     * @throws IllegalArgumentException when the jitter is under 1s (and not zero) or longer than the
     *     schedule's period (the shortest gap between two of its next fires)
     */
    public CronSchedule withJitter(Duration jitter, String hashKey) {
        if (jitter.isZero()) {
            return offsetMillis == 0 ? this : new CronSchedule(expressions, parts, zone, Duration.ZERO, 0);
        }
        if (jitter.compareTo(Duration.ofSeconds(1)) < 0) {
            throw new IllegalArgumentException("jitter must be at least 1s (or 0s for none), but was " + jitter);
        }
        Optional<Duration> period = period();
        if (period.isPresent() && jitter.compareTo(period.get()) > 0) {
            throw new IllegalArgumentException("jitter " + jitter + " is longer than the schedule's period " + period.get()
                    + " (the shortest gap between two of its fires): a slot would move past the next one");
        }
        long offset = Math.floorMod(HashedFields.hash(hashKey + "\u0000jitter"), jitter.toSeconds()) * 1000;
        return new CronSchedule(expressions, parts, zone, jitter, offset);
    }

    /**
     * The schedule's period: the shortest gap between two of its fires, nominal (the expressions read
     * in UTC, so no daylight-saving day shortens it) and the same whenever it is asked (from a fixed
     * instant, over {@value #PERIOD_SAMPLE} fires); empty when it fires once or never. Remembered per
     * set of expressions: a thousand jobs of one cron cost one computation.
     */
    public Optional<Duration> period() {
        return PERIODS.computeIfAbsent(String.join("\n", expanded()), k -> nominalPeriod(expanded()));
    }

    private static final java.util.concurrent.ConcurrentMap<String, Optional<Duration>> PERIODS = new java.util.concurrent.ConcurrentHashMap<>();
    /** Where {@link #period} starts counting: a Monday, the first of a year's months with 31 days. */
    private static final Instant PERIOD_FROM = Instant.parse("2024-01-01T00:00:00Z");

    private static Optional<Duration> nominalPeriod(List<String> expanded) {
        List<OneCron> utc = expanded.stream().map(e -> OneCron.of(e, java.time.ZoneOffset.UTC)).toList();
        CronSchedule nominal = new CronSchedule(expanded, utc, java.time.ZoneOffset.UTC, Duration.ZERO, 0);
        Duration shortest = null;
        Optional<Instant> previous = nominal.next(PERIOD_FROM, 0);
        for (int i = 0; i < PERIOD_SAMPLE && previous.isPresent(); i++) {
            Optional<Instant> fire = nominal.next(previous.get(), 0);
            if (fire.isPresent()) {
                Duration gap = Duration.between(previous.get(), fire.get());
                shortest = shortest == null || gap.compareTo(shortest) < 0 ? gap : shortest;
            }
            previous = fire;
        }
        return Optional.ofNullable(shortest);
    }

    /** The expressions as written. */
    public List<String> expressions() {
        return expressions;
    }

    /** The expressions as written, joined by {@code "; "} (one expression: itself). */
    public String expression() {
        return String.join("; ", expressions);
    }

    /** The expressions with each {@code H} replaced by its value (as evaluated). */
    public List<String> expanded() {
        return parts.stream().map(OneCron::expression).toList();
    }

    /** The zone the expressions are evaluated in. */
    public ZoneId zone() {
        return zone;
    }

    /** The configured jitter ({@link Duration#ZERO}: none). */
    public Duration jitter() {
        return jitter;
    }

    /** This schedule's stable offset: every slot is a fire time plus this. */
    public Duration offset() {
        return Duration.ofMillis(offsetMillis);
    }

    /**
     * The first slot strictly after {@code after}, or empty when no expression fires again (for
     * example a date that has passed).
     */
    public Optional<Instant> next(Instant after) {
        return next(after, offsetMillis);
    }

    private Optional<Instant> next(Instant after, long offset) {
        Instant base = offset == 0 ? after : after.minusMillis(offset);
        if (parts.size() == 1) {
            Optional<Instant> fire = parts.get(0).next(base);
            return offset == 0 ? fire : fire.map(f -> f.plusMillis(offset));
        }
        Instant best = null;
        for (OneCron p : parts) {
            Optional<Instant> fire = p.next(base);
            if (fire.isPresent() && (best == null || fire.get().isBefore(best))) {
                best = fire.get();
            }
        }
        return Optional.ofNullable(best).map(f -> f.plusMillis(offset));
    }

    /** The expressions as evaluated, the zone and the offset (if any): equal strings, equal slots. */
    @Override
    public String toString() {
        return String.join("; ", expanded()) + " (" + zone + ")" + (offsetMillis == 0 ? "" : " +" + offset());
    }
}
