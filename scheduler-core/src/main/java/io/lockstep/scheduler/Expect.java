package io.lockstep.scheduler;

import java.time.Duration;
import java.util.Objects;

/**
 * What a job is expected to achieve ({@code expect:}), judged by the cluster on the store's clock
 * ({@link ExpectationKeeper}): a breach is decided once, logged {@code expectation_breached},
 * counted, shown by {@code status}, sent to the webhooks, and cleared by the next success
 * ({@code expectation_met}). Immutable.
 *
 * <ul>
 *   <li>{@code succeededWithin: 15m}: each slot must have succeeded within that time of its instant.
 *       A slot decided without a run on purpose (paused, or skipped by a calendar) is not expected to
 *       succeed; any other slot that has no success by then (failed, missed, skipped for overlap,
 *       still running, never decided) is a breach, one per slot.
 *   <li>{@code successEvery: 26h}: a dead-man's switch. There must be a success in every such window,
 *       whatever the schedule, pauses included: a breach when that long has passed since the last
 *       success or since the expectation was first judged, whichever is later (adding it never
 *       breaches at once). A backfill's runs do not count: they are old slots run on demand.
 * </ul>
 *
 * @param succeededWithin {@link Duration#ZERO} for none
 * @param successEvery {@link Duration#ZERO} for none
 */
public record Expect(Duration succeededWithin, Duration successEvery) {

    /** No expectation. */
    public static final Expect NONE = new Expect(Duration.ZERO, Duration.ZERO);
    /** The shortest of either: the judge looks once a second. */
    public static final Duration MIN = Duration.ofSeconds(1);

    public Expect {
        Objects.requireNonNull(succeededWithin, "succeededWithin");
        Objects.requireNonNull(successEvery, "successEvery");
        for (Duration d : new Duration[] {succeededWithin, successEvery}) {
            if (!d.isZero() && d.compareTo(MIN) < 0) {
                throw new IllegalArgumentException("an expectation must be at least 1s, but was " + d);
            }
        }
    }

    /** Whether there is anything to judge. */
    public boolean any() {
        return !succeededWithin.isZero() || !successEvery.isZero();
    }

    /** The expectation as the store keeps it (with the schedule: {@link ExpectationKeeper#spec}). */
    public String spec() {
        return "w=" + succeededWithin.toMillis() + ";e=" + successEvery.toMillis();
    }
}
