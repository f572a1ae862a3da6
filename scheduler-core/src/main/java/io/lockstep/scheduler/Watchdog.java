package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.LockProvider;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The one thread ({@code lockstep-watchdog}) that keeps every held lease alive: it renews, in one
 * batch per round, every lease due for renewal (each every ttl/3), and declares a lease lost when
 * the store refuses the renewal or when its deadline (send time of the last confirmed renewal plus
 * the ttl, on the monotonic clock) passes. A lost lease sets the run's flag, interrupts its thread,
 * logs {@code lease_lost} and stops renewing. It also enforces run timeouts. Thread-safe.
 */
final class Watchdog implements Runnable {

    /** How soon after a failed renewal the watchdog tries again. */
    private static final long RETRY_NANOS = 250_000_000L;

    private final LockProvider provider;
    private final Events events;
    private final Outage outage;
    private final Set<SlotRun> runs = new HashSet<>();
    private boolean stopped;
    private final Thread thread;

    Watchdog(LockProvider provider, Events events, Outage outage) {
        this.provider = provider;
        this.events = events;
        this.outage = outage;
        this.thread = new Thread(this, "lockstep-watchdog");
        this.thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    synchronized void add(SlotRun run) {
        runs.add(run);
        notifyAll();
    }

    synchronized void remove(SlotRun run) {
        runs.remove(run);
    }

    /**
     * Stops watching a run whose job has returned. A deadline that passed while nobody looked (the
     * whole process was paused, say) is still reported as {@code lease_lost} here, before the
     * outcome is decided.
     */
    synchronized void retire(SlotRun run) {
        boolean watched = runs.remove(run);
        if (watched && System.nanoTime() - run.deadlineNanos() >= 0) {
            lost(run, "lease deadline passed without a confirmed renewal");
        }
    }

    void stop() {
        synchronized (this) {
            stopped = true;
            notifyAll();
        }
        try {
            thread.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void run() {
        while (true) {
            List<SlotRun> due;
            synchronized (this) {
                if (stopped) {
                    return;
                }
                long now = System.nanoTime();
                long wake = Long.MAX_VALUE;
                due = new ArrayList<>();
                for (SlotRun run : new ArrayList<>(runs)) {
                    if (now - run.deadlineNanos() >= 0) {
                        runs.remove(run);
                        lost(run, "lease deadline passed without a confirmed renewal");
                        continue;
                    }
                    if (run.timeoutNanos != Long.MAX_VALUE && now - run.timeoutNanos >= 0 && !run.timedOut()) {
                        timedOut(run);
                    }
                    // Renew a little early so that leases due at nearly the same time share a round trip.
                    long slack = run.lease.ttl().toNanos() / 12;
                    if (run.nextRenewNanos - now <= slack) {
                        due.add(run);
                    } else {
                        wake = Math.min(wake, run.nextRenewNanos - slack);
                    }
                    wake = Math.min(wake, run.deadlineNanos());
                    if (!run.timedOut()) {
                        wake = Math.min(wake, run.timeoutNanos);
                    }
                }
                if (due.isEmpty()) {
                    try {
                        if (wake == Long.MAX_VALUE) {
                            wait();
                        } else {
                            long nanos = wake - now;
                            if (nanos > 0) {
                                wait(nanos / 1_000_000, (int) (nanos % 1_000_000));
                            }
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return;
                    }
                    continue;
                }
            }
            renew(due);
        }
    }

    private void renew(List<SlotRun> due) {
        List<Lease> leases = new ArrayList<>(due.size());
        for (SlotRun run : due) {
            leases.add(run.lease);
        }
        long sent = System.nanoTime();
        List<Boolean> owned;
        try {
            owned = provider.renew(leases);
            outage.succeeded();
        } catch (LockException e) {
            outage.failed("renew", e);
            synchronized (this) {
                for (SlotRun run : due) {
                    run.nextRenewNanos = sent + Math.min(RETRY_NANOS, run.lease.ttl().toNanos() / 10);
                }
            }
            return;
        }
        long durationMs = (System.nanoTime() - sent) / 1_000_000;
        synchronized (this) {
            for (int i = 0; i < due.size(); i++) {
                SlotRun run = due.get(i);
                if (!runs.contains(run)) {
                    continue; // finished while we were renewing
                }
                if (owned.get(i)) {
                    run.renewed(sent);
                    run.nextRenewNanos = sent + run.lease.ttl().toNanos() / 3;
                    events.debug("lease_renewed").addKeyValue("job", run.definition.name())
                            .addKeyValue("slot", run.lease.slot().toString()).addKeyValue("lock_name", run.lockName)
                            .addKeyValue("action", "renew").addKeyValue("identifier", run.lease.token())
                            .addKeyValue("duration_ms", durationMs).addKeyValue("success", true).log("lease renewed");
                } else {
                    runs.remove(run);
                    lost(run, "renewal refused: the token no longer owns the lease");
                }
            }
        }
    }

    private void lost(SlotRun run, String reason) {
        if (run.markLost(reason)) {
            events.warn("lease_lost").addKeyValue("job", run.definition.name())
                    .addKeyValue("slot", run.lease.slot().toString()).addKeyValue("lock_name", run.lockName)
                    .addKeyValue("action", "expire").addKeyValue("identifier", run.lease.token())
                    .addKeyValue("fencing_token", run.fencingToken()).addKeyValue("success", false)
                    .addKeyValue("reason", reason).log("lease lost; the job is interrupted and must stop");
        }
    }

    private void timedOut(SlotRun run) {
        run.markTimedOut();
        events.warn("job_timed_out").addKeyValue("job", run.definition.name())
                .addKeyValue("slot", run.lease.slot().toString()).addKeyValue("fencing_token", run.fencingToken())
                .addKeyValue("timeout_ms", run.definition.timeout().toMillis())
                .log("job ran past its timeout; interrupted");
    }
}
