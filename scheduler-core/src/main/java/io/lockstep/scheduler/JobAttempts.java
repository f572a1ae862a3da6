package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.Outcome;
import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.slf4j.event.Level;

/**
 * What happens to one claimed run on its job thread, for {@link Runner}: whether it may begin at
 * all (its lease gone before a thread took it, or its worker held it up past its turn), then the
 * job inside the run's span, again after a failure while its retry policy allows, each attempt
 * under the job's timeout, every step an event, and the {@link Outcome} it ends with.
 *
 * <p>Apart from the Runner because that is the run's own story, told on the job thread from its
 * first attempt to its last; the Runner only hands runs to job threads, takes them back (the
 * watch, the thread, the outcome to the {@link Completer}) and drains them at a stop. Called on
 * job threads, one run each; it keeps no state of its own.
 */
final class JobAttempts {

    /**
     * How long after its turn a run of a job whose runs may overlap can still begin: its turn is the
     * store's decision of its slot, or the job's next slot if that is later. Below the audit's
     * default {@code --tolerance} (100 ms), with room for the few milliseconds a reading of the
     * store's clock may be off.
     */
    static final Duration IN_ORDER_WITHIN = Duration.ofMillis(75);

    private final ClusterClock clock;
    private final Events events;
    private final RunTracer tracer;
    /** Whether the worker is stopping: a failure then is an interrupt by the stop, not the job's. */
    private final BooleanSupplier shuttingDown;

    /** The permits of the limits jobs use ({@code uses:}); null when the store keeps none. */
    private final LimitPermits limits;

    JobAttempts(ClusterClock clock, Events events, RunTracer tracer, BooleanSupplier shuttingDown, LimitPermits limits) {
        this.limits = limits;
        this.clock = clock;
        this.events = events;
        this.tracer = tracer;
        this.shuttingDown = shuttingDown;
    }

    /**
     * Runs {@code run}'s job (its attempts) unless it may not begin: its lease gone before the job
     * could start ({@link Outcome#NOT_STARTED}: handed back unstarted), or held up past its turn
     * ({@link Outcome#MISSED}). On its job thread; the Runner keeps the lease watched until the
     * outcome is written.
     */
    Outcome run(SlotRun run) {
        JobDefinition def = run.definition;
        String slot = run.scheduledTime().toString();
        if (run.isLeaseLost()) {
            // Told it is lost, or its deadline passed before a job thread took it: do not start it,
            // and hand it back unstarted (a peer runs it). (When the watchdog already reported it,
            // markLost answers false and we stay quiet.)
            if (run.markLost("lease gone before the job could start")) {
                events.warn("lease_lost").addKeyValue("job", def.name()).addKeyValue("slot", slot)
                        .addKeyValue("lock_name", run.lockName).addKeyValue("action", "expire")
                        .addKeyValue("identifier", run.lease.token()).addKeyValue("success", false)
                        .addKeyValue("reason", "lease gone before the job could start").log("lease lost before start; job not started");
                events.metrics().leaseLost(def.name(), "before_start");
            }
            return Outcome.NOT_STARTED;
        } else if (run.graceEndsNanos != Long.MAX_VALUE && System.nanoTime() - run.graceEndsNanos > 0) {
            // Claimed ahead and queued for a thread (JobThreads#canQueue), which came only after the slot's
            // grace: it does not start, and goes back unstarted, as a staged run the worker held past its
            // grace does (Starter): the recovery that finds it, a peer's or ours, records and reports it missed.
            events.debug("slot_start_refused").addKeyValue("job", def.name()).addKeyValue("slot", slot)
                    .addKeyValue("lock_name", run.lockName)
                    .log("no job thread before the slot's misfireGrace ended; handed back unstarted (reported missed by its recovery)");
            return Outcome.NOT_STARTED;
        } else if (heldUpPastItsTurn(run, slot)) {
            return Outcome.MISSED;
        } else if (!def.uses().isEmpty()) {
            return withPermits(run, def, slot);
        } else {
            return traced(run, def, slot);
        }
    }

    /**
     * The run of a job that uses limits: a permit of each first ({@link LimitPermits}), waiting
     * within the slot's grace. None in time: the slot is closed {@link Outcome#MISSED} and reported
     * {@code slot_missed} (code {@code limit}) by the completer once the store closed it. The wait cut
     * short by a lost lease or the worker's stop: handed back unstarted, for a peer to run (it waits
     * for a permit there in turn). The permits go back when the job ends, before its outcome is written.
     */
    private Outcome withPermits(SlotRun run, JobDefinition def, String slot) {
        if (limits == null) { // refused when the scheduler was built; a store that lost them since
            run.missCode = "limit";
            run.lastError = "the lock store keeps no limits";
            return Outcome.MISSED;
        }
        LimitPermits.Taken taken;
        try {
            taken = limits.take(run, () -> run.isLeaseLost() || shuttingDown.getAsBoolean() || run.permitLost != null);
        } catch (InterruptedException e) {
            return Outcome.NOT_STARTED; // the worker stops: handed back
        }
        if (taken.refusal() == LimitPermits.Refusal.STOPPED) {
            return Outcome.NOT_STARTED;
        }
        if (taken.refusal() == LimitPermits.Refusal.GRACE) {
            run.missCode = "limit";
            run.lastError = "no permit of the limit " + taken.limit() + " (" + def.uses().get(taken.limit())
                    + " at once in the cluster) came within the slot's grace";
            return Outcome.MISSED;
        }
        if (heldUpPastItsTurn(run, slot)) { // an overlap: allow job's wait took it past its next slot: guarantee 10
            limits.release(taken.permits());
            return Outcome.MISSED;
        }
        run.permits = taken.permits();
        try {
            return traced(run, def, slot);
        } finally {
            limits.release(taken.permits());
            run.permits = java.util.List.of();
        }
    }

