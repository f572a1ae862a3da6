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
 *
 * <p>This class goes through a job's slots and checks its runs and their fencing tokens; a slot no run took is
 * {@link SilentSlots}' to judge, and what a run's lease says (ended before its rerun, stopped once lost) is
 * {@link LeaseChecks}'.
 *
 * <p>The targets (the slots that should have been decided) come from the job definitions each worker had in force
 * at the slot: the config whose hash its {@code worker_started} or latest {@code schedule_updated} logged, among
 * those given ({@link Targets}). A slot only a config not given could say is unverified, never blamed.
 */
final class Checks {

    private static final Set<String> CLOSING = Set.of("succeeded", "failed", "timed_out");
    /** How far ahead of its slot a worker claims it: the scheduler's own figure. */
    static final long CLAIM_AHEAD_MS = JobDefinition.CLAIM_AHEAD.toMillis();
    /**
     * How long after a vanished worker's last event it may have decided a slot without logging it: it claims at most
     * {@link #CLAIM_AHEAD_MS} ahead, plus half a second for the claim's round trip and the clock offset's error. A slot
     * it claimed and did not run is recovered, abandoned or reported by a peer, and logged.
     */
    static final long VANISHED_REACH_MS = CLAIM_AHEAD_MS + 500;

    private final Ledger ledger;
    private final AuditReport report;
    private final long from, to, tolerance;
    private final List<Life> lives;
    private final Targets targets;
    private final Lives lifeOf;
    /** A slot no run took: {@link SilentSlots}. */
    private final SilentSlots silent;
    /** A run's lease: ended before its rerun was decided, and stopped in time once lost ({@link LeaseChecks}). */
    private final LeaseChecks leases;
    private final PlacementChecks placement;

    /** One run: a fencing token's first {@code job_started}; {@code start} by Redis time (slot + lateness), or {@link Ev#NONE}. */
    record Run(long slot, long token, Ev started, long start, boolean rerun) {}

    /** A rerun and when it was decided (its token taken), by Redis time. */
    private record Rerun(Run run, long decided) {}

    /** The reruns of the job being checked (every run of a scheduled slot after its first), for {@link #rerunTokens}. */
    private final List<Rerun> reruns = new ArrayList<>();

    Checks(Ledger ledger, List<Life> lives, AuditReport report, Audit.Options options, long from, long to, long margin, Targets targets) {
        this.ledger = ledger;
        this.report = report;
        this.from = from;
        this.to = to;
        this.tolerance = options.tolerance().toMillis();
        this.lives = lives;
        this.targets = targets;
        this.lifeOf = new Lives(lives, targets);
        this.silent = new SilentSlots(lives, targets, report, margin);
        this.leases = new LeaseChecks(lifeOf, report, tolerance, options.stopAllowance().toMillis());
        this.placement = new PlacementChecks(ledger, report);
    }

