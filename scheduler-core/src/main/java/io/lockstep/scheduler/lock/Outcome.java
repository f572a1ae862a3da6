package io.lockstep.scheduler.lock;

/** How a run ended, as written into the slot record when the lease is given back. */
public enum Outcome {
    SUCCEEDED,
    FAILED,
    TIMED_OUT,
    LEASE_LOST,
    INTERRUPTED,
    /**
     * Claimed but never started (its lease was lost before the start, or its worker stopped first):
     * handed back, so that a peer runs it within its grace whatever the recover policy.
     */
    NOT_STARTED,
    /**
     * Claimed but not started, and closed: its worker was held up between the claim and the start
     * past the job's next slot, so the run could no longer begin in slot order (a job with
     * {@code overlap: allow}); reported {@code slot_missed} (code {@code order}) by that worker,
     * never handed to a peer.
     */
    MISSED;

    /** The lower-case form stored in the slot record. */
    public String label() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
