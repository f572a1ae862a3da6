package io.lockstep.worker.audit;

import io.lockstep.scheduler.JobDefinition;
import io.lockstep.worker.audit.Ev.Type;
import io.lockstep.worker.audit.Ledger.Life;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The checks, job by job. Each is named in {@link AuditReport#CHECKS} and explained in
 * docs/GUARANTEES.md under "What audit checks". A run is one fencing token's {@code job_started}
 * (its retries share the token); a slot's original run is its lowest token.
 */
final class Checks {

    private static final Set<String> CLOSING = Set.of("succeeded", "failed", "timed_out");
    private static final Set<String> HANDED_OVER = Set.of("lease_lost", "interrupted", "not_started");

    private final Ledger ledger;
    private final AuditReport report;
    private final long from, to, tolerance, stopAllowance, margin;
    private final List<Life> lives;

    /** One run: a fencing token's first {@code job_started}; {@code start} by Redis time (slot + lateness), or {@link Ev#NONE}. */
    private record Run(long slot, long token, Ev started, long start, boolean rerun) {}

    Checks(Ledger ledger, List<Life> lives, AuditReport report, Audit.Options options, long from, long to, long margin) {
        this.margin = margin;
        this.ledger = ledger;
        this.report = report;
        this.from = from;
        this.to = to;
        this.tolerance = options.tolerance().toMillis();
        this.stopAllowance = options.stopAllowance().toMillis();
        this.lives = lives;
    }

    void job(JobDefinition def) {
        Map<Long, List<Ev>> bySlot = ledger.slots.getOrDefault(def.name(), Map.of());
        List<Ledger.Range> ranges = ledger.ranges.stream().filter(r -> def.name().equals(r.job())).toList();
        List<Run> originals = new ArrayList<>();
        Set<Long> seen = new java.util.HashSet<>(); // the scheduled slots that have events: the rest are manual or outside the schedule
        for (Instant next = def.schedule().next(Instant.ofEpochMilli(from - 1)).orElse(null); next != null && next.toEpochMilli() <= to;
                next = def.schedule().next(next).orElse(null)) {
            long slot = next.toEpochMilli();
            report.slotsChecked++;
            List<Ev> events = bySlot.get(slot);
            if (events != null) {
                seen.add(slot);
            }
            Run original = slot(def, slot, events != null ? events : List.of(), false, ranges);
            if (original != null && !original.rerun()) {
                originals.add(original);
            }
        }
        order(def, originals);
        for (Map.Entry<Long, List<Ev>> e : bySlot.entrySet()) {
            long slot = e.getKey();
            if (slot < from || slot > to) {
                continue;
            }
            if (e.getValue().stream().anyMatch(ev -> ev.type() == Type.JOB_STARTED && ev.has(Ev.MANUAL))) {
                slot(def, slot, e.getValue(), true, ranges);
            } else if (!seen.contains(slot)) {
                report.outsideSchedule++;
            }
            leaseStops(def, slot, e.getValue());
        }
    }

    /** Every check of one slot; answers its original run (null when it had none, or for a manual one). */
    private Run slot(JobDefinition def, long slot, List<Ev> events, boolean manual, List<Ledger.Range> ranges) {
        String job = def.name();
        Map<Long, List<Ev>> starts = new HashMap<>();
        for (Ev e : events) {
            if (e.type() == Type.JOB_STARTED && e.has(Ev.MANUAL) == manual) {
                starts.computeIfAbsent(e.token(), t -> new ArrayList<>()).add(e);
            }
        }
        if (starts.isEmpty()) {
            decidedWithoutRun(def, slot, events, ranges);
            return null;
        }
        Set<Long> recovered = events.stream().filter(e -> e.type() == Type.SLOT_RECOVERED).map(Ev::token).collect(Collectors.toSet());
        List<Run> runs = new ArrayList<>();
        for (Map.Entry<Long, List<Ev>> t : starts.entrySet()) {
            Ev first = t.getValue().stream().min(Comparator.comparingInt(Ev::attempt).thenComparingLong(Ev::ts)).orElseThrow();
            List<String> workers = t.getValue().stream().filter(e -> e.attempt() == first.attempt()).map(Ev::worker).distinct().toList();
            if (workers.size() > 1) {
                report.violation("second-run", job, slot, "started by " + String.join(" and ", workers) + " under the same fencing token "
                        + t.getKey(), t.getValue());
            }
            long start = first.lateness() == Ev.NONE ? Ev.NONE : slot + first.lateness();
            runs.add(new Run(slot, t.getKey(), first, start, first.has(Ev.RERUN) || recovered.contains(t.getKey())));
        }
        runs.sort(Comparator.comparingLong(Run::token));
        boolean rerunsHold = true;
        for (int i = 1; i < runs.size(); i++) {
            Run r = runs.get(i), prev = runs.get(i - 1);
            if (!r.rerun()) {
                rerunsHold = false;
                report.violation("second-run", job, slot, "started again under fencing token " + r.token() + " by " + r.started().worker()
                        + " without a recovery (no slot_recovered names the token); the run before it was under " + prev.token() + " by "
                        + prev.started().worker(), List.of(prev.started(), r.started()));
            } else if (!lost(prev, events, recoveredAt(slot, r, events))) {
                rerunsHold = false;
                report.violation("second-run", job, slot, "rerun under fencing token " + r.token() + " while the run under " + prev.token()
                        + " by " + prev.started().worker() + " had not lost its lease (no lease_lost, hand-over, or vanished worker shows it)",
                        related(events, prev.token(), r.token()));
            }
            if (r.start() != Ev.NONE && prev.start() != Ev.NONE && r.start() < prev.start() - tolerance) {
                report.violation("token-order", job, slot, "the run under fencing token " + r.token() + " started "
                        + (prev.start() - r.start()) + " ms before the run under the lower token " + prev.token(),
                        List.of(prev.started(), r.started()));
            }
        }
        if (manual) {
            report.manualRuns += runs.size();
        } else if (runs.size() == 1) {
            report.startedOnce++;
        } else if (rerunsHold) {
            report.rerunSlots++;
        }
        Run original = runs.get(0);
        startTime(def, slot, original, manual);
        contradictions(job, slot, events, original);
        return manual ? null : original;
    }

    /** A slot without a run: reported with a reason, or silent (a violation where a worker was running, unless one vanished near it). */
    private void decidedWithoutRun(JobDefinition def, long slot, List<Ev> events, List<Ledger.Range> ranges) {
        for (Type type : List.of(Type.SLOT_MISSED, Type.SLOT_SKIPPED, Type.SLOT_ABANDONED, Type.SLOT_STALE)) {
            for (Ev e : events) {
                if (e.type() == type) {
                    report.reported(switch (type) {
                        case SLOT_MISSED -> "missed (" + e.text() + ")";
                        case SLOT_SKIPPED -> "skipped (" + e.text() + ")";
                        case SLOT_ABANDONED -> "abandoned";
                        default -> "stale";
                    });
                    return;
                }
            }
        }
        if (ranges.stream().anyMatch(r -> r.from() <= slot && slot <= r.to())) {
            report.reported("missed (counted in slots_missed)");
            return;
        }
        long lease = def.lease().toMillis(), grace = def.misfireGrace().toMillis();
        List<Life> vanished = lives.stream().filter(l -> l.vanished() && l.lastSeenCluster() >= slot - lease - 1000
                && l.lastSeenCluster() <= slot + grace + 1000).toList();
        if (!vanished.isEmpty()) {
            report.flag(def.name(), slot, "no run or report; " + describe(vanished) + " vanished near it and may have held it");
            return;
        }
        List<String> cut = lives.stream().filter(l -> l.begunBefore() && slot < l.startCluster() + margin).map(Life::worker).distinct().toList();
        if (!cut.isEmpty()) {
            report.flag(def.name(), slot, "no run or report; the log of " + String.join(", ", cut) + " begins after it (cut) and may hold it");
            return;
        }
        // A worker answers for the slots whose grace ended while it ran: one stopped within a slot's grace may leave it
        // undecided to its peers (a claim the store did not answer yet, a slot waiting for a thread).
        List<String> running = lives.stream().filter(l -> slot >= l.startCluster() + 1000 && slot + grace + 1000 <= l.endCluster())
                .map(Life::worker).distinct().sorted().toList();
        if (running.isEmpty()) {
            report.unattended++;
            return;
        }
        report.violation("silent-slot", def.name(), slot, "no worker started or reported it, while " + String.join(", ", running)
                + (running.size() == 1 ? " was" : " were") + " running", events);
    }

    /** When rerun {@code r} was decided, by Redis time: its {@code slot_recovered}, else its start. */
    private static long recoveredAt(long slot, Run r, List<Ev> events) {
        for (Ev e : events) {
            if (e.type() == Type.SLOT_RECOVERED && e.token() == r.token() && e.lateness() != Ev.NONE) {
                return slot + e.lateness();
            }
        }
        return r.start() != Ev.NONE ? r.start() : Long.MAX_VALUE;
    }

    /**
     * Whether the log shows that run {@code prev} lost its lease ({@code lease_lost}, a failure for it), was handed
     * over (an outcome that hands the slot over, {@code outcome_unrecorded}), or that its worker vanished before the
     * rerun was decided. A release refused or {@code outcome_late} are not such signs: they follow any takeover, a
     * wrongful one too.
     */
    private boolean lost(Run prev, List<Ev> events, long recoveredAt) {
        for (Ev e : events) {
            boolean same = e.token() == prev.token() || (e.token() == Ev.NONE && e.worker().equals(prev.started().worker()));
            if (!same) {
                continue;
            }
            switch (e.type()) {
                case LEASE_LOST, OUTCOME_UNRECORDED -> {
                    return true;
                }
                case SLOT_RELEASED -> {
                    if (HANDED_OVER.contains(e.text())) {
                        return true;
                    }
                }
                case JOB_FAILED -> {
                    if (e.text() != null && (e.text().startsWith("lease lost") || e.text().startsWith("interrupted"))) {
                        return true;
                    }
                }
                default -> { }
            }
        }
        Life life = lifeAt(prev.started().worker(), prev.started().ts());
        return life != null && life.vanished() && life.lastSeenCluster() <= recoveredAt + tolerance;
    }

    /** Started before its slot by Redis time, or after misfireGrace (scheduled first attempts; reruns and catch-up may be later). */
    private void startTime(JobDefinition def, long slot, Run run, boolean manual) {
        long lateness = run.started().lateness();
        if (lateness == Ev.NONE) {
            return;
        }
        if (lateness < -tolerance) {
            report.violation("start-time", def.name(), slot, "started " + -lateness + " ms before its slot by Redis time", List.of(run.started()));
            return;
        }
        long grace = manual ? Math.max(def.misfireGrace().toMillis(), JobDefinition.MANUAL_GRACE.toMillis()) : def.misfireGrace().toMillis();
        if (!run.rerun() && !run.started().has(Ev.CATCH_UP) && run.started().attempt() <= 1
                && lateness > grace + Audit.Options.START_LATENCY_MS + tolerance) {
            report.violation("start-time", def.name(), slot, "started " + lateness + " ms after its slot, past misfireGrace ("
                    + grace + " ms)", List.of(run.started()));
        }
    }

    /** Events that contradict each other about a slot that ran. */
    private void contradictions(String job, long slot, List<Ev> events, Run original) {
        for (Ev e : events) {
            if ((e.type() == Type.SLOT_MISSED && !e.has(Ev.UNILATERAL)) || e.type() == Type.SLOT_SKIPPED) {
                report.violation("contradiction", job, slot, "reported " + (e.type() == Type.SLOT_SKIPPED ? "skipped" : "missed") + " by "
                        + e.worker() + " by the store's decision, but it ran", List.of(e, original.started()));
            }
            if (e.type() == Type.SLOT_RELEASED && e.has(Ev.SUCCESS) && CLOSING.contains(e.text()) && e.token() != Ev.NONE) {
                for (Ev other : events) {
                    if ((other.type() == Type.SLOT_RECOVERED && other.token() > e.token()) || other.type() == Type.SLOT_ABANDONED) {
                        report.violation("contradiction", job, slot, "the run under fencing token " + e.token() + " finished and its outcome was"
                                + " recorded, yet " + other.worker() + " recorded it lost (" + other.type().label + ")", List.of(e, other));
                    }
                }
            }
        }
    }

    /** Per job, the original runs in slot order: tokens rise, and no older slot starts after a newer one started. */
    private void order(JobDefinition def, List<Run> originals) {
        Run maxToken = null, maxStart = null;
        for (Run r : originals) {
            if (maxToken != null && r.token() <= maxToken.token()) {
                report.violation("token-order", def.name(), r.slot(), "fencing token " + r.token() + " is not above " + maxToken.token()
                        + ", the token of the earlier slot " + Instant.ofEpochMilli(maxToken.slot()), List.of(maxToken.started(), r.started()));
            }
            if (r.start() != Ev.NONE && maxStart != null && r.start() < maxStart.start() - tolerance) {
                report.violation("start-order", def.name(), r.slot(), "the earlier slot " + Instant.ofEpochMilli(maxStart.slot()) + " started "
                        + (maxStart.start() - r.start()) + " ms after this one by Redis time", List.of(maxStart.started(), r.started()));
            }
            if (maxToken == null || r.token() > maxToken.token()) {
                maxToken = r;
            }
            if (r.start() != Ev.NONE && (maxStart == null || r.start() > maxStart.start())) {
                maxStart = r;
            }
        }
    }

    /** Each run told its lease was lost must end within the stop allowance, by its worker's own clock. */
    private void leaseStops(JobDefinition def, long slot, List<Ev> events) {
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
                    report.violation("lease-stop", def.name(), slot, "ran " + (end.ts() - lost.ts()) + " ms after its worker told it its lease was lost"
                            + " (allowance " + stopAllowance + " ms)", List.of(started, lost, end));
                }
                continue;
            }
            Life life = lifeAt(lost.worker(), lost.ts());
            boolean timedOut = events.stream().anyMatch(e -> e.type() == Type.JOB_TIMED_OUT && e.token() == lost.token());
            if (timedOut) {
                report.flag(def.name(), slot, "the run under fencing token " + lost.token() + " timed out and lost its lease; its end is"
                        + " only in slot_released, on the claims logger, which this log does not have");
            } else if (life != null && (!life.vanished() || life.lastSeen() - lost.ts() > stopAllowance)) {
                report.violation("lease-stop", def.name(), slot, "no outcome was logged after its lease was lost, though " + lost.worker()
                        + " went on " + (life.vanished() ? "logging for " + (life.lastSeen() - lost.ts()) + " ms" : "and stopped cleanly"),
                        List.of(started, lost));
            } else {
                report.flag(def.name(), slot, "the run under fencing token " + lost.token() + " lost its lease and " + lost.worker()
                        + " vanished before its end could be seen");
            }
        }
    }

    /** Lists vanished workers (within the window) for the report. */
    void workers() {
        lives.stream().filter(l -> l.vanished() && l.lastSeenCluster() <= to).sorted(Comparator.comparingLong(Life::lastSeen))
                .forEach(l -> report.vanished.add(l.worker() + " (started " + Instant.ofEpochMilli(l.start()) + ", last event "
                        + Instant.ofEpochMilli(l.lastSeen()) + ", no worker_stopped): slots near its end are flagged, not blamed"));
    }

    private Life lifeAt(String worker, long ts) {
        Life best = null;
        for (Life l : lives) {
            if (l.worker().equals(worker) && l.start() <= ts && (best == null || l.start() > best.start())) {
                best = l;
            }
        }
        return best;
    }

    private static List<Ev> related(List<Ev> events, long... tokens) {
        List<Ev> shown = new ArrayList<>();
        for (Ev e : events) {
            for (long t : tokens) {
                if (e.token() == t) {
                    shown.add(e);
                    break;
                }
            }
        }
        return shown;
    }

    private static String describe(List<Life> vanished) {
        return vanished.stream().map(l -> l.worker() + " (last event " + Instant.ofEpochMilli(l.lastSeen()) + ")").distinct()
                .collect(Collectors.joining(", "));
    }
}
