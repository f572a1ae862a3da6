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
     * The store recorded the start, but fewer replicas than {@code redis.waitReplicas} acknowledged
     * it within its timeout: a failover could lose it and let a peer run the slot again, so it must
     * not start (handed back unstarted, a peer runs it within its grace).
     */
    UNCONFIRMED,
    /**
     * The store's parts answered with no majority (Redlock: say the job paused on one live master
     * and the run started on another, a third down). It must not start, and nobody else will report
     * it (peers see the slot taken by this token): the store recorded it missed ({@code no_quorum})
     * wherever the claim was still this token's, and its worker reports it missed (code
     * {@code no_quorum}), once.
     */
    SPLIT,
    /**
     * The master that holds the claim did not answer while others did (one shard of a Redis
     * Cluster failing): nothing is known; ask again while the claim's short lease lasts.
     */
    UNANSWERED
}
