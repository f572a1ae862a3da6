package io.lockstep.scheduler.lock;

import java.time.Duration;
import java.util.Objects;

/**
 * A request to decide one slot: claim it, record it as missed, catch it up, or deal with a run of
 * it that lost its lease.
 *
 * @param lease the lease to create when the claim wins
 * @param workerId the claiming worker, stored in the slot record for operators
 * @param misfireGrace how late (by the store's clock) the slot may still be claimed; later than
 *     this the store records the slot as missed instead ({@link Mode#CLAIM} only)
 * @param mode what to do
 * @param replace {@code overlap: replace}: a run of the job holding the exclusive lease is revoked
 *     instead of the slot being skipped ({@link Mode#CLAIM} only)
 * @param manual a manual run ({@code trigger}), whose slot is the time of the request: decided like
 *     any slot, under the job's overlap policy, but outside the job's schedule (it neither moves nor
 *     is refused by the job's order of slots) and even while the job is paused
 * @param ahead how long before its slot (by the store's clock) a {@link Mode#CLAIM} may already be
 *     decided: the claim is made ahead, the run starts at the slot (see {@link ClaimResult#startDelayMillis}).
 *     A claim ahead is only decided when it can win outright: while the job is paused or its
 *     lease is held, the store answers {@link ClaimResult.Status#EARLY} and the slot is asked
 *     again at its time. A claim ahead that wins within {@link #START_WINDOW} of its slot is the
 *     run's start ({@link ClaimResult#started}); one that wins earlier is staged: a short lease
 *     until the slot plus {@link #STAGED_MARGIN}, started by {@link LockProvider#start} (which
 *     checks the pause and the grace again at the start).
 * @param recordTtl how long the slot record lives past its slot, at the least: the job's
 *     {@link #recordTtl(Duration, Duration)} (null when constructed gives that); only the stores'
 *     contract tests set another, to let a record expire in seconds
 * @param missCode why its worker reports the slot missed ({@link Mode#MISS_ONLY}): the
 *     {@code slot_missed} event's {@code code} ({@code outage}, {@code no_thread}, ...), kept as the
 *     reason of the slot's entry in the job's history; null: {@code reported}. For
 *     {@link Mode#SKIP_ONLY}, why the slot is skipped ({@code calendar}), required
 * @param backfill the id of the {@link Backfill} this slot is claimed for ({@link Mode#CATCH_UP}
 *     only), or null: claimed outside the job's order of slots, never refused as stale (its worker
 *     read that nobody decided it: {@link Backfill.View}), only for the backfill the store names as
 *     the job's and only past its cursor, which the claim moves; busy while the job is paused
 */
