package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.Permits;
import io.lockstep.scheduler.lock.Permits.Permit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * The permits of the cluster-wide limits a run's job uses ({@code uses:}), taken on its job thread
 * before the job begins and given back when it ends. A run takes a permit of each limit in name
 * order (so two jobs using the same two limits cannot each hold one and wait for the other),
 * waiting in each limit's queue by its slot's time: a permit goes to the earliest slot waiting. It
 * waits at most until its slot's grace ends (slot + {@code misfireGrace} by the store's clock; for
 * a manual run, a rerun, a catch-up or a backfill, whose slot is past, {@code misfireGrace} from
 * when it began to wait); then it does not run, and is reported {@code slot_missed} with code
 * {@code limit}. Each permit is a lease renewed with the run; a permit lost while the job runs
 * (renewals refused, or none confirmed for a whole lease) interrupts it, as a lost lease does.
 * Used from the run's job thread.
 */
final class LimitPermits {

    /** The first wait between two tries, doubling up to {@link #MAX_POLL_MILLIS} (with jitter). */
    private static final long FIRST_POLL_MILLIS = 20;
    /** Well within the time a waiter stays queued without trying (2 s). */
    private static final long MAX_POLL_MILLIS = 250;

    private final Permits store;
    private final Events events;
    private final ClusterClock clock;

    LimitPermits(Permits store, Events events, ClusterClock clock) {
        this.store = store;
        this.events = events;
        this.clock = clock;
    }

    /** Why a run got no permits. */
    enum Refusal {
        /** Its grace ended first: reported missed (code {@code limit}). */
        GRACE,
        /** Its lease was lost, or the worker stops: handed back unstarted. */
        STOPPED
    }

    /** What {@link #take} came to: the permits, or why none. */
    record Taken(List<Permit> permits, Refusal refusal, String limit) {}

    /**
     * Takes a permit of each limit {@code run}'s job uses.
     *
     * @param stop whether to stop waiting (the lease lost, the worker stopping)
     */
    Taken take(SlotRun run, BooleanSupplier stop) throws InterruptedException {
        Map<String, Integer> uses = run.definition.uses();
        List<Permit> held = new ArrayList<>();
        if (uses.isEmpty()) {
            return new Taken(held, null, null);
        }
        long slot = run.scheduledTime().toEpochMilli();
        long grace = run.definition.misfireGrace().toMillis();
        boolean scheduled = !run.manual && !run.recovered && !run.catchUp && run.backfill == null;
        long deadline = scheduled ? slot + grace : now(run) + grace;
        String waiter = slot + ":" + run.definition.name() + ":" + run.lease.token();
        String holder = run.definition.name() + "@" + run.scheduledTime() + " on " + run.workerId();
        boolean said = false;
        for (Map.Entry<String, Integer> use : uses.entrySet()) {
            String limit = use.getKey();
            long poll = FIRST_POLL_MILLIS;
            while (true) {
                java.util.Optional<Permit> permit;
                try {
                    permit = store.tryAcquire(limit, use.getValue(), waiter, slot, holder, run.definition.lease());
                } catch (LockException e) {
                    permit = java.util.Optional.empty(); // the store does not answer: try again within the grace
                }
                if (permit.isPresent()) {
                    Permit p = permit.get();
                    held.add(p);
                    p.watch(() -> lost(run, p));
                    break;
                }
                if (!said) {
                    said = true;
                    events.info("limit_waiting").addKeyValue("job", run.definition.name()).addKeyValue("slot", run.scheduledTime().toString())
                            .addKeyValue("limit", limit).addKeyValue("size", use.getValue()).addKeyValue("until", java.time.Instant.ofEpochMilli(deadline).toString())
                            .log("waiting for a permit of " + limit + " (" + use.getValue() + " at once in the cluster)");
                }
                long left = deadline - now(run);
                Refusal refusal = stop.getAsBoolean() ? Refusal.STOPPED : left <= 0 ? Refusal.GRACE : null;
                if (refusal != null) {
                    leave(limit, waiter);
                    release(held);
                    return new Taken(List.of(), refusal, limit);
                }
                try {
                    TimeUnit.MILLISECONDS.sleep(Math.min(left, ThreadLocalRandom.current().nextLong(poll / 2, poll + 1)));
                } catch (InterruptedException e) {
                    leave(limit, waiter);
                    release(held);
                    throw e;
                }
                poll = Math.min(MAX_POLL_MILLIS, poll * 2);
            }
        }
        return new Taken(held, null, null);
    }

    private long now(SlotRun run) {
        return run.storeNowMillis(System.nanoTime(), () -> clock.now().toEpochMilli());
    }

    private void leave(String limit, String waiter) {
        try {
            store.leave(limit, waiter);
        } catch (RuntimeException e) {
            // it leaves the queue by itself within a couple of seconds
        }
    }

    /** Gives the permits back (the job ended, or it never began); one that cannot be is left to run out. */
    void release(List<Permit> permits) {
        for (Permit p : permits) {
            try {
                p.release();
            } catch (RuntimeException e) {
                events.debug("limit_release_failed").addKeyValue("limit", p.limit()).addKeyValue("error", e.toString())
                        .log("giving back a permit failed; it runs out after its lease");
            }
        }
    }

    /** A permit lost while the job runs: the limit may now be exceeded, so the job is interrupted. */
    private void lost(SlotRun run, Permit p) {
        events.warn("permit_lost").addKeyValue("job", run.definition.name()).addKeyValue("slot", run.scheduledTime().toString())
                .addKeyValue("limit", p.limit()).addKeyValue("permit", p.index()).addKeyValue("fencing_token", p.fencingToken())
                .log("the run's permit of " + p.limit() + " is lost (renewals refused or unconfirmed); the job is interrupted");
        run.interrupt();
    }
}
