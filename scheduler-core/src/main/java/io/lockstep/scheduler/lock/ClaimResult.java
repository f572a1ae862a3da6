package io.lockstep.scheduler.lock;

/**
 * The store's answer to one {@link ClaimRequest}.
 *
 * @param status what happened
 * @param fencingToken the job's fence value taken by this claim; 0 unless {@link Status#CLAIMED} (for
 *     {@link Status#ABANDONED}, the token of the abandoned run)
 * @param serverTimeMillis the store's clock when it answered (at or after it decided), in epoch
 *     milliseconds: a run claimed ahead starts {@link #startDelayMillis} after the answer arrives
 *     (until the start's reply, read just before the slot, gives a tighter bound: {@link StartReply})
 * @param runningUntilMillis when, by the store's clock, the earliest lease among the job's runs in
 *     flight ends unless renewed (epoch ms); 0 when none is in flight. Every worker that races a slot
 *     learns from it when to look for a run that died (see {@link LockProvider#runsInFlight})
 * @param why for a recovery {@link Status#CLAIMED}, why the slot's earlier run ended without an
 *     outcome: {@code not_started} (a claim never started), {@code handed_over} (its worker's stop
 *     cut it off and handed it over), {@code lease_lost} (its worker died or stalled); "" otherwise
 *     (and from stores that do not say)
 * @param started for a {@link Status#CLAIMED} of a claim made ahead ({@link ClaimRequest#ahead}):
 *     whether the store recorded it as the run's start (decided within
 *     {@link ClaimRequest#START_WINDOW} of its slot, by the store's clock: the run starts at its slot
 *     with no further call); false when it is staged, to be started by {@link LockProvider#start}
 *     (and from stores that do not say). Not read for a claim decided at or after its slot, which
 *     always is the run's start.
 */
public record ClaimResult(Status status, long fencingToken, long serverTimeMillis, long runningUntilMillis, String why,
        boolean started) {

    public ClaimResult {
        why = why == null ? "" : why;
    }

    /** A result that does not say whether a claim made ahead is the run's start (so it is staged). */
    public ClaimResult(Status status, long fencingToken, long serverTimeMillis, long runningUntilMillis, String why) {
        this(status, fencingToken, serverTimeMillis, runningUntilMillis, why, false);
    }

    /** A result that gives no why. */
    public ClaimResult(Status status, long fencingToken, long serverTimeMillis, long runningUntilMillis) {
        this(status, fencingToken, serverTimeMillis, runningUntilMillis, "");
    }

    /**
     * How long a recovery answered {@link Status#BUSY} holds the job's next turn (recover.lua's
     * {@code TURN_HOLD}): a rerun must ask again within it to keep the turn, so one whose worker died
     * blocks later slots for no longer than this.
     */
    public static final java.time.Duration TURN_HOLD = java.time.Duration.ofSeconds(5);

    /** A result that says nothing of runs in flight. */
    public ClaimResult(Status status, long fencingToken, long serverTimeMillis) {
        this(status, fencingToken, serverTimeMillis, 0);
    }

    /**
     * How long after this answer arrived a claimed run may start, so that it never starts before its
     * slot by the store's clock: the store's clock read {@link #serverTimeMillis} when it decided,
     * and it reads at least that when its answer arrives, so waiting {@code slot - serverTime} on
     * the monotonic clock from the moment the answer arrived always ends at or after the slot by the
     * store's clock, whatever the network delay or the worker's own clock (0 when decided at or
     * after the slot). A claim made ahead ({@link ClaimRequest#ahead}) thus starts its run exactly
     * at the slot, never before it.
     */
    public long startDelayMillis(java.time.Instant slot) {
        return Math.max(0, slot.toEpochMilli() - serverTimeMillis);
    }

    /** The outcome of a claim. */
    public enum Status {
        /** This request won the slot; its lease is live. */
        CLAIMED,
        /** Another claim (or a miss record) already owns the slot. */
        TAKEN,
        /** The slot was recorded as skipped: a run of the same job still holds the exclusive lease. */
        SKIPPED,
        /** The job is paused ({@code pause}): the slot was recorded as skipped (exactly one request does). */
        PAUSED,
        /** The slot was past its grace and this request recorded it as missed (exactly one does). */
        MISSED,
        /**
         * A later slot of the job already started, so this one never will (slots start in order);
         * this request recorded it as missed (exactly one does).
         */
        SUPERSEDED,
        /**
         * The slot has no record and is old enough that its record may have expired, and the cluster
         * decided a slot at least as late (a manual run: any manual run that old): whether it ran can
         * no longer be known, so it is neither run nor recorded. Nothing was written. "Old enough" is
         * judged by the shortest record ttl any claim of the job wrote, or the request's own if shorter,
         * so that workers of two configs (a rollout) agree on it.
         */
        STALE,
        /**
         * The store's clock has not reached the slot yet (minus {@link ClaimRequest#ahead}), or a
         * claim ahead found the job paused or its lease held: ask again at the slot. Nothing was written.
         */
        EARLY,
        /**
         * Catch-up or recovery must wait: another run holds the job's exclusive lease, or an earlier
         * slot's rerun waits for it. A recovery answered so holds the job's next turn for
         * {@link #TURN_HOLD} (unless an earlier slot's rerun holds it): until then, under
         * {@code overlap: skip}, a later slot that finds the lease free is {@link #SKIPPED}, so the
         * rerun gets in at the first gap between back-to-back runs. Nothing else was written.
         */
        BUSY,
        /** The slot's run lost its lease without an outcome and this request recorded it as abandoned. */
        ABANDONED,
        /**
         * The claim won, but fewer replicas than required acknowledged it in time ({@code waitReplicas}):
         * a failover could lose it, so it was disowned (recorded as missed) and must not run.
         */
        UNCONFIRMED,
        /**
         * The master that holds this slot's keys could not be reached (one shard of a Redis Cluster
         * failing while the others answered): nothing is known of this request, so nothing starts
         * and it is asked again with the same token, as when the whole store is unreachable.
         */
        UNANSWERED,
        /**
         * Redlock: the masters did not agree (no majority for any answer, say two workers won two
         * masters each), or the claim took longer than its lease's validity. What this request wrote
         * was given back on every master; nothing runs. Ask again after a short random delay.
         */
        NO_QUORUM
    }
}
