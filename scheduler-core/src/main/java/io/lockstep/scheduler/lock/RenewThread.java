package io.lockstep.scheduler.lock;

import java.util.ArrayList;
import java.util.List;

/**
 * The renew thread of a {@link Watchdog} ({@code <name>-renew}): sends each renewal round the
 * watchdog thread hands it, one at a time, and applies the answers (a confirmed renewal moves the
 * lease's deadline and its next renewal; a refused one declares the lease lost; a round that could
 * not reach the store is tried again soon, at most {@link Watchdog#RETRY_NANOS} later).
 *
 * <p>Why a thread of its own: a round can block for the client's whole timeout, and the watchdog
 * thread must still declare leases lost on time and run timeouts meanwhile.
 *
 * <p>All state here, and the watchdog's state it reads and writes (its watches, their renewal
 * times, {@code closed}), is guarded by the watchdog's monitor: one lock for both threads, so the
 * hand-over, the end of a round and the watchdog's waits are one protocol. The renewer and the
 * listener are called without it.
 *
 * @param <L> what is watched
 */
final class RenewThread<L> {

    /** The monitor, and the watches. */
    private final Watchdog<L> watchdog;
    private final Watchdog.Renewer<L> renewer;
    private final Watchdog.Listener<L> listener;
    /** The leases of the renewal round handed to the renew thread and not yet sent; guarded by the watchdog. */
    private List<Watchdog<L>.Watch> round;
    /** A renewal round is handed over or on the wire; guarded by the watchdog. */
    private boolean renewing;

    RenewThread(Watchdog<L> watchdog, Watchdog.Renewer<L> renewer, Watchdog.Listener<L> listener) {
        this.watchdog = watchdog;
        this.renewer = renewer;
        this.listener = listener;
    }

    /** Whether a round is handed over or on the wire; called holding the watchdog's monitor. */
    boolean busy() {
        return renewing;
    }

    /** Hands {@code due} to the renew thread and wakes it; called holding the watchdog's monitor, when not {@link #busy()}. */
    void handOver(List<Watchdog<L>.Watch> due) {
        renewing = true;
        round = due;
        watchdog.notifyAll(); // the renew thread
    }

    /** The renew thread: sends each round it is handed, one at a time, until the watchdog closes. */
    void run() {
        while (true) {
            List<Watchdog<L>.Watch> due;
            synchronized (watchdog) {
                while (round == null && !watchdog.closed) {
                    try {
                        watchdog.wait();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return;
                    }
                }
                if (watchdog.closed) {
                    return;
                }
                due = round;
                round = null;
            }
            try {
                renew(due);
            } catch (RuntimeException | Error e) {
                org.slf4j.LoggerFactory.getLogger(Watchdog.class).error("watchdog renewal round failed; continuing", e);
                synchronized (watchdog) {
                    for (Watchdog<L>.Watch w : due) {
                        w.nextRenewNanos = System.nanoTime() + Math.min(Watchdog.RETRY_NANOS, w.ttlNanos / 10);
                    }
                }
            } finally {
                synchronized (watchdog) {
                    renewing = false;
                    watchdog.notifyAll();
                }
            }
        }
    }

    /** One round: renews {@code due} in one call of the renewer, and applies the answers. */
    private void renew(List<Watchdog<L>.Watch> due) {
        List<L> leases = new ArrayList<>(due.size());
        for (Watchdog<L>.Watch w : due) {
            leases.add(w.lease());
        }
        long sent = System.nanoTime();
        List<Boolean> owned;
        try {
            owned = renewer.renew(leases);
            Watchdog.guard(listener::roundSucceeded);
        } catch (PartiallyConfirmed e) {
            // Some shards answered: apply their answers; the rest (null) are sent again soon, their
            // deadlines unchanged (a shard that cannot be reached costs only its own leases).
            Watchdog.guard(() -> listener.roundFailed(e));
            owned = e.answers();
        } catch (LockException e) {
            Watchdog.guard(() -> listener.roundFailed(e));
            synchronized (watchdog) {
                for (Watchdog<L>.Watch w : due) {
                    w.nextRenewNanos = sent + Math.min(Watchdog.RETRY_NANOS, w.ttlNanos / 10);
                }
            }
            return;
        }
        long durationMs = (System.nanoTime() - sent) / 1_000_000;
        List<Watchdog<L>.Watch> refused = new ArrayList<>();
        List<Watchdog<L>.Watch> confirmed = new ArrayList<>();
        synchronized (watchdog) {
            for (int i = 0; i < due.size(); i++) {
                Watchdog<L>.Watch w = due.get(i);
                if (!watchdog.watches.contains(w)) {
                    continue; // stopped while we were renewing
                }
                if (owned.get(i) == null) {
                    w.nextRenewNanos = sent + Math.min(Watchdog.RETRY_NANOS, w.ttlNanos / 10);
                } else if (owned.get(i)) {
                    w.renewed(sent);
                    w.nextRenewNanos = sent + w.ttlNanos / 3;
                    confirmed.add(w);
                } else {
                    watchdog.watches.remove(w);
                    refused.add(w);
                }
            }
        }
        for (Watchdog<L>.Watch w : confirmed) {
            Watchdog.guard(() -> listener.renewed(w, durationMs));
        }
        for (Watchdog<L>.Watch w : refused) {
            watchdog.declareLost(w, "renewal refused: the token no longer owns the lease");
        }
    }
}
