package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.Watchdog;

/**
 * What the {@link Runner}'s watchdog tells it: each step of a run's lease becomes an event (a lease
 * lost or renewed, a timeout), and each renewal round tells the {@link Outage} whether the store
 * answered. A lost lease and a timeout also interrupt the run's job, after its span has heard of
 * it (the job thread ends the span once the job stops). Apart from the Runner because it speaks
 * for the watchdog's threads, not the job threads; its methods must not block (see
 * {@link Watchdog.Listener}).
 */
final class LeaseEvents implements Watchdog.Listener<SlotRun> {
    private final Events events;
    private final Outage outage;

    LeaseEvents(Events events, Outage outage) {
        this.events = events;
        this.outage = outage;
    }

    @Override
    public void lost(Watchdog<SlotRun>.Watch watch, String reason) {
        SlotRun run = watch.lease();
        run.span.leaseLost(reason); // before the interrupt: the job thread ends the span once it stops
        run.interrupt();
        org.slf4j.spi.LoggingEventBuilder lost = events.warn("lease_lost").addKeyValue("job", run.definition.name())
                .addKeyValue("slot", run.lease.slot().toString()).addKeyValue("lock_name", run.lockName)
                .addKeyValue("action", "expire").addKeyValue("identifier", run.lease.token())
                .addKeyValue("fencing_token", run.fencingToken()).addKeyValue("success", false)
                .addKeyValue("reason", reason);
        if (!reason.startsWith("renewal refused")) {
            // How long ago the deadline passed (a stall, a GC pause, a host stopped, the watchdog late): the
            // lease ended in the store no sooner than then, which the audit weighs against a peer's rerun.
            lost.addKeyValue("deadline_passed_ms", watch.sinceDeadlineMillis());
        }
        run.span.tag(lost).log("lease lost; the job is interrupted and must stop");
        events.metrics().leaseLost(run.definition.name(), reason.startsWith("renewal refused") ? "revoked" : "expired");
    }

    @Override
    public void renewed(Watchdog<SlotRun>.Watch watch, long durationMs) {
        SlotRun run = watch.lease();
        events.debug("lease_renewed").addKeyValue("job", run.definition.name())
                .addKeyValue("slot", run.lease.slot().toString()).addKeyValue("lock_name", run.lockName)
                .addKeyValue("action", "renew").addKeyValue("identifier", run.lease.token())
                .addKeyValue("duration_ms", durationMs).addKeyValue("success", true).log("lease renewed");
    }

    @Override
    public void timedOut(Watchdog<SlotRun>.Watch watch) {
        SlotRun run = watch.lease();
        run.span.timedOut(run.definition.timeout().toMillis()); // before the interrupt, as for a lost lease
        run.interrupt();
        run.span.tag(events.warn("job_timed_out").addKeyValue("job", run.definition.name())
                .addKeyValue("slot", run.lease.slot().toString()).addKeyValue("fencing_token", run.fencingToken())
                .addKeyValue("attempt", run.attempt()).addKeyValue("timeout_ms", run.definition.timeout().toMillis()))
                .log("job ran past its timeout; interrupted");
    }

    @Override
    public void roundSucceeded() {
        outage.succeeded();
    }

    @Override
    public void roundFailed(LockException e) {
        outage.failed("renew", e);
    }
}
