package io.lockstep.worker.audit;

import io.lockstep.scheduler.JobDefinition;
import io.lockstep.worker.audit.Ev.Type;
import io.lockstep.worker.audit.Ledger.Life;
import java.time.Instant;
import java.util.Comparator;
import java.util.List;
import java.util.Set;

/**
 * The checks that read a run's lease, apart from {@link Checks}' bookkeeping of runs and tokens: whether the lease of
 * the run before a rerun had ended when the rerun was decided (else "second-run"), and whether a run told its lease
 * was lost stopped within the stop allowance ("lease-stop"). Both weigh the same evidence (lease_lost, hand-overs,
 * outcomes, a vanished worker) against a lease's end, each by the clock it is kept by: the store's for the handover,
 * the worker's own for the stop.
 */
final class LeaseChecks {

    private static final Set<String> HANDED_OVER = Set.of("lease_lost", "interrupted", "not_started");

    private final Lives lives;
    private final AuditReport report;
    private final long tolerance, stopAllowance;

    LeaseChecks(Lives lives, AuditReport report, long tolerance, long stopAllowance) {
        this.lives = lives;
        this.report = report;
        this.tolerance = tolerance;
        this.stopAllowance = stopAllowance;
    }

    /**
     * Null when the log shows that run {@code prev}'s lease had ended, by Redis time, when the rerun was decided
     * ({@code decidedAt}); else why not. The lease taken at its start ends no sooner than start + lease, so a lease
     * that expired (a deadline {@code lease_lost}, a failure for it, {@code outcome_unrecorded}, its worker vanished) ends
     * no sooner than that. An explicit hand-over (a release accepted with a handing-over outcome, a failure
     * {@code interrupted by shutdown}) ends it at once. Only evidence logged by {@code decidedAt} (through its worker's
     * clock offset, within the tolerance) counts, and a deadline {@code lease_lost} logged later whose
     * {@code deadline_passed_ms} puts its deadline by then (a holder stalled past its lease logs it on waking): a
     * {@code lease_lost} "renewal refused", a release refused,
     * {@code outcome_late}, and any lease loss logged after the rerun was decided follow any takeover, a wrongful one too.
     */
    String held(JobDefinition def, Checks.Run prev, List<Ev> events, long decidedAt) {
        long leaseEnd = prev.start() == Ev.NONE ? Long.MIN_VALUE : prev.start() + lives.runDef(def, prev.started(), prev.slot()).lease().toMillis();
        boolean expired = decidedAt >= leaseEnd - tolerance;
        String seen = null;
        for (Ev e : events) {
            boolean same = e.token() == prev.token() || (e.token() == Ev.NONE && e.worker().equals(prev.started().worker()));
            boolean loss = switch (e.type()) {
                case LEASE_LOST, OUTCOME_UNRECORDED -> true;
                case SLOT_RELEASED -> HANDED_OVER.contains(e.text());
                case JOB_FAILED -> e.text() != null && (e.text().startsWith("lease lost") || e.text().startsWith("interrupted"));
                default -> false;
            };
            if (!same || !loss) {
                continue;
            }
            long at = lives.cluster(e);
            if (e.type() == Type.LEASE_LOST && e.lateness() != Ev.NONE && at - e.lateness() <= decidedAt + tolerance && expired) {
                // Logged late, but its holder's own deadline had passed by the decision (deadline_passed_ms: it was
                // stalled, SIGSTOPped, paused by GC): the holder's deadline comes before the store's expiry, and
                // the lease taken at its start had run out too.
                return null;
            }
            if (at > decidedAt + tolerance) {
                seen = e.type().label + (e.text() == null ? "" : " (" + e.text() + ")") + " was logged only at " + Instant.ofEpochMilli(at)
                        + ", after the rerun was decided";
                continue;
            }
            if (e.type() == Type.LEASE_LOST && e.text() != null && e.text().startsWith("renewal refused")) {
                seen = "its lease_lost says renewal refused: a peer already held the lease";
                continue;
            }
            if (e.type() == Type.SLOT_RELEASED) {
                if (e.has(Ev.SUCCESS)) {
                    return null; // handed over: the lease ended at the release
                }
                seen = "its hand-over was refused";
                continue;
            }
            if (e.type() == Type.JOB_FAILED && e.text().startsWith("interrupted")) {
                return null; // a shutdown's interrupt: its worker hands the slot over
            }
            if (expired) {
                return null;
            }
            seen = e.type().label + " was logged, but a lease taken at its start (" + Instant.ofEpochMilli(prev.start())
                    + ") lasts until " + Instant.ofEpochMilli(leaseEnd);
        }
        Life life = lives.lifeAt(prev.started().worker(), prev.started().ts());
        if (life != null && life.vanished() && life.lastSeenCluster() <= decidedAt + tolerance) {
            if (expired) {
                return null;
            }
            seen = prev.started().worker() + " vanished, but a lease taken at its start lasts until " + Instant.ofEpochMilli(leaseEnd);
        }
        return seen != null ? seen : "no lease_lost, hand-over or vanished worker before it shows the lease ended";
    }

