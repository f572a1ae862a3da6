package io.lockstep.scheduler;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * How many of this worker's job threads are taken: reserved by a claim in flight or running a job,
 * and how many runs claimed ahead wait in the pool's queue beyond them (the backlog).
 *
 * <p>A worker claims what its free threads can start now, and, for the slots it claims ahead of
 * their instant (the preferred claimer's own), also those it can start within the slot's grace
 * once a thread frees up ({@link #canQueue}): short runs free a thread in milliseconds, so a worker
 * of 8 threads whose share of an instant is 300 runs claims them all in one round trip, ahead, and
 * the pool starts them as a plain executor would, instead of claiming 8 at a time, one round trip
 * after each run ends. The estimate is the mean time a run held a job thread here (its job, its
 * events), over the last runs; a run that still finds no thread within its grace is handed back
 * unstarted ({@code JobAttempts}), so a wrong estimate costs a peer's recovery, never a silent slot.
 * Only with the scheduler's own pool, which queues what its threads cannot take: an application's
 * executor (virtual threads, say) would start every queued run at once, past {@code threads}.
 * Thread-safe.
 */
final class JobThreads {

    /** At most this many runs per thread wait beyond the threads, whatever the estimate. */
    static final int MAX_BACKLOG_PER_THREAD = 64;
    /** A run waits for a thread at most this fraction of its grace, by the estimate: room for the estimate to be off. */
    private static final int GRACE_FRACTION = 2;

    final int size;
    private final boolean queues;
    private final AtomicInteger busy = new AtomicInteger();
    /** Mean time a run held a job thread (nanos, an exponential average over about 8 runs); 0 before the first. */
    private volatile long meanRunNanos;

    /** {@code queues}: the pool queues the runs its threads cannot take yet (the scheduler's own pool). */
    JobThreads(int size, boolean queues) {
        this.size = size;
        this.queues = queues;
    }

    JobThreads(int size) {
        this(size, false);
    }

    int busy() {
        return busy.get();
    }

    /** Threads neither running a job nor reserved (0 while runs wait beyond them). */
    int free() {
        return Math.max(0, size - busy.get());
    }

    boolean anyFree() {
        return busy.get() < size;
    }

    /** How many runs, claimed or running, are beyond the threads (waiting in the pool's queue for one). */
    int backlog() {
        return Math.max(0, busy.get() - size);
    }

    /**
     * Whether a run claimed ahead would still get a thread within {@code grace} of its instant with
     * {@code ahead} runs already waiting beyond the threads: by the mean time a run held a thread
     * here, with half the grace to spare. False before any run ended here (nothing to go by), and
     * with a pool that does not queue.
     */
    boolean canQueue(int ahead, Duration grace) {
        long mean = meanRunNanos;
        if (!queues || mean == 0 || ahead >= size * MAX_BACKLOG_PER_THREAD) {
            return false;
        }
        return (ahead + 1) * mean / size <= grace.toNanos() / GRACE_FRACTION;
    }

    /** A run held a job thread for {@code nanos}. */
    void ran(long nanos) {
        long mean = meanRunNanos;
        meanRunNanos = Math.max(1, mean == 0 ? nanos : mean + (nanos - mean) / 8); // a lost update among threads only blurs the average
    }

    void take(int n) {
        busy.addAndGet(n);
    }

    void release(int n) {
        busy.addAndGet(-n);
    }

    /** How busy, from 0 to 1 (1 also while runs wait beyond the threads). */
    double load() {
        return Math.min(1.0, (double) busy.get() / size);
    }
}
