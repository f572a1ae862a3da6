package io.lockstep.scheduler.lock;

import java.util.ArrayList;
import java.util.List;

/**
 * The watchdog thread of a {@link Watchdog} ({@code <name>}): in each pass over the watches it
 * declares the leases whose deadline passed lost, reports the timeouts that passed, and hands the
 * leases due for renewal to the renew thread ({@link RenewThread}) when no round is on the wire;
 * then it sleeps until the next of these, or until a new watch is due before it ({@link #wakeFor}).
 *
 * <p>Apart from the Watchdog for the reason RenewThread is: the Watchdog is what its users see
 * (watch a lease, stop, close, the {@link Watchdog.Watch} they hold), this is one of the two threads
 * behind it, and the one that must keep time whatever the store does: it never calls the renewer,
 * so deadlines and timeouts fire on time while a round blocks for the client's whole timeout.
 *
 * <p>All state here, and the watchdog's state it reads and writes (its watches, their deadlines,
 * timeouts and renewal times, {@code closed}), is guarded by the watchdog's monitor, the one lock
 * both threads share. The listener is called without it.
 *
 * @param <L> what is watched
 */
final class WatchdogThread<L> {

    /** The monitor, and the watches. */
    private final Watchdog<L> watchdog;
    private final Watchdog.Listener<L> listener;
    /** The renew thread's work: whether a round is on the wire, and the hand-over of the next. */
    private final RenewThread<L> renewals;
    /**
     * Guarded by the watchdog: until when this thread sleeps ({@code Long.MAX_VALUE}: until woken),
     * {@code Long.MIN_VALUE} while it is not asleep (it looks at every watch before it sleeps
     * again). A new watch wakes it only when it is due before that: starting a few hundred runs at
     * one instant must not wake it (and make it scan every watch) a few hundred times.
     */
    private long sleepingUntilNanos = Long.MIN_VALUE;

    WatchdogThread(Watchdog<L> watchdog, Watchdog.Listener<L> listener, RenewThread<L> renewals) {
        this.watchdog = watchdog;
        this.listener = listener;
        this.renewals = renewals;
    }

    /**
     * A new watch {@code w}: wakes this thread if it sleeps past the moment {@code w} is due (its
     * renewal, or its deadline). Called holding the watchdog's monitor.
     */
    void wakeFor(Watchdog<L>.Watch w) {
        long due = Math.min(w.nextRenewNanos - w.ttlNanos / 12, w.deadlineNanos);
        if (sleepingUntilNanos != Long.MIN_VALUE && (sleepingUntilNanos == Long.MAX_VALUE || due - sleepingUntilNanos < 0)) {
            watchdog.notifyAll();
        }
    }

    /** The watchdog thread: one {@link #round} after another until the watchdog closes. */
    void run() {
        while (true) {
            try {
                if (!round()) {
                    return;
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (RuntimeException | Error e) {
                org.slf4j.LoggerFactory.getLogger(Watchdog.class).error("watchdog round failed; continuing", e);
                java.util.concurrent.locks.LockSupport.parkNanos(Watchdog.RETRY_NANOS / 5);
            }
        }
    }

    /**
     * One pass of the watchdog thread: declares the leases whose deadline passed lost, reports
     * timeouts, and hands the leases due for renewal to the renew thread (when no round is on the
     * wire); or waits until the next of these.
     *
     * @return false once closed
     */
    private boolean round() throws InterruptedException {
        List<Watchdog<L>.Watch> expired = new ArrayList<>();
        List<Watchdog<L>.Watch> timedOut = new ArrayList<>();
        synchronized (watchdog) {
            if (watchdog.closed) {
                return false;
            }
            long now = System.nanoTime();
            long wake = Long.MAX_VALUE;
            List<Watchdog<L>.Watch> due = new ArrayList<>();
            for (Watchdog<L>.Watch w : watchdog.watches) {
                if (now - w.deadlineNanos >= 0) {
                    expired.add(w);
                    continue;
                }
                if (!w.timedOut && now - w.timeoutNanos >= 0 && w.timeoutNanos != Long.MAX_VALUE) {
                    w.timedOut = true;
                    timedOut.add(w);
                }
                long slack = w.ttlNanos / 12;
                if (renewals.busy()) {
                    // A round is on the wire: renewals wait for it to end (it notifies).
                } else if (w.nextRenewNanos - now <= slack) {
                    due.add(w);
                } else {
                    wake = Math.min(wake, w.nextRenewNanos - slack);
                }
                wake = Math.min(wake, w.deadlineNanos);
                if (!w.timedOut && w.timeoutNanos != Long.MAX_VALUE) {
                    wake = Math.min(wake, w.timeoutNanos);
                }
            }
            watchdog.watches.removeAll(expired);
            if (!due.isEmpty() && !renewals.busy()) {
                renewals.handOver(due); // and wakes the renew thread
            }
            if (expired.isEmpty() && timedOut.isEmpty()) {
                // While a round is on the wire, its leases are not due again: wait for deadlines,
                // timeouts, or the end of the round (which notifies).
                try {
                    if (wake == Long.MAX_VALUE) {
                        sleepingUntilNanos = wake;
                        watchdog.wait();
                    } else if (wake - now > 0) {
                        sleepingUntilNanos = wake;
                        long nanos = wake - now;
                        watchdog.wait(nanos / 1_000_000, (int) (nanos % 1_000_000));
                    }
                } finally {
                    sleepingUntilNanos = Long.MIN_VALUE;
                }
                return true;
            }
        }
        for (Watchdog<L>.Watch w : expired) {
            watchdog.declareLost(w, "lease deadline passed without a confirmed renewal");
        }
        for (Watchdog<L>.Watch w : timedOut) {
            Watchdog.guard(() -> listener.timedOut(w));
        }
        return true;
    }
}