    /**
     * Guarantee 10 (in order) for a job whose runs may overlap ({@code overlap: allow}), where the
     * job's lease does not keep a later slot out while this run holds its claim. The store decided
     * this slot before any later slot of the job started (it refuses an older slot after a newer one
     * started), and no later slot starts before its own time by the store's clock; so a run that
     * begins within {@link #IN_ORDER_WITHIN} of the later of its decision and the job's next slot
     * begins in order. One whose worker was held up longer between the decision and the start (a
     * stall, a starved CPU, a full pool) may begin after a later slot's run began on a peer: it is
     * not started, and reported {@code slot_missed} (code {@code order}) by this worker, its claim
     * closed as {@link Outcome#MISSED} (never handed to a peer, which would run it later still).
     * Reruns and manual runs are outside the order; later attempts follow a first that began.
     * Jobs with one lease ({@code skip}, {@code replace}) need no such check: a later slot cannot
     * start while this claim holds the lease, or revokes it (the watchdog then stops the run).
     */
    private boolean heldUpPastItsTurn(SlotRun run, String slot) {
        JobDefinition def = run.definition;
        SlotRun.StoreReading r = run.storeReading();
        if (def.exclusive() || run.manual || run.recovered || run.attempt() > 1 || r == null) {
            return false;
        }
        // What this worker held the run for since the reply (a stall, a starved CPU, a full pool),
        // on top of the store's reading: the network's share of the round trip is not counted (a
        // slow store or network is the known limit of guarantee 10, as GUARANTEES says).
        long heldUp = (System.nanoTime() - r.receivedNanos()) / 1_000_000;
        long storeNow = run.storeNowMillis(System.nanoTime(), () -> 0L);
        long next = def.schedule().next(run.scheduledTime()).map(java.time.Instant::toEpochMilli).orElse(Long.MAX_VALUE);
        long turn = Math.max(next, r.decidedMillis());
        if (turn == Long.MAX_VALUE || storeNow - turn <= IN_ORDER_WITHIN.toMillis()) {
            return false;
        }
        // Reported by the completer once the store has closed the claim (a claim that is no longer
        // ours by then is a peer's to rerun or abandon, and reported there).
        run.lastError = "its run could not begin in order: " + (r.decidedMillis() < r.micros() / 1_000
                ? "its claim was answered " + (r.micros() / 1_000 - r.decidedMillis()) + " ms after it was first asked (a lost reply), and "
                : "") + "this worker held it " + heldUp + " ms between the store's answer and the start; a later slot of the job may "
                + "have started meanwhile";
        return true;
    }

    /**
     * {@link #runJob} inside the run's span: the job's own spans nest under it, and the span ends
     * with the outcome (a tracer that fails to start a span never fails the run: it is reported and the run goes on untraced).
     */
    private Outcome traced(SlotRun run, JobDefinition def, String slot) {
        try {
            run.span = tracer.start(run);
        } catch (RuntimeException | LinkageError e) {
            events.warn("trace_failed").addKeyValue("job", def.name()).addKeyValue("slot", slot)
                    .addKeyValue("error", Events.describe(e)).log("could not start the run's span; running it untraced");
        }
        Outcome outcome = Outcome.INTERRUPTED;
        try (RunSpan.Scope scope = run.span.enter()) {
            outcome = runJob(run, def, slot);
        } finally {
            run.span.end(outcome, run.attempt(), run.lastFailure);
        }
        return outcome;
    }

    /** How late the run starts now, by the store's clock as the run's own replies read it (ms). */
    private long lateness(SlotRun run) {
        return run.storeNowMillis(System.nanoTime(), () -> clock.now().toEpochMilli()) - run.scheduledTime().toEpochMilli();
    }

