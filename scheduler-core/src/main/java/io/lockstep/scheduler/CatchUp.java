package io.lockstep.scheduler;

/**
 * What the first worker back does with the slots that passed while no worker of the cluster was
 * running (within the job's {@code catchUpWindow}). Whatever the policy, each such slot is handled
 * once, whichever worker comes back first.
 */
public enum CatchUp {
    /** Every missed slot is reported as {@code slot_missed}. The default. */
    NONE,
    /** The latest missed slot runs; the earlier ones are reported as {@code slot_missed}. */
    LATEST,
    /** Every missed slot runs, oldest first (one at a time unless {@code overlap: allow}). */
    ALL
}