    /** Every slot of job {@code name} in the window that any given config schedules, and every slot of it with events. */
    void job(String name) {
        Map<Long, List<Ev>> bySlot = ledger.slots.getOrDefault(name, Map.of());
        List<Ledger.Range> ranges = ledger.ranges.stream().filter(r -> name.equals(r.job())).toList();
        List<Run> originals = new ArrayList<>();
        List<Run> backfilled = new ArrayList<>(); // a backfill's runs: in an order of their own, not the schedule's
        reruns.clear();
        Set<Long> seen = new java.util.HashSet<>(); // the scheduled slots that have events: the rest are manual or outside the schedule
        for (java.util.Iterator<Long> it = targets.candidates(name, from, to); it.hasNext(); ) {
            long slot = it.next();
            Targets.Target target = targets.at(name, slot, lives);
            if (target == null) {
                continue; // no config in force then schedules it
            }
            report.slotsChecked++;
            List<Ev> events = bySlot.get(slot);
            if (events != null) {
                seen.add(slot);
            }
            if (target.def() == null) {
                if (!scheduleFree(name, slot, events != null ? events : List.of())) {
                    report.unverified(name, slot, target.unverified());
                }
                continue;
            }
            Run original = slot(target.def(), slot, events != null ? events : List.of(), false, ranges);
            placement.check(target.def(), slot, events != null ? events : List.of(), original);
            if (original != null && !original.rerun()) {
                (original.started().has(Ev.BACKFILL) ? backfilled : originals).add(original);
            }
        }
        JobDefinition any = targets.anyDef(name);
        order(name, originals);
        rerunTokens(name, originals);
        for (Map.Entry<Long, List<Ev>> e : bySlot.entrySet()) {
            long slot = e.getKey();
            if (slot < from || slot > to) {
                // A backfill's slots are checked wherever they lie (its runs are all in the logs); the window bounds
                // only the schedule's slots, whose silence it judges.
                if (any != null && e.getValue().stream().anyMatch(ev -> ev.type() == Type.JOB_STARTED && ev.has(Ev.BACKFILL))) {
                    report.slotsChecked++;
                    Run original = slot(any, slot, e.getValue(), false, ranges);
                    if (original != null && !original.rerun()) {
                        backfilled.add(original);
                    }
                }
                continue;
            }
            if (e.getValue().stream().anyMatch(ev -> ev.type() == Type.JOB_STARTED && ev.has(Ev.MANUAL))) {
                slot(any, slot, e.getValue(), true, ranges);
            } else if (!seen.contains(slot)) {
                report.outsideSchedule++;
            }
            leases.leaseStops(name, slot, e.getValue());
        }
        backfilled.sort(Comparator.comparingLong(Run::slot));
        report.backfilledRuns += backfilled.size();
        // Each backfill in its own order: a later backfill may run older slots than an earlier one did.
        Map<String, List<Run>> byBackfill = new java.util.TreeMap<>();
        backfilled.forEach(r -> byBackfill.computeIfAbsent(String.valueOf(r.started().text()), k -> new ArrayList<>()).add(r));
        byBackfill.values().forEach(runs -> order(name, runs));
    }