    /** Runs the job, and again after a failure while its retry policy allows, within the same claim. */
    private Outcome runJob(SlotRun run, JobDefinition def, String slot) {
        Retry retry = def.retry();
        while (true) {
            long startedNanos = System.nanoTime();
            if (run.firstStartNanos == 0) {
                run.firstStartNanos = startedNanos;
            }
            if (def.timeout().compareTo(Duration.ZERO) > 0) {
                run.watch().timeoutAt(startedNanos + def.timeout().toNanos());
            }
            var started = events.info("job_started").addKeyValue("job", def.name()).addKeyValue("slot", slot)
                    .addKeyValue("fencing_token", run.fencingToken()).addKeyValue("attempt", run.attempt())
                    .addKeyValue("lateness_ms", lateness(run));
            // Flags audit reads: a rerun follows slot_recovered; a catch-up may start past misfireGrace.
            started = run.manual ? started.addKeyValue("manual", true) : started;
            started = run.recovered ? started.addKeyValue("rerun", true) : started;
            started = run.catchUp ? started.addKeyValue("catch_up", true) : started;
            started = run.backfill != null ? started.addKeyValue("origin", "backfill").addKeyValue("backfill", run.backfill) : started;
            started = run.permits.isEmpty() ? started : started.addKeyValue("permits", run.permits.stream().map(Object::toString).toList());
            run.span.tag(started).log("job started");
            events.metrics().started(def.name(), Duration.ofMillis(lateness(run)));
            run.attach(Thread.currentThread());
            Throwable failure = null;
            try {
                run.job.execute(run);
            } catch (Throwable t) {
                failure = t;
                if (t instanceof InterruptedException) {
                    Thread.currentThread().interrupt();
                }
            }
            if (run.isLeaseLost()) {
                run.watch().stop(); // reports a deadline that passed while nobody looked, before the outcome
            }
            long durationMs = (System.nanoTime() - startedNanos) / 1_000_000;
            run.lastError = failure == null ? "" : Events.describe(failure);
            run.lastFailure = failure;
            if (run.timedOut()) {
                return Outcome.TIMED_OUT; // job_timed_out was logged when the watchdog interrupted it
            }
            if (failure == null) {
                run.span.tag(events.info("job_succeeded").addKeyValue("job", def.name()).addKeyValue("slot", slot)
                        .addKeyValue("fencing_token", run.fencingToken()).addKeyValue("attempt", run.attempt())
                        .addKeyValue("duration_ms", durationMs)).log("job succeeded");
                // Succeeded, even if its lease ran out meanwhile: the record says what the event says. If a
                // peer took the slot over, the record is no longer ours and this outcome is refused.
                return Outcome.SUCCEEDED;
            }
            // A failure that will be retried within the claim is a WARN; the one that ends the run an ERROR.
            boolean stopped = shuttingDown.getAsBoolean() && (failure instanceof InterruptedException || Thread.currentThread().isInterrupted());
            boolean willRetry = !run.isLeaseLost() && !stopped && run.permitLost == null && run.attempt() < retry.maxAttempts();
            // Cut off by this worker's stop under recover: rerun, the run is handed over to a peer, which
            // runs it again (from its checkpoint): an orderly hand-over, not an error.
            boolean handOver = stopped && !run.isLeaseLost() && def.recover() == Recover.RERUN;
            var event = run.span.tag(events.at(willRetry || handOver ? Level.WARN : Level.ERROR, "job_failed").addKeyValue("job", def.name())
                    .addKeyValue("slot", slot).addKeyValue("fencing_token", run.fencingToken()).addKeyValue("attempt", run.attempt())
                    .addKeyValue("duration_ms", durationMs).addKeyValue("error", Events.describe(failure)));
            if (run.isLeaseLost()) {
                event.addKeyValue("reason", "lease lost").log("job failed after its lease was lost");
                return Outcome.LEASE_LOST;
            }
            if (stopped) {
                if (handOver) {
                    event.addKeyValue("handed_over", true);
                }
                event.addKeyValue("reason", "interrupted by shutdown").log(handOver
                        ? "job interrupted by shutdown; handed over to a peer, which runs it again (recover: rerun)"
                        : "job interrupted by shutdown");
                return Outcome.INTERRUPTED;
            }
            if (run.attempt() >= retry.maxAttempts()) {
                event.addKeyValue("will_retry", false).setCause(failure).log("job failed");
                return Outcome.FAILED;
            }
            Duration delay = retry.delayAfter(run.attempt());
            event.addKeyValue("will_retry", true).addKeyValue("retry_in_ms", delay.toMillis()).setCause(failure)
                    .log("job failed; retrying within the same claim");
            run.span.retry(run.attempt(), delay.toMillis(), failure);
            run.detach();
            if (!backoff(run, delay)) {
                return run.isLeaseLost() ? Outcome.LEASE_LOST : Outcome.INTERRUPTED;
            }
            run.nextAttempt();
        }
    }

    /**
     * Waits between attempts while the watchdog keeps the lease.
     *
     * @return false when the lease was lost or the thread interrupted (shutdown) meanwhile
     */
    private static boolean backoff(SlotRun run, Duration delay) {
        run.attach(Thread.currentThread());
        long end = System.nanoTime() + delay.toNanos();
        long left;
        while ((left = end - System.nanoTime()) > 0) {
            if (run.isLeaseLost() || Thread.currentThread().isInterrupted()) {
                return false;
            }
            LockSupport.parkNanos(left);
        }
        return !run.isLeaseLost() && !Thread.currentThread().isInterrupted();
    }
}
