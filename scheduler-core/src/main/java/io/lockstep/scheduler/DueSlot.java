package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.ClaimRequest;
import java.time.Instant;

/**
 * One slot on its way to a decision: queued by its fire time, then by its retry time, until the
 * store decides it. Its token stays the same across retries, so a repeated request whose reply was
 * lost gets the same answer. Guarded by the {@link SlotQueue}'s lock while queued; owned by the
 * tick thread while it is being claimed.
 */
final class DueSlot implements Comparable<DueSlot> {

    final ScheduledJob job;
    final Instant slot;
    /** What to ask the store; a claim becomes {@link ClaimRequest.Mode#MISS_ONLY} once it cannot start any more. */
    ClaimRequest.Mode mode;
    Instant retryAt;
    /**
     * Until when a {@link ClaimRequest.Mode#CATCH_UP} slot may still start (set when it is planned);
     * later it is only recorded as missed.
     */
    Instant catchUpDeadline = Instant.MAX;
    /**
     * Already reported missed by this worker (the store was unreachable until it could no longer
     * start); what is still sent for it only makes the store's record agree.
     */
    boolean reported;
    /** Planned by the catch-up at start ({@code catchUp: latest | all}): newer slots of the job wait for it. */
    boolean catchUp;
    String token;
    boolean followerQueued;
    /** Why the slot is reported missed ({@link ClaimRequest.Mode#MISS_ONLY} at start). */
    String missReason;
    /** The same as a short code for the {@code reason} tag of {@code lockstep.slots.missed}. */
    String missCode;
    /** A manual run ({@code trigger}): outside the job's order of slots, with {@link #MANUAL_GRACE}. */
    boolean manual;
    /** The catch-up slot to claim once this one is decided ({@code catchUp: all}, oldest first). */
    DueSlot next;
    /** Where the slot stands with its preferred claimer ({@link io.lockstep.scheduler.Preference}). */
    Standing standing = Standing.NONE;
    /** {@link Standing#PEER}: the worker it was given to. */
    String preferred;

    /** A scheduled slot's standing with its preferred claimer. */
    enum Standing {
        /** Not shared out (a catch-up, a manual run, a miss to record): claimed by every worker when due. */
        NONE,
        /** A scheduled slot not shared out yet: due {@link io.lockstep.scheduler.Preference#AHEAD} of its time. */
        UNSHARED,
        /** Ours: claimed ahead of its time. */
        OWN,
        /** A peer's: its record is read {@link io.lockstep.scheduler.Preference#BACKOFF} after its time. */
        PEER
    }

    DueSlot(ScheduledJob job, Instant slot) {
        this(job, slot, ClaimRequest.Mode.CLAIM);
    }

    DueSlot(ScheduledJob job, Instant slot, ClaimRequest.Mode mode) {
        this.job = job;
        this.slot = slot;
        this.mode = mode;
        this.retryAt = slot;
    }

    /**
     * How late a manual run may still start: workers hear of a trigger with their next heartbeat,
     * so at least a few heartbeats, and never less than the job's own grace.
     */
    static final java.time.Duration MANUAL_GRACE = java.time.Duration.ofSeconds(30);

    /**
     * A job's next scheduled slot: due {@link io.lockstep.scheduler.Preference#AHEAD} of its time, when
     * it is shared out to its preferred claimer.
     */
    static DueSlot scheduled(ScheduledJob job, Instant slot) {
        DueSlot d = new DueSlot(job, slot);
        d.standing = Standing.UNSHARED;
        d.retryAt = slot.minus(io.lockstep.scheduler.Preference.AHEAD);
        return d;
    }

    /** Whether the claim may be decided ahead of the slot: only ours, on its first way to the store. */
    boolean claimsAhead() {
        return standing == Standing.OWN && mode == ClaimRequest.Mode.CLAIM && !manual && !reported;
    }

    /** A manual run of {@code job} requested at {@code slot}. */
    static DueSlot manual(ScheduledJob job, Instant slot) {
        DueSlot d = new DueSlot(job, slot);
        d.manual = true;
        return d;
    }

    /** How late the store may still let this slot be claimed. */
    java.time.Duration grace() {
        java.time.Duration own = definition().misfireGrace();
        return manual && own.compareTo(MANUAL_GRACE) < 0 ? MANUAL_GRACE : own;
    }

    JobDefinition definition() {
        return job.definition();
    }

    /**
     * Until when the slot may start: a plain claim within its grace, a catch-up until its deadline.
     * Past it, the slot is only recorded as missed; a slot waiting for a thread is looked at then.
     */
    Instant startDeadline() {
        return switch (mode) {
            case CLAIM -> slot.plus(grace());
            case CATCH_UP -> catchUpDeadline;
            default -> Instant.MAX;
        };
    }

    /**
     * How long the store can still tell what became of the slot: its record lives at least this long
     * after the slot. Past it, a request whose answer never came is given up.
     */
    Instant recordDeadline() {
        JobDefinition d = definition();
        return slot.plus(ClaimRequest.recordTtl(d.lease(), grace()));
    }

    /**
     * Turns a claim that can no longer start into a request that only records the miss (with the
     * same token: if an earlier claim of ours won after all, the store disowns it).
     */
    void missOnly(String reason, String code) {
        mode = ClaimRequest.Mode.MISS_ONLY;
        if (missReason == null) {
            missReason = reason;
            missCode = code;
        }
    }

    /**
     * Whether winning it starts a run, so that it needs a free job thread. An abandonment reserves
     * none (abandoning a dead run must not wait for a thread): when it wins a claim that never
     * started, the run takes a thread then.
     */
    boolean needsThread() {
        return mode == ClaimRequest.Mode.CLAIM || mode == ClaimRequest.Mode.CATCH_UP
                || mode == ClaimRequest.Mode.RECOVER;
    }

    String key() {
        return definition().name() + "@" + slot.toEpochMilli();
    }

    @Override
    public int compareTo(DueSlot other) {
        return retryAt.compareTo(other.retryAt);
    }
}