    /** Each run told its lease was lost must end within the stop allowance, by its worker's own clock. */
    void leaseStops(String job, long slot, List<Ev> events) {
        for (Ev lost : events) {
            if (lost.type() != Type.LEASE_LOST || lost.token() == Ev.NONE) {
                continue;
            }
            Ev started = events.stream().filter(e -> e.type() == Type.JOB_STARTED && e.token() == lost.token() && e.worker().equals(lost.worker()))
                    .max(Comparator.comparingInt(Ev::attempt)).orElse(null);
            if (started == null) {
                continue; // lost before it started
            }
            // Its end: the outcome of its last attempt, or the writing of it (job_timed_out is logged at the interrupt, not the end).
            List<Ev> ends = events.stream().filter(e -> e.token() == lost.token() && e.worker().equals(lost.worker())
                    && ((e.type() != Type.JOB_TIMED_OUT && e.type().isOutcome() && e.attempt() >= started.attempt())
                    || e.type() == Type.SLOT_RELEASED || e.type() == Type.OUTCOME_LATE || e.type() == Type.OUTCOME_UNRECORDED)).toList();
            if (ends.stream().anyMatch(e -> e.ts() <= lost.ts())) {
                continue; // it had ended; the lease went while the outcome was written
            }
            Ev end = ends.stream().min(Comparator.comparingLong(Ev::ts)).orElse(null);
            if (end != null) {
                if (end.ts() - lost.ts() > stopAllowance) {
                    report.violation("lease-stop", job, slot, "ran " + (end.ts() - lost.ts()) + " ms after its worker told it its lease was lost"
                            + " (allowance " + stopAllowance + " ms)", List.of(started, lost, end));
                }
                continue;
            }
            Life life = lives.lifeAt(lost.worker(), lost.ts());
            boolean timedOut = events.stream().anyMatch(e -> e.type() == Type.JOB_TIMED_OUT && e.token() == lost.token());
            if (timedOut) {
                report.unverified(job, slot, "the run under fencing token " + lost.token() + " timed out and lost its lease; its end is"
                        + " only in slot_released, on the claims logger, which this log does not have");
            } else if (life != null && (!life.vanished() || life.lastSeen() - lost.ts() > stopAllowance)) {
                report.violation("lease-stop", job, slot, "no outcome was logged after its lease was lost, though " + lost.worker()
                        + " went on " + (life.vanished() ? "logging for " + (life.lastSeen() - lost.ts()) + " ms" : "and stopped cleanly"),
                        List.of(started, lost));
            } else {
                report.unverified(job, slot, "the run under fencing token " + lost.token() + " lost its lease and " + lost.worker()
                        + " vanished before its end could be seen");
            }
        }
    }
}
