package io.lockstep.scheduler.lock;

/** The store's answer to one {@link StartRequest}. */
public enum StartAnswer {
    /** The run is recorded as started and holds the job's full lease: it may start at its slot. */
    STARTED,
    /** The slot's grace passed by the store's clock (the worker stalled): recorded as missed; it must not start. */
    LATE,
    /** The job was paused since the claim: recorded as skipped, as a claim at the slot would be; it must not start. */
    PAUSED,
    /** The claim is no longer this token's (its short lease ran out and a peer took the slot over): it must not start. */
    LOST,
    /**
     * The master that holds the claim did not answer while others did (one shard of a Redis
     * Cluster failing): nothing is known; ask again while the claim's short lease lasts.
     */
    UNANSWERED
}
