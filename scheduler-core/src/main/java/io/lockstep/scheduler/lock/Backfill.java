package io.lockstep.scheduler.lock;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Set;

/**
 * A backfill ({@code lockstep backfill JOB --from T1 --to T2}): every slot of the job's schedule in
 * [{@code from}, {@code to}] that nobody decided is run once, in slot order, at most
 * {@code perSecond} a second, each claimed like a catch-up slot ({@link ClaimRequest#backfill}).
 * Slots already decided (run, missed, skipped, paused) are left alone and counted. One backfill per
 * job at a time; a new one for the job replaces one that ended or was cancelled.
 *
 * <p>The store keeps the request; every worker hears of it with its heartbeat
 * ({@link Heartbeat#backfills}), and one worker that may run the job drives it (the first by a
 * rendezvous hash of the live workers and the backfill's id): it reads what the store knows of the
 * range ({@link View}), claims the undecided slots one by one, and writes its {@link Progress}. When
 * it dies or stops, the next worker by the same hash takes over where the store's cursor says the
 * backfill stands (the job's backfill mark, moved by each claim).
 *
 * @param id a random id, new for each request
 * @param job the job
 * @param from the first instant of the range (inclusive)
 * @param to the last instant of the range (inclusive)
 * @param perSecond at most this many slots claimed a second
 * @param by who asked for it (the operator's user name)
 * @param requestedAt when (the store's clock)
 * @param cancelled cancelled ({@code lockstep backfill --cancel}): no slot of it is claimed any more
 */
public record Backfill(String id, String job, Instant from, Instant to, double perSecond, String by, Instant requestedAt,
        boolean cancelled) {

    /** At most this many slots in one backfill: a bigger range is refused (split it). */
    public static final int MAX_SLOTS = 100_000;

    /** The fastest a backfill may go, slots a second. */
    public static final double MAX_PER_SECOND = 1_000;

    /**
     * How long before its slot an entry of it may be written to the job's history (a claim made
     * ahead, then its outcome): the history must be whole from this long before a slot to tell
     * that slot's fate once its record expired.
     */
    public static final Duration HISTORY_MARGIN = Duration.ofMinutes(1);

    public Backfill {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(job, "job");
        Objects.requireNonNull(from, "from");
        Objects.requireNonNull(to, "to");
        if (to.isBefore(from)) {
            throw new IllegalArgumentException("a backfill's --to (" + to + ") is before its --from (" + from + ")");
        }
        if (!(perSecond > 0 && perSecond <= MAX_PER_SECOND)) {
            throw new IllegalArgumentException("a backfill's rate must be more than 0 and at most " + (int) MAX_PER_SECOND
                    + " slots a second, but was " + perSecond);
        }
    }

    /** The same backfill, cancelled. */
    public Backfill cancel() {
        return new Backfill(id, job, from, to, perSecond, by, requestedAt, true);
    }

    /** A backfill as the store keeps it, with its driver's latest progress (null before the first). */
    public record Entry(Backfill backfill, Progress progress) {

        /** Neither ended nor cancelled: a worker drives it. */
        public boolean running() {
            return !backfill.cancelled() && (progress == null || !progress.ended());
        }
    }

    /**
     * Where a backfill stands, as its driving worker last wrote it.
     *
     * @param id the backfill's id
     * @param driver the worker driving it
     * @param total the slots of the range
     * @param ran slots this backfill claimed and ran
     * @param decided slots left alone: decided before (ran, missed, skipped or paused), or by another
     *     worker's claim while the backfill ran
     * @param skipped slots the job's calendars exclude: left alone, not run
     * @param cursor the latest slot it has passed (null before the first)
     * @param state {@code running}, {@code done}, {@code cancelled}, or {@code interrupted} (its mark in
     *     the store was lost, as by a Redis restart without it: it claims nothing more)
     * @param updatedAt when the driver wrote this (its clock)
     */
    public record Progress(String id, String driver, long total, long ran, long decided, long skipped,
            Instant cursor, String state, Instant updatedAt) {

        /** Slots passed so far: ran, decided or skipped. */
        public long passed() {
            return ran + decided + skipped;
        }

        public boolean ended() {
            return !"running".equals(state);
        }
    }

    /**
     * What the store knows of some slots of a job ({@link LockProvider#backfillView}).
     *
     * @param storeMillis the store's clock when it answered
     * @param activeId the id of the job's backfill the store would claim slots for now (null: none,
     *     such as after a cancel)
     * @param cursor that backfill's latest claimed slot (null: none yet)
     * @param knownFrom the earliest slot whose fate the store can still tell: a slot before it that
     *     has no record may have been decided long ago, so a backfill may not begin before it
     * @param decided the slots asked about that were decided: a record, an entry in the job's
     *     history, or decided when the backfill was asked for (the store keeps that set for it)
     */
    public record View(long storeMillis, String activeId, Instant cursor, Instant knownFrom, Set<Instant> decided) {

        public View {
            decided = Set.copyOf(decided);
        }
    }
}
