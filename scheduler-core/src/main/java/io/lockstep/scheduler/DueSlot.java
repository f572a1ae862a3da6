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
    final ClaimRequest.Mode mode;
    Instant retryAt;
    String token;
    boolean followerQueued;
    /** Why the slot is reported missed ({@link ClaimRequest.Mode#MISS_ONLY} at start). */
    String missReason;
    /** The catch-up slot to claim once this one is decided ({@code catchUp: all}, oldest first). */
    DueSlot next;

    DueSlot(ScheduledJob job, Instant slot) {
        this(job, slot, ClaimRequest.Mode.CLAIM);
    }

    DueSlot(ScheduledJob job, Instant slot, ClaimRequest.Mode mode) {
        this.job = job;
        this.slot = slot;
        this.mode = mode;
        this.retryAt = slot;
    }

    JobDefinition definition() {
        return job.definition();
    }

    /** Until when the slot may start; only a plain claim has a grace. */
    Instant graceEnd() {
        return mode == ClaimRequest.Mode.CLAIM ? slot.plus(definition().misfireGrace()) : Instant.MAX;
    }

    /** Whether winning it starts a run, so that it needs a free job thread. */
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
