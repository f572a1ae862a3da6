package io.lockstep.scheduler;

/**
 * What the cluster does with a slot whose run lost its lease without an outcome (its worker was
 * killed, or paused past the lease): one of the other workers notices within the lease plus about
 * a second.
 */
public enum Recover {
    /** Exactly one worker records the slot as abandoned ({@code slot_abandoned}). The default. */
    NONE,
    /** Exactly one worker runs the slot again, under a higher fencing token ({@code slot_recovered}). */
    RERUN
}
