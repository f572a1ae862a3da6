package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.LockProvider;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;

/**
 * The cluster's time as this worker best knows it: the lock store's clock as last read, plus the
 * time elapsed since on this host's monotonic clock. So workers whose host clocks disagree still
 * fire together, and a host clock that is stepped (by hand, by NTP, by a VM resume) moves nothing:
 * only the store's clock and elapsed time count. The store's clock is read with a few samples,
 * taking the one with the shortest round trip and assuming the store read its clock half-way
 * through; it is read again every {@link #SYNC_INTERVAL}, unless a heartbeat's reply brought a
 * reading meanwhile ({@link #sample}). Before the first read the host's wall clock stands in.
 * Thread-safe.
 */
final class ClusterClock {

    static final Duration SYNC_INTERVAL = Duration.ofSeconds(30);
    /** How soon a read that failed is tried again. */
    private static final Duration RETRY = Duration.ofSeconds(1);
    private static final int SAMPLES = 3;
    /**
     * How fast the store's clock may drift from this host's monotonic clock, at most, as the error
     * of an anchor grows with its age (ppm of elapsed time): NTP slews a clock by up to 500 ppm,
     * chrony faster, and the store's host may be stepped meanwhile. A reading of the heartbeat is
     * taken once its own error (half its round trip) is below the anchor's grown one.
     */
    static final long DRIFT_PPM = 1_000;

    /** The host's wall clock: stands in before the first read, and gives the reported offset. */
    private final Clock clock;

    /** The store's clock at {@link Anchor#nanos}, epoch ms, read with a round trip of {@code rttNanos}; null before the first read. */
    private record Anchor(long serverMillis, long nanos, long offsetMillis, long rttNanos) {}

    private volatile Anchor anchor;
    /** Monotonic nanos at which the next read is due. */
    private volatile long nextSyncNanos = System.nanoTime();

    ClusterClock(Clock clock) {
        this.clock = clock;
    }

    Instant now() {
        Anchor a = anchor;
        if (a == null) {
            return clock.instant();
        }
        return Instant.ofEpochMilli(a.serverMillis).plusNanos(System.nanoTime() - a.nanos);
    }

    /** How far the store's clock was ahead of this host's wall clock at the last read (ms). */
    long offsetMillis() {
        Anchor a = anchor;
        return a == null ? 0 : a.offsetMillis;
    }

    /** When the next read of the store's clock is due. */
    boolean syncDue() {
        return System.nanoTime() - nextSyncNanos >= 0;
    }

    /**
     * Reads the store's clock.
     *
     * @throws io.lockstep.scheduler.lock.LockException when the store cannot be read
     */
    void sync(LockProvider provider) {
        nextSyncNanos = System.nanoTime() + RETRY.toNanos(); // if this read fails
        long bestRtt = Long.MAX_VALUE;
        Anchor best = null;
        for (int i = 0; i < SAMPLES; i++) {
            long wall = clock.millis();
            long sent = System.nanoTime();
            long server = provider.serverTimeMillis();
            long rtt = System.nanoTime() - sent;
            if (rtt < bestRtt) {
                bestRtt = rtt;
                best = new Anchor(server, sent + rtt / 2, server - (wall + rtt / 2_000_000), rtt);
            }
        }
        anchor = best;
        nextSyncNanos = System.nanoTime() + SYNC_INTERVAL.toNanos();
    }

    /**
     * A reading of the store's clock that came with another call (the heartbeat's reply carries the
     * server's time), sent at {@code sentNanos} and answered at {@code receivedNanos}. Taken when its
     * round trip is about as short as the anchor's, or shorter than the anchor's plus what the
     * anchor may have drifted since ({@link #DRIFT_PPM}, both ways), or when the anchor is due
     * anyway; then the next read of its own is put off, so that an idle worker sends nothing but its
     * heartbeat.
     */
    void sample(long serverMillis, long sentNanos, long receivedNanos) {
        long rtt = receivedNanos - sentNanos;
        Anchor a = anchor;
        if (a == null || rtt <= Math.max(a.rttNanos * 3 / 2, a.rttNanos + 2 * (receivedNanos - a.nanos) / 1_000_000 * DRIFT_PPM) + 500_000
                || syncDue()) {
            long wall = clock.millis() - (System.nanoTime() - receivedNanos) / 1_000_000;
            anchor = new Anchor(serverMillis, sentNanos + rtt / 2, serverMillis - (wall - rtt / 2_000_000), rtt);
            nextSyncNanos = System.nanoTime() + SYNC_INTERVAL.toNanos();
        }
    }
}