    /**
     * The checks that need no job definition, for a slot whose config the audit was not given: a second token started
     * without being a rerun (a rerun logs {@code rerun: true}, after its {@code slot_recovered}), or one token's attempt
     * started twice at different times. True when one failed (a violation, not merely unverified).
     */
    private boolean scheduleFree(String job, long slot, List<Ev> events) {
        Map<Long, List<Ev>> starts = new java.util.TreeMap<>();
        for (Ev e : events) {
            if (e.type() == Type.JOB_STARTED && !e.has(Ev.MANUAL)) {
                starts.computeIfAbsent(e.token(), t -> new ArrayList<>()).add(e);
            }
        }
        boolean first = true;
        for (Map.Entry<Long, List<Ev>> t : starts.entrySet()) {
            Ev start = t.getValue().get(0);
            if (!first && !start.has(Ev.RERUN)) {
                report.violation("second-run", job, slot, "started again under fencing token " + t.getKey() + " by " + start.worker()
                        + ", not as a rerun (its config was not given: the lease and grace could not be checked)", events);
                return true;
            }
            first = false;
            Map<String, Long> seen = new HashMap<>();
            for (Ev e : t.getValue()) {
                Long before = seen.put(e.worker() + "#" + e.attempt(), e.ts());
                if (before != null && before != e.ts()) {
                    report.violation("second-run", job, slot, "started twice by " + e.worker() + " attempt " + e.attempt()
                            + " under fencing token " + t.getKey(), events);
                    return true;
                }
            }
        }
        return false;
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
            silent.decidedWithoutRun(def, slot, events, ranges);
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
            // One worker starting one attempt twice (a double dispatch): lines that differ in their time are two starts. Lines
            // equal in every field the audit reads (a shipper's repeat) were kept once by the ledger.
            Map<String, List<Ev>> byAttempt = new java.util.TreeMap<>();
            t.getValue().forEach(e -> byAttempt.computeIfAbsent(e.worker() + " attempt " + e.attempt(), k -> new ArrayList<>()).add(e));
            byAttempt.forEach((who, same) -> {
                if (same.size() > 1) {
                    long apart = same.stream().mapToLong(Ev::ts).max().orElse(0) - same.stream().mapToLong(Ev::ts).min().orElse(0);
                    report.violation("second-run", job, slot, "started " + same.size() + " times by " + who + " under fencing token "
                            + t.getKey() + " (" + apart + " ms apart): one run dispatched twice", same);
                }
            });
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
            } else {
                long decided = recoveredAt(slot, r, events);
                String held = leases.held(def, prev, events, decided);
                if (held != null) {
                    rerunsHold = false;
                    report.violation("second-run", job, slot, "rerun under fencing token " + r.token() + ", decided at "
                            + Instant.ofEpochMilli(decided) + " (Redis time), while the run under " + prev.token() + " by "
                            + prev.started().worker() + " may still have held its lease: " + held, related(events, prev.token(), r.token()));
                }
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
        if (!manual) {
            runs.stream().skip(1).filter(Run::rerun).forEach(r -> reruns.add(new Rerun(r, recoveredAt(slot, r, events))));
        }
        startTime(def, slot, original, manual);
        contradictions(job, slot, events, original);
        return manual ? null : original;
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

    /** Started before its slot by Redis time, or after misfireGrace (scheduled first attempts; reruns, catch-up and backfill may be later). */
    private void startTime(JobDefinition def, long slot, Run run, boolean manual) {
        long lateness = run.started().lateness();
        if (lateness == Ev.NONE) {
            return;
        }
        if (lateness < -tolerance) {
            report.violation("start-time", def.name(), slot, "started " + -lateness + " ms before its slot by Redis time", List.of(run.started()));
            return;
        }
        JobDefinition own = lifeOf.runDef(def, run.started(), slot); // the grace of the worker that started it (a rollout may differ)
        long grace = manual ? Math.max(own.misfireGrace().toMillis(), JobDefinition.MANUAL_GRACE.toMillis()) : own.misfireGrace().toMillis();
        if (!run.rerun() && !run.started().has(Ev.CATCH_UP) && !run.started().has(Ev.BACKFILL) && run.started().attempt() <= 1
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

    /**
     * Per job, the original runs in slot order: tokens rise, and no older slot starts after a newer one started. Called
     * for the schedule's runs, then for a backfill's (older slots run later under higher tokens, in their own order).
     */
    private void order(String job, List<Run> originals) {
        Run maxToken = null, maxStart = null;
        for (Run r : originals) {
            if (maxToken != null && r.token() <= maxToken.token()) {
                report.violation("token-order", job, r.slot(), "fencing token " + r.token() + " is not above " + maxToken.token()
                        + ", the token of the earlier slot " + Instant.ofEpochMilli(maxToken.slot()), List.of(maxToken.started(), r.started()));
            }
            if (r.start() != Ev.NONE && maxStart != null && r.start() < maxStart.start() - tolerance) {
                report.violation("start-order", job, r.slot(), "the earlier slot " + Instant.ofEpochMilli(maxStart.slot()) + " started "
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

    /**
     * A rerun of slot S decided after a later slot's run started holds a higher fencing token than
     * that run (GUARANTEES 10: its token is taken when it is decided, and that run's claim came
     * before its start). By the decision, not the rerun's start: runs handed out together begin in
     * no set order.
     */
    private void rerunTokens(String job, List<Run> originals) {
        for (Rerun rerun : reruns) {
            if (rerun.decided() == Long.MAX_VALUE) {
                continue;
            }
            Run r = rerun.run();
            for (Run later : originals) {
                if (later.slot() > r.slot() && later.start() != Ev.NONE && later.start() < rerun.decided() - tolerance
                        && later.token() >= r.token()) {
                    report.violation("token-order", job, r.slot(), "the rerun under fencing token " + r.token() + " was decided "
                            + (rerun.decided() - later.start()) + " ms after the run of the later slot " + Instant.ofEpochMilli(later.slot())
                            + " started, yet under a lower token than its " + later.token(), List.of(later.started(), r.started()));
                }
            }
        }
    }

    /** Lists vanished workers (within the window) for the report. */
    void workers() {
        lives.stream().filter(l -> l.vanished() && l.lastSeenCluster() <= to).sorted(Comparator.comparingLong(Life::lastSeen))
                .forEach(l -> report.vanished.add(l.worker() + " (started " + Instant.ofEpochMilli(l.start()) + ", last event "
                        + Instant.ofEpochMilli(l.lastSeen()) + ", no worker_stopped): silent slots up to " + VANISHED_REACH_MS
                        + " ms after its last event are unverified, not blamed"));
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
}
