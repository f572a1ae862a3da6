package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.LockProvider;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;

/**
 * The cluster's time as this worker best knows it: the local wall clock corrected by the offset
 * to the lock store's clock, so that workers whose host clocks disagree still fire together. The
 * offset is measured from the store's time reads, taking the sample with the shortest round trip
 * and assuming the store read its clock half-way through. Thread-safe.
 */
final class ClusterClock {

    static final Duration SYNC_INTERVAL = Duration.ofSeconds(30);
    private static final int SAMPLES = 3;

    private final Clock clock;
    private volatile long offsetMillis;
    private volatile long lastSyncNanos;

    ClusterClock(Clock clock) {
        this.clock = clock;
    }

    Instant now() {
        return clock.instant().plusMillis(offsetMillis);
    }

    long offsetMillis() {
        return offsetMillis;
    }

    boolean syncDue() {
        return System.nanoTime() - lastSyncNanos >= SYNC_INTERVAL.toNanos();
    }

    /**
     * Measures the offset to the store's clock.
     *
     * @throws io.lockstep.scheduler.lock.LockException when the store cannot be read
     */
    void sync(LockProvider provider) {
        long bestRtt = Long.MAX_VALUE;
        long bestOffset = 0;
        for (int i = 0; i < SAMPLES; i++) {
            long localBefore = clock.millis();
            long sent = System.nanoTime();
            long server = provider.serverTimeMillis();
            long rtt = System.nanoTime() - sent;
            if (rtt < bestRtt) {
                bestRtt = rtt;
                bestOffset = server - (localBefore + rtt / 2_000_000);
            }
        }
        offsetMillis = bestOffset;
        lastSyncNanos = System.nanoTime();
    }
}
