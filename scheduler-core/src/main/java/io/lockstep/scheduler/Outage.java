package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.LockException;

/**
 * Tracks whether the lock store is reachable, so that an outage gives one {@code redis_error}
 * warning (the rest at DEBUG) and one {@code redis_recovered} when it ends, not one per tick.
 * Thread-safe.
 */
final class Outage {

    private final Events events;
    /** Where the store is, asked anew at each event: a Sentinel-watched store names its current master. */
    private final java.util.function.Supplier<String> target;
    private boolean down;
    private long downSinceNanos;
    /** When a call other than a heartbeat last succeeded (monotonic nanos; 0: never). */
    private long lastSuccessNanos;
    /** Whether a heartbeat failed during the outage going on (a heartbeat that succeeds may then end it). */
    private boolean downByHeartbeat;

    Outage(Events events, java.util.function.Supplier<String> target) {
        this.events = events;
        this.target = target;
    }

    /**
     * {@link #failed} for a call to the store that threw: a {@link LockException} of the store's, or
     * anything else it threw (a client bug) wrapped into one that names the store. Either way nobody
     * knows what the call did.
     *
     * @return the failure, as a {@link LockException}
     */
    LockException failedCall(String operation, RuntimeException e) {
        LockException failure = e instanceof LockException le ? le
                : new LockException(target.get(), operation + " failed: " + Events.describe(e), e);
        failed(operation, failure);
        return failure;
    }

    /** Records a failure of {@code operation}; warns only on the first failure of an outage. */
    synchronized void failed(String operation, RuntimeException e) {
        String where = e instanceof LockException le ? le.target() : target.get();
        if (!down) {
            down = true;
            downSinceNanos = System.nanoTime();
            events.warn("redis_error").addKeyValue("operation", operation).addKeyValue("target", where)
                    .addKeyValue("error", Events.describe(e)).log("lock store unreachable; claims fail closed until it answers");
        } else {
            events.debug("redis_error").addKeyValue("operation", operation).addKeyValue("target", where)
                    .addKeyValue("error", Events.describe(e)).log("lock store still unreachable");
        }
    }

    /** Whether the store answered the last call. */
    synchronized boolean up() {
        return !down;
    }

    /**
     * A heartbeat that failed. An idle worker's only traffic is its heartbeat, so its failure starts
     * an outage (readiness and {@code lockstep_redis_up} follow within a heartbeat, not at the next
     * claim). But when another call succeeded within {@code interval}, the store answers that
     * worker's claims (a Redis Cluster whose heartbeat shard alone is down, say): it is not an
     * outage, and this failure is only logged at DEBUG.
     */
    synchronized void heartbeatFailed(RuntimeException e, java.time.Duration interval) {
        if (!down && lastSuccessNanos != 0 && System.nanoTime() - lastSuccessNanos < interval.toNanos()) {
            events.debug("heartbeat_failed").addKeyValue("error", Events.describe(e))
                    .log("heartbeat not written, but the store answers other calls; trying again");
            return;
        }
        failedCall("heartbeat", e);
        downByHeartbeat = true; // the heartbeat sees it too: its success may end it

    }

    /**
     * Records a heartbeat that went through: it ends an outage in which a heartbeat failed too. One
     * that only claims saw (the shard of this worker's jobs is down, the heartbeat's is not) stays
     * until a claim goes through, so readiness does not flap with every heartbeat.
     */
    synchronized void heartbeatSucceeded() {
        if (downByHeartbeat) {
            recovered();
        }
    }

    /** Records a success; ends an outage if one was going on. */
    synchronized void succeeded() {
        lastSuccessNanos = System.nanoTime();
        recovered();
    }

    private void recovered() {
        if (down) {
            down = false;
            downByHeartbeat = false;
            events.info("redis_recovered").addKeyValue("target", target.get())
                    .addKeyValue("duration_ms", (System.nanoTime() - downSinceNanos) / 1_000_000)
                    .log("lock store answers again");
        }
    }
}
