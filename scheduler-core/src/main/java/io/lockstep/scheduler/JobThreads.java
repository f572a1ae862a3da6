package io.lockstep.scheduler;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * How many of this worker's job threads are taken: reserved by a claim in flight or running a job,
 * and how many runs claimed ahead wait in the pool's queue beyond them (the backlog).
 *
 * <p>A worker claims what its free threads can start now, and, for the slots it claims ahead of
 * their instant (the preferred claimer's own), also those a thread will take within
 * {@link #MAX_QUEUE_WAIT} of it ({@link #canQueue}): short runs free a thread in milliseconds, so a
 * worker of 8 threads whose share of an instant is 300 such runs claims them all in one round trip,
 * ahead, and the pool starts them as a plain executor would, instead of claiming 8 at a time, one
 * round trip after each run ends. The estimate goes by how long runs held a thread here (all jobs';
 * a job whose own runs take much longer than that is not queued), and only while threads keep
 * freeing up (threads held by runs that hang queue nothing). The wait is kept short because a run
 * claimed this way is recorded started in the store at its instant: a crash while it waits costs the
 * slot as a crash mid-run does (GUARANTEES 3); a run that still finds no thread within its grace is
 * handed back unstarted ({@code JobAttempts}), so a wrong estimate costs a peer's recovery, never a
 * silent slot. Only with the scheduler's own pool,
 * which queues what its threads cannot take: an application's executor (virtual threads, say) would
 * start every queued run at once, past {@code threads}. Thread-safe.
 */
final class JobThreads {

    /** A run claimed beyond the threads gets one within this much of its instant, by the estimate. */
    static final Duration MAX_QUEUE_WAIT = Duration.ofMillis(250);
    /** At most this many runs per thread wait beyond the threads, whatever the estimate. */
    static final int MAX_BACKLOG_PER_THREAD = 64;

    final int size;
    private final boolean queues;
    private final AtomicInteger busy = new AtomicInteger();
    /** Mean time a run held a job thread (nanos, an exponential average over about 8 runs); 0 before the first. */
    private volatile long meanRunNanos;
    /** The same per job: a slow job's runs are not queued on the strength of fast ones. */
    private final java.util.concurrent.ConcurrentHashMap<String, Long> meanByJob = new java.util.concurrent.ConcurrentHashMap<>();
    /** When a run last gave its thread back (monotonic nanos). */
    private volatile long lastRanNanos;

    /** {@code queues}: the pool queues the runs its threads cannot take yet (the scheduler's own pool). */
    JobThreads(int size, boolean queues) {
        this.size = size;
        this.queues = queues;
    }

    JobThreads(int size) {
        this(size, false);
    }

    /** Threads running a job or reserved, at most {@link #size} (the backlog beyond them is {@link #backlog}). */
    int busy() {
        return Math.min(size, busy.get());
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
     * Whether a run of {@code job} claimed ahead would get a thread within {@link #MAX_QUEUE_WAIT} of
     * its instant (and half its {@code grace}) with {@code ahead} runs already waiting beyond the
     * threads: by all jobs' mean time on a thread. False before the job ran here (nothing to go by),
     * for a job whose own mean is over four times that (and over a quarter of the bound), while every
     * thread is held and none freed up lately (runs that hang), and with a pool that does not queue.
     */
    boolean canQueue(String job, int ahead, Duration grace) {
        long mean = meanRunNanos;
        Long own = meanByJob.get(job);
        if (!queues || mean == 0 || own == null || ahead >= size * MAX_BACKLOG_PER_THREAD) {
            return false;
        }
        long bound = Math.min(MAX_QUEUE_WAIT.toNanos(), grace.toNanos() / 2);
        if (own > Math.max(4 * mean, bound / 4)) {
            return false; // a slow job: queued on the strength of the fast ones, it would hold up the queue
        }
        if (busy.get() >= size && System.nanoTime() - lastRanNanos > bound + mean) {
            return false; // every thread held, none freed lately: they may be stuck
        }
        return (ahead + 1.0) * mean / size <= bound;
    }

    /** A run of {@code job} began and held a job thread for {@code nanos} (runs that never began do not count). */
    void ran(String job, long nanos) {
        long mean = meanRunNanos;
        meanRunNanos = Math.max(1, mean == 0 ? nanos : mean + (nanos - mean) / 8); // a lost update among threads only blurs the average
        meanByJob.merge(job, Math.max(1, nanos), (m, n) -> Math.max(1, m + (n - m) / 8));
        lastRanNanos = System.nanoTime();
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
