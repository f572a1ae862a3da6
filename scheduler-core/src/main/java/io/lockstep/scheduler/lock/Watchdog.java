package io.lockstep.scheduler.lock;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * Keeps leases alive: renews, in one batch per round, every watched lease that is due (each every
 * ttl/3, a little early so that leases due at nearly the same time share a round trip), and
 * declares a lease lost when the store refuses the renewal or when its deadline passes.
 *
 * <p>The deadline is on the monotonic clock: the send time of the claim or of the last confirmed
 * renewal, plus the ttl less a drift allowance ({@link #validity}: 1 % of the ttl and 2 ms, as
 * Redlock allows for clock-rate differences). Since the store starts its ttl only when the command
 * arrives, our deadline always comes first, so a holder learns that its lease is gone before anyone
 * else can take it. Deadlines fire on time whatever the store does: renewal rounds run on a thread
 * of their own ({@code <name>-renew}), so a round blocked for the client's whole timeout never
 * delays the watchdog thread that declares leases lost and runs timeouts. An unexpected failure in
 * either thread is logged and the loop goes on. The renew thread's work (send a round, apply the
 * answers) is in {@link RenewThread}, the watchdog thread's (deadlines, timeouts, handing due
 * renewals over) in {@link WatchdogThread}; both threads share this watchdog's monitor.
 *
 * <p>The scheduler watches its runs with one; the standalone lock API watches its locks with
 * another. The thread starts with the first watch and is a daemon; {@link #close()} stops it.
 *
 * <p>Thread-safe. Listener methods are called on one of the watchdog's two threads (or on the
 * thread that calls {@link Watch#stop()}); they must not block.
 *
 * @param <L> what is watched, handed back to the renewer and the listener
 */
public final class Watchdog<L> implements AutoCloseable {

    /** How soon after a failed renewal round the watchdog tries again, at the most. */
    static final long RETRY_NANOS = 250_000_000L;
    /** The share of a ttl not counted on, for clock-rate differences between us and the store. */
    public static final double DRIFT_FACTOR = 0.01;
    /** Milliseconds not counted on beyond {@link #DRIFT_FACTOR}. */
    public static final long DRIFT_MILLIS = 2;

    /**
     * The part of a ttl a holder counts on: the ttl less {@link #DRIFT_FACTOR} of it and
     * {@link #DRIFT_MILLIS}, and never below zero.
     */
    public static Duration validity(Duration ttl) {
        long nanos = ttl.toNanos();
        long drift = (long) (nanos * DRIFT_FACTOR) + DRIFT_MILLIS * 1_000_000L;
        return Duration.ofNanos(Math.max(0, nanos - drift));
    }

    /**
     * Renews a batch of leases, each only if its token still owns it.
     *
     * @param <L> what is watched
     */
    @FunctionalInterface
    public interface Renewer<L> {
        /**
         * @return per lease, in order, whether it was still owned and is now extended
         * @throws LockException when the store could not be reached; the round is retried
         */
        List<Boolean> renew(List<L> leases);
    }

    /**
     * Hears what happens to watched leases.
     *
     * @param <L> what is watched
     */
    public interface Listener<L> {
        /** The lease is gone: renewal refused or its deadline passed. Called once per watch. */
        void lost(Watchdog<L>.Watch watch, String reason);

        /** A renewal was confirmed. */
        default void renewed(Watchdog<L>.Watch watch, long durationMs) {}

        /** The watch's timeout passed (see {@link Watch#timeoutAt(long)}). Called once. */
        default void timedOut(Watchdog<L>.Watch watch) {}

        /** A renewal round reached the store. */
        default void roundSucceeded() {}

        /** A renewal round could not reach the store. */
        default void roundFailed(LockException e) {}
    }

    /** One watched lease: its deadline, and whether it is lost. Thread-safe. */
    public final class Watch {
        private final L lease;
        final long ttlNanos;
        /** Guarded by the watchdog's monitor. */
        long nextRenewNanos;
        /** Read and (timedOut) set by the watchdog thread too ({@link WatchdogThread}). */
        volatile long deadlineNanos;
        volatile long timeoutNanos = Long.MAX_VALUE;
        private volatile String lostReason;
        volatile boolean timedOut;
        /** Whether the watchdog holds (renews) it; set before it is handed out. */
        private volatile boolean watched;

        /** {@link #validity} of the ttl: how long after a send the lease counts as ours. */
        private final long validNanos;

        private Watch(L lease, Duration ttl, long sentNanos) {
            this.lease = lease;
            this.ttlNanos = ttl.toNanos();
            this.validNanos = validity(ttl).toNanos();
            this.deadlineNanos = sentNanos + validNanos;
            this.nextRenewNanos = sentNanos + ttlNanos / 3;
        }

        public L lease() {
            return lease;
        }

        /** How long ago its deadline passed, in ms (0 while it has not): a stall's length past it. */
        public long sinceDeadlineMillis() {
            return Math.max(0, (System.nanoTime() - deadlineNanos) / 1_000_000);
        }

        /** Whether the lease is gone: declared lost, or its deadline passed. */
        public boolean isLost() {
            return lostReason != null || System.nanoTime() - deadlineNanos >= 0;
        }

        /** Why the lease was declared lost; empty while it is not (or only its deadline passed). */
        public java.util.Optional<String> lostReason() {
            return java.util.Optional.ofNullable(lostReason);
        }

        /** How long the lease is still ours for certain; zero once it is lost. */
        public Duration remaining() {
            if (lostReason != null) {
                return Duration.ZERO;
            }
            long left = deadlineNanos - System.nanoTime();
            return left > 0 ? Duration.ofNanos(left) : Duration.ZERO;
        }

        /** Monotonic nanos at which the lease may be gone unless a renewal is confirmed. */
        public long deadlineNanos() {
            return deadlineNanos;
        }

        /** A renewal sent at {@code sentNanos} (by the watchdog, or by hand) was confirmed. */
        public void renewed(long sentNanos) {
            deadlineNanos = Math.max(deadlineNanos, sentNanos + validNanos);
        }

        /**
         * Declares the lease lost and stops renewing it; the listener is not called (the caller
         * reports it).
         *
         * @return false when it was already declared lost
         */
        public boolean markLost(String reason) {
            synchronized (Watchdog.this) {
                if (lostReason != null) {
                    return false;
                }
                lostReason = Objects.requireNonNull(reason, "reason");
                watches.remove(this);
                return true;
            }
        }

        /** Asks the watchdog to call {@link Listener#timedOut} at {@code nanos} (monotonic). */
        public void timeoutAt(long nanos) {
            if (timeoutNanos == nanos) {
                return; // unchanged (a run without a timeout ending): no lock, no wake-up of the watchdog
            }
            synchronized (Watchdog.this) {
                timeoutNanos = nanos;
                Watchdog.this.notifyAll();
            }
        }

        /** Whether the timeout passed and was reported. */
        public boolean timedOut() {
            return timedOut;
        }

        /**
         * Stops watching. A deadline that passed while nobody looked (the whole process was
         * paused, say) is still reported to the listener as lost, here, before this returns.
         */
        public void stop() {
            if (!watched) {
                return; // a watch the watchdog never held (renewed by its holder): nothing to remove, no lock
            }
            boolean expired;
            synchronized (Watchdog.this) {
                boolean held = watches.remove(this);
                expired = held && lostReason == null && System.nanoTime() - deadlineNanos >= 0;
            }
            if (expired) {
                declareLost(this, "lease deadline passed without a confirmed renewal");
            }
        }
    }

    private final String threadName;
    private final Listener<L> listener;
    /** Guarded by {@code this}; the renew thread ({@link RenewThread}) reads and changes it too. */
    final Set<Watch> watches = new LinkedHashSet<>();
    private Thread thread;
    private Thread renewThread;
    /** The renew thread's work, and the round handed to it (its state guarded by {@code this}). */
    private final RenewThread<L> renewals;
    /** The watchdog thread's work: deadlines, timeouts, the hand-over of due renewals (its state guarded by {@code this}). */
    private final WatchdogThread<L> deadlines;
    /** Guarded by {@code this}; both threads stop when they read true. */
    boolean closed;

    /**
     * @param threadName the name of the watchdog thread, for example {@code lockstep-watchdog}
     */
    public Watchdog(String threadName, Renewer<L> renewer, Listener<L> listener) {
        this.threadName = Objects.requireNonNull(threadName, "threadName");
        Objects.requireNonNull(renewer, "renewer");
        this.listener = Objects.requireNonNull(listener, "listener");
        this.renewals = new RenewThread<>(this, renewer, listener);
        this.deadlines = new WatchdogThread<>(this, listener, renewals);
    }

    /**
     * Starts watching a lease whose claim was sent at {@code sentNanos}.
     *
     * @param renew whether the watchdog renews it (and tells the listener when it is lost); when
     *     false the watch only keeps the deadline, renewals are the holder's business (see
     *     {@link Watch#renewed}) and the thread never sees it
     * @throws IllegalStateException when the watchdog is closed
     */
    public Watch watch(L lease, Duration ttl, long sentNanos, boolean renew) {
        Watch w = new Watch(Objects.requireNonNull(lease, "lease"), ttl, sentNanos);
        if (!renew) {
            return w;
        }
        synchronized (this) {
            if (closed) {
                throw new IllegalStateException("watchdog " + threadName + " is closed");
            }
            w.watched = true;
            watches.add(w);
            if (thread == null) {
                thread = new Thread(deadlines::run, threadName);
                thread.setDaemon(true);
                thread.start();
                renewThread = new Thread(renewals::run, threadName + "-renew");
                renewThread.setDaemon(true);
                renewThread.start();
            }
            deadlines.wakeFor(w);
        }
        return w;
    }

    /** How many leases are watched now. */
    public synchronized int size() {
        return watches.size();
    }

    /** Stops the thread; watched leases are no longer renewed. Idempotent. */
    @Override
    public void close() {
        List<Thread> threads = new ArrayList<>();
        synchronized (this) {
            closed = true;
            watches.clear();
            notifyAll();
            if (thread != null) {
                threads.add(thread);
                threads.add(renewThread);
            }
        }
        for (Thread t : threads) {
            if (t != Thread.currentThread()) {
                try {
                    t.join(5_000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    /** Marks {@code w} lost and tells the listener, once; called without the monitor. */
    void declareLost(Watch w, String reason) {
        if (w.markLost(reason)) {
            guard(() -> listener.lost(w, reason));
        }
    }

    /** A listener that throws must not stop the watchdog. */
    static void guard(Runnable callback) {
        try {
            callback.run();
        } catch (RuntimeException e) {
            org.slf4j.LoggerFactory.getLogger(Watchdog.class).error("watchdog listener failed", e);
        }
    }
}
