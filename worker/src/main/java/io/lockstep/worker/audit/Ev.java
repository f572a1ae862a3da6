package io.lockstep.worker.audit;

import java.time.Instant;
import java.util.Locale;

/**
 * One Lockstep event as the audit keeps it: the fields the checks read, nothing else, so that a
 * million of them fit in a small heap. {@code ts} is the worker's own wall clock (epoch ms), as
 * logged; {@code text} is the event's {@code reason}, or {@code outcome} for {@code slot_released}.
 *
 * @param type what happened
 * @param worker the worker's id
 * @param ts when, by the worker's wall clock, epoch ms
 * @param token the fencing token, or {@link #NONE}; for {@code schedule_updated}, its {@code effective_at}
 *     (epoch ms, cluster time: the instant that splits the old definitions' slots from the new ones'), or
 *     {@link #NONE} when not logged
 * @param attempt the attempt, 0 when the event has none
 * @param lateness {@code lateness_ms}, or {@link #NONE}; for {@code lease_lost}, its {@code deadline_passed_ms} (how
 *     long before the line the holder's own lease deadline passed: a stall's overrun), or {@link #NONE}
 * @param flags {@link #MANUAL}, {@link #CATCH_UP}, {@link #RERUN}, {@link #SUCCESS}, {@link #BACKFILL}
 * @param text the reason (or outcome, or miss code), interned; may be null
 */
record Ev(Type type, String worker, long ts, long token, int attempt, long lateness, int flags, String text) {

    static final long NONE = Long.MIN_VALUE;
    static final int MANUAL = 1, CATCH_UP = 2, RERUN = 4, SUCCESS = 8, UNILATERAL = 16;
    /** A backfill's claim or run ({@code origin: backfill}): outside the schedule's grace and order, in an order of its own. */
    static final int BACKFILL = 32;

    /** The events the checks read; every other Lockstep event is counted and only moves its worker's last sighting. */
    enum Type {
        CONFIG_LOADED, WORKER_STARTED, SCHEDULE_UPDATED, WORKER_STOPPING, WORKER_STOPPED,
        SLOT_CLAIMED, JOB_STARTED, JOB_SUCCEEDED, JOB_FAILED, JOB_TIMED_OUT, LEASE_LOST, SLOT_RELEASED, OUTCOME_LATE, OUTCOME_UNRECORDED,
        SLOT_RECOVERED, SLOT_ABANDONED, SLOT_MISSED, SLOTS_MISSED, SLOT_SKIPPED, SLOT_STALE, SLOT_HANDED_OVER, OTHER;

        final String label = name().toLowerCase(Locale.ROOT);

        static Type of(String event) {
            return switch (event) {
                case "config_loaded" -> CONFIG_LOADED;
                case "worker_started" -> WORKER_STARTED;
                case "schedule_updated" -> SCHEDULE_UPDATED;
                case "worker_stopping" -> WORKER_STOPPING;
                case "worker_stopped" -> WORKER_STOPPED;
                case "slot_claimed" -> SLOT_CLAIMED;
                case "job_started" -> JOB_STARTED;
                case "job_succeeded" -> JOB_SUCCEEDED;
                case "job_failed" -> JOB_FAILED;
                case "job_timed_out" -> JOB_TIMED_OUT;
                case "lease_lost" -> LEASE_LOST;
                case "slot_released" -> SLOT_RELEASED;
                case "outcome_late" -> OUTCOME_LATE;
                case "outcome_unrecorded" -> OUTCOME_UNRECORDED;
                case "slot_recovered" -> SLOT_RECOVERED;
                case "slot_abandoned" -> SLOT_ABANDONED;
                case "slot_missed" -> SLOT_MISSED;
                case "slots_missed" -> SLOTS_MISSED;
                case "slot_skipped" -> SLOT_SKIPPED;
                case "slot_stale" -> SLOT_STALE;
                case "slot_handed_over" -> SLOT_HANDED_OVER;
                default -> OTHER;
            };
        }

        /** A line of a worker's lifecycle: a process's first line, its start, a reload, its stop. */
        boolean isLifecycle() {
            return this == CONFIG_LOADED || this == WORKER_STARTED || this == SCHEDULE_UPDATED || this == WORKER_STOPPING
                    || this == WORKER_STOPPED;
        }

        /** A run's end on its worker: the outcome of an attempt. */
        boolean isOutcome() {
            return this == JOB_SUCCEEDED || this == JOB_FAILED || this == JOB_TIMED_OUT;
        }

        /** The slot was decided without a run and said why. */
        boolean isReport() {
            return this == SLOT_MISSED || this == SLOT_SKIPPED || this == SLOT_STALE || this == SLOT_ABANDONED;
        }
    }

    boolean has(int flag) {
        return (flags & flag) != 0;
    }

    /** One line for a violation's evidence: when, who, what, and the fields that matter. */
    String describe() {
        StringBuilder s = new StringBuilder().append(Instant.ofEpochMilli(ts)).append("  ").append(worker).append("  ").append(type.label);
        if (token != NONE) {
            s.append(type == Type.SCHEDULE_UPDATED ? " effective_at=" + Instant.ofEpochMilli(token) : " fencing_token=" + token);
        }
        if (attempt > 0) {
            s.append(" attempt=").append(attempt);
        }
        if (lateness != NONE) {
            s.append(type == Type.LEASE_LOST ? " deadline_passed_ms=" : " lateness_ms=").append(lateness);
        }
        if (has(MANUAL)) {
            s.append(" manual");
        }
        if (has(RERUN)) {
            s.append(" rerun");
        }
        if (has(CATCH_UP)) {
            s.append(" catch_up");
        }
        if (has(BACKFILL)) {
            s.append(" origin=backfill");
        }
        if (type == Type.SLOT_RELEASED) {
            s.append(" success=").append(has(SUCCESS));
        }
        if (text != null) {
            s.append(type == Type.SLOT_RELEASED ? " outcome=" : type == Type.JOB_STARTED && has(BACKFILL) ? " backfill=" : " reason=").append(text);
        }
        return s.toString();
    }
}
