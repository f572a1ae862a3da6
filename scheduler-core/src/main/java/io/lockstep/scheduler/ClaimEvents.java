package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.ClaimResult;
import io.lockstep.scheduler.lock.Lease;

/**
 * What the {@link Claimer} tells about the store's answers to its claims: the event of each answer
 * that decides a slot ({@code slot_claimed}, {@code slot_recovered}, {@code slot_contended},
 * {@code slot_recovery_skipped}, {@code slot_skipped}, {@code slot_missed}, {@code slot_stale},
 * {@code slot_abandoned}, {@code slot_settled}) and its metrics ({@code lockstep.claims}, the
 * skipped and missed counters). Recoveries are not claims: they are never counted in
 * {@code lockstep.claims}.
 *
 * <p>It decides nothing: what is started, asked again or forgotten is the {@link Claimer}'s, which
 * calls {@link #answered} before acting on the answer (the event before the run is handed on, as
 * the logs have always read). Answers that only send the slot round again (early, busy, unanswered,
 * no quorum) tell nothing there; when such a slot can no longer start, the Claimer reports it
 * through {@link #missed}. (Redlock's {@code slot_no_quorum} debug line stays in the Claimer, with
 * the retry time it picks.) Called only from the tick thread, like the Claimer.
 */
final class ClaimEvents {

    private final Events events;

    ClaimEvents(Events events) {
        this.events = events;
    }