public record ClaimRequest(Lease lease, String workerId, Duration misfireGrace, Mode mode, boolean replace, boolean manual,
        Duration ahead, Duration recordTtl, String missCode, String backfill) {

    /** A request that is not a backfill's. */
    public ClaimRequest(Lease lease, String workerId, Duration misfireGrace, Mode mode, boolean replace, boolean manual,
            Duration ahead, Duration recordTtl, String missCode) {
        this(lease, workerId, misfireGrace, mode, replace, manual, ahead, recordTtl, missCode, null);
    }

    /** A request without a miss code. */
    public ClaimRequest(Lease lease, String workerId, Duration misfireGrace, Mode mode, boolean replace, boolean manual,
            Duration ahead, Duration recordTtl) {
        this(lease, workerId, misfireGrace, mode, replace, manual, ahead, recordTtl, null);
    }

    /** A request whose slot record lives the job's {@link #recordTtl(Duration, Duration)}. */
    public ClaimRequest(Lease lease, String workerId, Duration misfireGrace, Mode mode, boolean replace, boolean manual,
            Duration ahead) {
        this(lease, workerId, misfireGrace, mode, replace, manual, ahead, null);
    }

    /** A request decided no earlier than its slot. */
    public ClaimRequest(Lease lease, String workerId, Duration misfireGrace, Mode mode, boolean replace, boolean manual) {
        this(lease, workerId, misfireGrace, mode, replace, manual, Duration.ZERO);
    }

    /**
     * Whether the claim is made ahead of its slot: staged (started later, {@link StartRequest})
     * unless the store answers that it is the run's start ({@link ClaimResult#started}).
     */
    public boolean staged() {
        return ahead.toMillis() > 0;
    }

    /** A request for a scheduled slot (not a manual run). */
    public ClaimRequest(Lease lease, String workerId, Duration misfireGrace, Mode mode, boolean replace) {
        this(lease, workerId, misfireGrace, mode, replace, false);
    }

    /** What a request asks the store to do. */
    public enum Mode {
        /** Claim the slot if it is due, within its grace, and undecided. */
        CLAIM,
        /**
         * Do not claim: only record the slot as missed if nobody has decided it (a worker that found
         * no free thread before the grace ran out, or a slot the cluster missed while it was down).
         */
        MISS_ONLY,
        /**
         * Claim an undecided past slot whatever its grace (catch-up after the cluster was down);
         * answers {@link ClaimResult.Status#BUSY} while another run holds the job's exclusive lease.
         */
        CATCH_UP,
        /**
         * Run again a slot whose run lost its lease without an outcome: claim it anew with a fresh
         * token and the next fencing token. Answers {@link ClaimResult.Status#TAKEN} when there is
         * nothing to recover (the run renewed, finished, or another worker recovered it) and
         * {@link ClaimResult.Status#BUSY} while another run holds the job's exclusive lease.
         */
        RECOVER,
        /**
         * Do not claim: only record the slot as skipped, with {@link ClaimRequest#missCode} as the
         * reason, if nobody has decided it (a slot its job's calendars exclude). Never decided
         * before its slot ({@link ClaimResult.Status#EARLY}); answers
         * {@link ClaimResult.Status#SKIPPED} to the request that decided it, {@link ClaimResult.Status#TAKEN}
         * to the rest.
         */
        SKIP_ONLY,
        /**
         * Record a slot whose run lost its lease without an outcome as abandoned; answers
         * {@link ClaimResult.Status#ABANDONED} to exactly one request, {@link ClaimResult.Status#TAKEN}
         * to the rest.
         */
        ABANDON
    }

    public ClaimRequest {
        Objects.requireNonNull(lease, "lease");
        Objects.requireNonNull(workerId, "workerId");
        Objects.requireNonNull(misfireGrace, "misfireGrace");
        Objects.requireNonNull(mode, "mode");
        Objects.requireNonNull(ahead, "ahead");
        if (recordTtl == null) {
            recordTtl = recordTtl(lease.ttl(), misfireGrace);
        }
        if (mode == Mode.SKIP_ONLY && missCode == null) {
            throw new IllegalArgumentException("a SKIP_ONLY request needs its reason (missCode)");
        }
        if (backfill != null && (mode != Mode.CATCH_UP || manual || ahead.toMillis() > 0)) {
            throw new IllegalArgumentException("a backfill's slot is claimed as a catch-up, at or after its slot");
        }
        if (missCode != null && !MISS_CODE.matcher(missCode).matches()) {
            throw new IllegalArgumentException("miss code must match " + MISS_CODE.pattern() + ": " + missCode);
        }
    }

    /** What a miss code may be: a short lower-case word, as the {@code slot_missed} events' codes are. */
    public static final java.util.regex.Pattern MISS_CODE = java.util.regex.Pattern.compile("[a-z][a-z_]{0,31}");

    /** A plain claim ({@link Mode#CLAIM}, or {@link Mode#MISS_ONLY} when {@code missOnly}). */
    public ClaimRequest(Lease lease, String workerId, Duration misfireGrace, boolean missOnly) {
        this(lease, workerId, misfireGrace, missOnly ? Mode.MISS_ONLY : Mode.CLAIM, false);
    }

    /**
     * How long past its slot the short lease of a claim made ahead lives until its start
     * ({@link StartRequest}): room for the start to land, short enough that a peer takes over a
     * slot whose worker died before it well within the grace, and shorter than the finest schedule
     * (a second), so that a dead staged claim never makes the job's next slot skip.
     */
    public static final Duration STAGED_MARGIN = Duration.ofMillis(500);

    /**
     * A claim made ahead that the store decides within this long before its slot (by its clock) is
     * the run's start: its record says running, its lease ends the job's ttl past the slot, and no
     * start call follows (a slot costs two calls: the claim and the outcome). Every check a start
     * makes (the claim is ours, the grace, the pause, a later slot) the claim has just made, by the
     * store's clock, as a start sent this long before the slot would. A claim decided earlier is
     * staged. The same span as the start of a staged claim ({@code Starter.LEAD} plus its join),
     * so that a worker that dies or stalls between a claim and its slot costs what it cost before:
     * a claim staged and not started is run by a peer; one inside the window is the run's start.
     */
    public static final Duration START_WINDOW = Duration.ofMillis(65);

    /**
     * How far beyond its grace a slot record outlives the slot, at the least: 2 minutes. The system
     * property {@code lockstep.recordBeyondGraceMillis} shortens it, for tests that must see records
     * expire (a rollout's stale claims) without waiting minutes; a worker in production never sets it.
     */
    public static final Duration RECORD_BEYOND_GRACE = Duration.ofMillis(Long.getLong("lockstep.recordBeyondGraceMillis",
            Duration.ofMinutes(2).toMillis()));

    /**
     * How long the slot record of the job's last decided slot is kept: the catch-up window's upper
     * bound, so that every key Lockstep writes has a ttl; the fence counters live as long.
     */
    public static final Duration LAST_SLOT_TTL = Duration.ofDays(7);

    public boolean missOnly() {
        return mode == Mode.MISS_ONLY;
    }

    /**
     * How long the slot record of a job with this lease and grace lives ({@link #recordTtl()}). It
     * must outlive every moment at which a worker of the same config could still try to claim the
     * slot (the grace, plus a paused worker catching up), so that the record, not a time window,
     * decides; and it must not pile up for jobs that fire every second. Renewals keep the record of
     * a long run alive as long as its lease. Workers of different configs (a rollout) may use
     * different ttls for one slot: the store keeps the shortest one written per job (its
     * {@code kept} mark) and judges a slot without a record by it, so a record that expired
     * sooner than the claimant's own would have is never taken for an undecided slot.
     */
    public static Duration recordTtl(Duration lease, Duration misfireGrace) {
        Duration beyond = lease.plus(lease); // twice the lease (multipliedBy goes through BigDecimal: once per slot)
        return misfireGrace.plus(beyond.compareTo(RECORD_BEYOND_GRACE) > 0 ? beyond : RECORD_BEYOND_GRACE);
    }
}
