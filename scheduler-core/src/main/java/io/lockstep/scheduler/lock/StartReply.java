package io.lockstep.scheduler.lock;

import java.time.Instant;
import java.util.Objects;

/**
 * The store's answer to one {@link StartRequest}, with the store's clock.
 *
 * @param answer what the store did
 * @param serverTimeMicros the clock of the store that holds the claim (epoch microseconds), read at
 *     or before its answer left it, and as late as the store could read it (on one Redis server, at
 *     the end of the batch's last call; on a Redis Cluster, at the end of its own call; on Redlock, a
 *     time a majority of the masters' clocks had reached); 0 when unknown ({@link StartAnswer#UNANSWERED})
 */
public record StartReply(StartAnswer answer, long serverTimeMicros) {

    public StartReply {
        Objects.requireNonNull(answer, "answer");
    }

    /**
     * How long after this reply arrived a started run may begin, so that it never begins before its
     * slot by the store's clock: that clock read at least {@link #serverTimeMicros} when the reply
     * arrived, so waiting {@code slot - serverTime} on the monotonic clock from the reply's arrival
     * always ends at or after the slot by it (as {@link ClaimResult#startDelayMillis}, but read just
     * before the slot and in microseconds, so the run begins within a fraction of a millisecond of
     * it). 0 when the slot has passed; {@code Long.MAX_VALUE} when the time is unknown.
     */
    public long startDelayNanos(Instant slot) {
        if (serverTimeMicros <= 0) {
            return Long.MAX_VALUE;
        }
        return Math.max(0, (slot.toEpochMilli() * 1_000 - serverTimeMicros) * 1_000);
    }
}
