package io.lockstep.scheduler;

/** What happens when a slot of a job falls due while an earlier run of the same job still holds its lease. */
public enum Overlap {
    /** The new slot is recorded as skipped ({@code slot_skipped}); the running one goes on. The default. */
    SKIP,
    /** The new slot runs alongside the old one, each under a lease of its own. */
    ALLOW,
    /**
     * The new slot revokes the running lease and runs. The old run's worker learns it at its next
     * renewal (within lease/3), logs {@code lease_lost} and interrupts the job; its fencing token
     * is lower than the new run's, so a fenced resource refuses its late writes.
     */
    REPLACE
}