    /**
     * Counts {@code result} ({@link #count}) and, when it decides the slot, logs its event.
     *
     * @param lateness the store's time at the answer minus the slot, ms (negative for a claim ahead)
     * @param durationMs the claim's round trip
     */
    void answered(DueSlot d, ClaimRequest request, ClaimResult result, String lockName, long lateness, long durationMs) {
        JobDefinition def = d.definition();
        Lease lease = request.lease();
        ClaimRequest.Mode mode = request.mode();
        count(def.name(), mode, result.status());
        switch (result.status()) {
            case CLAIMED -> {
                if (mode == ClaimRequest.Mode.RECOVER || mode == ClaimRequest.Mode.ABANDON) {
                    events.warn("slot_recovered").addKeyValue("job", def.name()).addKeyValue("slot", d.slot.toString())
                            .addKeyValue("lock_name", lockName).addKeyValue("action", "acquire")
                            .addKeyValue("identifier", lease.token()).addKeyValue("duration_ms", durationMs)
                            .addKeyValue("success", true).addKeyValue("fencing_token", result.fencingToken())
                            .addKeyValue("lateness_ms", lateness)
                            .addKeyValue("reason", mode == ClaimRequest.Mode.ABANDON || result.why().equals("not_started")
                                    ? "its claim was never started (its worker stopped or stalled first); a run that never started is always safe to run"
                                    : result.why().equals("handed_over")
                                            ? "handed over at shutdown: its worker's stop cut the run off; recover: rerun"
                                            : result.why().equals("lease_lost")
                                                    ? "the run's lease ran out without an outcome (its worker died or stalled); recover: rerun"
                                                    : "the run's lease ran out without an outcome, or its worker handed it over at its stop; recover: rerun")
                            .log("slot recovered; running it again under a higher fencing token");
                } else {
                    var event = events.info("slot_claimed").addKeyValue("job", def.name()).addKeyValue("slot", d.slot.toString())
                            .addKeyValue("lock_name", lockName).addKeyValue("action", "acquire")
                            .addKeyValue("identifier", lease.token()).addKeyValue("duration_ms", durationMs)
                            .addKeyValue("success", true).addKeyValue("fencing_token", result.fencingToken())
                            .addKeyValue("lateness_ms", Math.max(0, lateness));
                    if (lateness < 0) {
                        event = event.addKeyValue("ahead_ms", -lateness); // claimed ahead; the run starts at the slot
                    }
                    long jitter = def.schedule().offset().toMillis();
                    if (jitter > 0) {
                        event = event.addKeyValue("jitter_ms", jitter); // the slot is its cron fire time plus this stable offset
                    }
                    if (request.staged() && !result.started()) {
                        event = event.addKeyValue("staged", true); // decided before the store's start window: a start follows
                    }
                    if (d.backfill != null) {
                        // outside the job's order and grace: audit checks it as a backfill's, not the schedule's
                        event = event.addKeyValue("origin", "backfill").addKeyValue("backfill", d.backfill);
                    } else if (mode == ClaimRequest.Mode.CATCH_UP) {
                        event = event.addKeyValue("catch_up", true);
                    }
                    if (d.manual) {
                        event = event.addKeyValue("manual", true);
                    }
                    event.log("slot claimed");
                }
            }
            case TAKEN -> {
                if (d.watch() || d.skip()) {
                    // a labelled job's slot, or a calendar's skip, another worker decided: nothing to say
                    events.debug("slot_decided_elsewhere").addKeyValue("job", def.name()).addKeyValue("slot", d.slot.toString())
                            .log("decided by another worker");
                } else if (mode == ClaimRequest.Mode.RECOVER || mode == ClaimRequest.Mode.ABANDON) {
                    events.debug("slot_recovery_skipped").addKeyValue("job", def.name()).addKeyValue("slot", d.slot.toString())
                            .log("nothing to recover: the run renewed, finished, or another worker took it");
                } else {
                    events.info("slot_contended").addKeyValue("job", def.name()).addKeyValue("slot", d.slot.toString())
                            .addKeyValue("lock_name", lockName).addKeyValue("action", "acquire")
                            .addKeyValue("identifier", lease.token()).addKeyValue("duration_ms", durationMs)
                            .addKeyValue("success", false).log("slot taken by another worker");
                }
            }
            case SKIPPED -> {
                if (d.skip()) {
                    excluded(d, lockName, null);
                } else {
                    events.info("slot_skipped").addKeyValue("job", def.name()).addKeyValue("slot", d.slot.toString())
                            .addKeyValue("lock_name", lockName).addKeyValue("reason", "overlap: an earlier run still holds the lease")
                            .log("slot skipped");
                }
            }
            case PAUSED -> events.info("slot_skipped").addKeyValue("job", def.name()).addKeyValue("slot", d.slot.toString())
                    .addKeyValue("lock_name", lockName).addKeyValue("reason", "paused")
                    .log("slot skipped: the job is paused");
            case MISSED -> {
                if (mode == ClaimRequest.Mode.RECOVER || mode == ClaimRequest.Mode.ABANDON) {
                    missed(d, lateness, "its claim was never started (its worker stopped or stalled first), and misfireGrace has passed",
                            lockName, "not_started");
                } else {
                    missed(d, lateness, d.missReason() != null ? d.missReason() : "later than misfireGrace", lockName,
                            d.missCode() != null ? d.missCode() : "late");
                }
            }
            case SUPERSEDED -> missed(d, lateness, "a later slot of the job already started; slots start in order", lockName, "order");
            case UNCONFIRMED -> missed(d, lateness, "claim not acknowledged by the replicas within waitTimeout (redis.waitReplicas); "
                    + "disowned so that a failover cannot run it twice", lockName, "unconfirmed");
            case STALE -> {
                if (d.backfill != null) {
                    // the backfill was cancelled or ended, or already passed the slot: nothing happened to it
                    events.debug("backfill_slot_refused").addKeyValue("job", def.name()).addKeyValue("slot", d.slot.toString())
                            .addKeyValue("backfill", d.backfill).log("not claimed: the backfill was cancelled, ended, or passed it");
                    return;
                }
                var event = events.info("slot_stale").addKeyValue("job", def.name()).addKeyValue("slot", d.slot.toString())
                        .addKeyValue("lock_name", lockName).addKeyValue("lateness_ms", lateness)
                        .addKeyValue("reason", (d.manual ? "the manual run's record may have expired"
                                : "the slot's record may have expired and a slot as late was decided")
                                + " (the shortest record life any worker gave the job is past, whatever this worker's config gives): "
                                + "what became of it can no longer be known, so it is neither run nor reported again");
                if (d.manual) {
                    event = event.addKeyValue("manual", true);
                }
                event.log("slot too old to decide");
            }
            case ABANDONED -> events.warn("slot_abandoned").addKeyValue("job", def.name()).addKeyValue("slot", d.slot.toString())
                    .addKeyValue("lock_name", lockName).addKeyValue("fencing_token", result.fencingToken())
                    .addKeyValue("lateness_ms", lateness)
                    .addKeyValue("reason", "the run's lease ran out without an outcome; recover: none")
                    .log("slot abandoned: its run lost its lease without an outcome");
            default -> { } // early, busy, unanswered, no quorum: the slot goes round again (the Claimer's)
        }
    }

