package io.lockstep.scheduler.lock;

/** How a run ended, as written into the slot record when the lease is given back. */
public enum Outcome {
    SUCCEEDED,
    FAILED,
    TIMED_OUT,
    LEASE_LOST,
    INTERRUPTED;

    /** The lower-case form stored in the slot record. */
    public String label() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
