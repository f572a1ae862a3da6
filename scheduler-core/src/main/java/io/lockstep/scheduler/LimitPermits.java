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
 * when it began to wait, and by that time in the queue); then it does not run, and is reported
 * {@code slot_missed} with code {@code limit} (a backfill's slot is handed back to its backfill
 * instead). Each permit is a lease renewed by the lock store's watchdog; a permit lost (renewals
 * refused, or none confirmed for a whole lease) interrupts the job, which is not retried, or keeps
 * it from beginning. The wait stops when the run's lease is lost or the worker stops (the slot is
 * handed back unstarted), checked before every try and once all permits are taken. A try repeated
 * after a lost reply finds the permit it took (one id per run). Used from the run's job thread.
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
        long began = now(run);
        // A scheduled slot waits by its time, until its grace ends; a manual run within a trigger's grace
        // of its request; the rest (reruns, catch-up, backfill: old slots) by when they began to wait,
        // for a grace from then, so that they do not go before every slot due now.
        long priority = scheduled || run.manual ? slot : began;
        long deadline = scheduled ? slot + grace
                : run.manual ? slot + Math.max(grace, JobDefinition.MANUAL_GRACE.toMillis()) : began + grace;
        // The same id on every try of this run (a repeat after a lost reply finds the permit it took);
        // between waiters of one instant, a hash of the job and the slot, so no job always goes last.
        String waiter = String.format("%013d:%08x:%s:%s", priority, (run.definition.name() + "@" + slot).hashCode(),
                run.definition.name(), run.lease.token());
        String holder = run.definition.name() + "@" + run.scheduledTime() + " on " + run.workerId();
        boolean said = false;
        try {
            for (Map.Entry<String, Integer> use : uses.entrySet()) {
                String limit = use.getKey();
                long poll = FIRST_POLL_MILLIS;
                while (true) {
                    if (stop.getAsBoolean()) {
                        return refused(held, limit, waiter, Refusal.STOPPED);
                    }
                    java.util.Optional<Permit> permit;
                    try {
                        permit = store.tryAcquire(limit, use.getValue(), waiter, priority, holder, run.definition.lease());
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
                                .addKeyValue("limit", limit).addKeyValue("size", use.getValue())
                                .addKeyValue("until", java.time.Instant.ofEpochMilli(deadline).toString())
                                .log("waiting for a permit of " + limit + " (" + use.getValue() + " at once in the cluster)");
                    }
                    long left = deadline - now(run);
                    if (left <= 0) {
                        // A backfill's slot is handed back instead (its backfill runs it again); any other is missed.
                        return refused(held, limit, waiter, run.backfill != null ? Refusal.STOPPED : Refusal.GRACE);
                    }
                    TimeUnit.MILLISECONDS.sleep(Math.min(left, ThreadLocalRandom.current().nextLong(poll / 2, poll + 1)));
                    poll = Math.min(MAX_POLL_MILLIS, poll * 2);
                }
            }
            if (stop.getAsBoolean()) { // its lease lost, a permit lost, or the worker stopping while it waited: not begun
                return refused(held, null, waiter, Refusal.STOPPED);
            }
            return new Taken(held, null, null);
        } catch (InterruptedException e) {
            refused(held, null, waiter, Refusal.STOPPED);
            throw e;
        } catch (RuntimeException e) { // the permits' watchdog closed (the store closing), a store's own bug: not begun
            events.warn("limit_failed").addKeyValue("job", run.definition.name()).addKeyValue("slot", run.scheduledTime().toString())
                    .addKeyValue("error", e.toString()).log("taking the run's permits failed; the slot is handed back: " + e);
            return refused(held, null, waiter, Refusal.STOPPED);
        }
    }

    /** Leaves the queues and gives back what was taken. */
    private Taken refused(List<Permit> held, String limit, String waiter, Refusal why) {
        for (String l : held.stream().map(Permit::limit).toList()) {
            leave(l, waiter);
        }
        if (limit != null) {
            leave(limit, waiter);
        }
        release(held);
        return new Taken(List.of(), why, limit);
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

    /**
     * A permit lost (renewals refused, or none confirmed for a whole lease): the limit may now be
     * exceeded, so the job is interrupted and not retried; before the job began, it does not begin.
     */
    private void lost(SlotRun run, Permit p) {
        run.permitLost = p.limit() + "#" + p.index();
        events.warn("permit_lost").addKeyValue("job", run.definition.name()).addKeyValue("slot", run.scheduledTime().toString())
                .addKeyValue("limit", p.limit()).addKeyValue("permit", p.index()).addKeyValue("fencing_token", p.fencingToken())
                .log("the run's permit of " + p.limit() + " is lost (renewals refused or unconfirmed); the job is interrupted");
        run.interrupt();
    }
}