    /** A slot reported missed while the store was unreachable is settled by this answer: debug only, never counted again. */
    void settled(DueSlot d, ClaimResult result, String lockName) {
        events.debug("slot_settled").addKeyValue("job", d.definition().name()).addKeyValue("slot", d.slot.toString())
                .addKeyValue("lock_name", lockName).addKeyValue("outcome", result.status().name().toLowerCase(java.util.Locale.ROOT))
                .log("slot reported missed during an outage is settled in the store");
    }

    /** The store did not answer a claim ({@code lockstep.claims} error); recoveries are not claims. */
    void unanswered(DueSlot d) {
        if (!d.recovery()) {
            events.metrics().claim(d.definition().name(), SchedulerMetrics.ERROR);
        }
    }

    /** Counts a claim's result ({@code lockstep.claims}) and a skipped slot; recoveries are not claims. */
    private void count(String job, ClaimRequest.Mode mode, ClaimResult.Status status) {
        if (mode == ClaimRequest.Mode.RECOVER || mode == ClaimRequest.Mode.ABANDON) {
            return;
        }
        SchedulerMetrics m = events.metrics();
        switch (status) {
            case CLAIMED -> m.claim(job, SchedulerMetrics.WON);
            case TAKEN -> {
                if (mode != ClaimRequest.Mode.SKIP_ONLY) { // every worker sends a calendar's skip: one decides, the rest did not contend
                    m.claim(job, SchedulerMetrics.CONTENDED);
                }
            }
            case STALE -> m.claim(job, SchedulerMetrics.DONE);
            case SKIPPED, PAUSED -> {
                m.claim(job, SchedulerMetrics.SKIPPED);
                m.skipped(job, status == ClaimResult.Status.PAUSED ? "paused" : mode == ClaimRequest.Mode.SKIP_ONLY ? DueSlot.CALENDAR : "overlap");
            }
            case MISSED, SUPERSEDED, UNCONFIRMED -> m.claim(job, SchedulerMetrics.MISSED);
            default -> { } // early, busy: asked again; abandoned: a recovery
        }
    }

    /**
     * A slot the job's calendars exclude, recorded skipped (reason {@code calendar}) by this worker,
     * or decided so by it alone ({@code alone}: why the store could not record it; null when it did).
     */
    void excluded(DueSlot d, String lockName, String alone) {
        if (alone != null) {
            events.metrics().skipped(d.definition().name(), DueSlot.CALENDAR); // the store's answer counts it otherwise
        }
        var event = events.info("slot_skipped").addKeyValue("job", d.definition().name()).addKeyValue("slot", d.slot.toString())
                .addKeyValue("reason", alone == null ? d.missReason() : d.missReason() + "; " + alone)
                .addKeyValue("code", DueSlot.CALENDAR);
        if (lockName != null) {
            event = event.addKeyValue("lock_name", lockName);
        }
        event.log("slot skipped: the job's calendars exclude it");
    }

    /** Reports {@code d} missed: the {@code slot_missed} warning and the missed counter, by {@code code}. */
    void missed(DueSlot d, long latenessMs, String reason, String lockName, String code) {
        events.metrics().missed(d.definition().name(), code, 1);
        var event = events.warn("slot_missed").addKeyValue("job", d.definition().name())
                .addKeyValue("slot", d.slot.toString()).addKeyValue("lateness_ms", latenessMs)
                .addKeyValue("reason", reason).addKeyValue("code", code);
        if (lockName != null) {
            event = event.addKeyValue("lock_name", lockName);
        }
        event.log("slot missed");
    }
}
