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
 * <p>The targets (the slots that should have been decided) come from the job definitions each worker had in force
 * at the slot: the config whose hash its {@code worker_started} or latest {@code schedule_updated} logged, among
 * those given ({@link Targets}). A slot only a config not given could say is unverified, never blamed.
 */
final class Checks {

    private static final Set<String> CLOSING = Set.of("succeeded", "failed", "timed_out");
    private static final Set<String> HANDED_OVER = Set.of("lease_lost", "interrupted", "not_started");
    /** How far ahead of its slot a worker claims it: the scheduler's own figure. */
    static final long CLAIM_AHEAD_MS = JobDefinition.CLAIM_AHEAD.toMillis();
    /**
     * How long after a vanished worker's last event it may have decided a slot without logging it: it claims at most
     * {@link #CLAIM_AHEAD_MS} ahead, plus half a second for the claim's round trip and the clock offset's error. A slot
     * it claimed and did not run is recovered, abandoned or reported by a peer, and logged.
     */
    static final long VANISHED_REACH_MS = CLAIM_AHEAD_MS + 500;
    /** A margin on a worker's start and a vanished worker's reach: a slot decided (claim answered, run started or reported) within this of it. */
    static final long DECIDE_MS = Audit.Options.START_LATENCY_MS;

    private final Ledger ledger;
    private final AuditReport report;
    private final long from, to, tolerance, stopAllowance, margin;
    private final List<Life> lives;
    private final Targets targets;

    /** One run: a fencing token's first {@code job_started}; {@code start} by Redis time (slot + lateness), or {@link Ev#NONE}. */
    private record Run(long slot, long token, Ev started, long start, boolean rerun) {}

    /** A rerun and when it was decided (its token taken), by Redis time. */
    private record Rerun(Run run, long decided) {}

    /** The reruns of the job being checked (every run of a scheduled slot after its first), for {@link #rerunTokens}. */
    private final List<Rerun> reruns = new ArrayList<>();

    Checks(Ledger ledger, List<Life> lives, AuditReport report, Audit.Options options, long from, long to, long margin, Targets targets) {
        this.margin = margin;
        this.ledger = ledger;
        this.report = report;
        this.from = from;
        this.to = to;
        this.tolerance = options.tolerance().toMillis();
        this.stopAllowance = options.stopAllowance().toMillis();
        this.lives = lives;
        this.targets = targets;
    }

    /** Every slot of job {@code name} in the window that any given config schedules, and every slot of it with events. */
    void job(String name) {
        Map<Long, List<Ev>> bySlot = ledger.slots.getOrDefault(name, Map.of());
        List<Ledger.Range> ranges = ledger.ranges.stream().filter(r -> name.equals(r.job())).toList();
        List<Run> originals = new ArrayList<>();
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
            if (original != null && !original.rerun()) {
                originals.add(original);
            }
        }
        JobDefinition any = targets.anyDef(name);
        order(name, originals);
        rerunTokens(name, originals);
        for (Map.Entry<Long, List<Ev>> e : bySlot.entrySet()) {
            long slot = e.getKey();
            if (slot < from || slot > to) {
                continue;
            }
            if (e.getValue().stream().anyMatch(ev -> ev.type() == Type.JOB_STARTED && ev.has(Ev.MANUAL))) {
                slot(any, slot, e.getValue(), true, ranges);
            } else if (!seen.contains(slot)) {
                report.outsideSchedule++;
            }
            leaseStops(name, slot, e.getValue());
        }
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
                String held = held(def, prev, events, decided);
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
        String job = def.name();
        long grace = def.misfireGrace().toMillis();
        // A worker that vanished may have decided it without a run and died before logging that: from a grace before its
        // last event (a late decision) to its claims ahead after it. Its peers then stepped aside; beyond that they answer.
        List<Life> vanished = lives.stream().filter(l -> l.vanished() && l.lastSeenCluster() >= slot - VANISHED_REACH_MS
                && l.lastSeenCluster() <= slot + grace + DECIDE_MS).toList();
        if (!vanished.isEmpty()) {
            report.unverified(job, slot, "no run or report; " + describe(vanished) + " vanished near it and may have decided it unlogged");
            return;
        }
        List<String> cut = lives.stream().filter(l -> l.begunBefore() && slot < l.startCluster() + margin).map(Life::worker).distinct().toList();
        if (!cut.isEmpty()) {
            report.unverified(job, slot, "no run or report; the log of " + String.join(", ", cut) + " begins after it (cut) and may hold it");
            return;
        }
        // A worker answers for the slots of its config that fell due while it ran (from 1 s after its start) and whose grace
        // ended before its stop. When every worker that ran it stopped within its grace, the log cannot show its fate (a
        // claim unanswered or retried after no majority, a slot waiting for a thread, a claim handed back for a peer to
        // take over within the grace): unverified, never "no worker running" (--strict fails on it).
        List<String> running = new ArrayList<>();
        List<String> unsure = new ArrayList<>();
        for (Life l : lives) {
            if (slot <= l.startCluster() || slot > l.untilCluster()) {
                // Not running it: a slot due by its worker_started (logged once its start had queued the next slots) is
                // caught up or reported by it, or, when the cluster is new, by nobody.
                continue;
            }
            Targets.Target t = targets.of(l, job, slot);
            if (t == null) {
                continue; // its config does not schedule it
            }
            if (t.def() == null) {
                unsure.add(t.unverified());
            } else if (slot < l.startCluster() + 1000) {
                unsure.add(l.worker() + " started " + (slot - l.startCluster()) + " ms before it");
            } else if (slot + grace + 1000 <= l.untilCluster()) {
                running.add(l.worker());
            } else {
                // Stopped within the slot's grace: its claim may have been unanswered, waiting for a thread, retried
                // after no majority, or handed back for a peer to take over within the grace. The log cannot say.
                long stop = l.untilCluster();
                unsure.add(l.worker() + " stopped " + (stop - slot) + " ms after it, within its grace"
                        + (events.isEmpty() ? "" : ", while it was in play (claimed and not run)"));
            }
        }
        running = running.stream().distinct().sorted().toList();
        if (!running.isEmpty()) {
            report.violation("silent-slot", job, slot, "no worker started or reported it, while " + String.join(", ", running)
                    + (running.size() == 1 ? " was" : " were") + " running", events);
            return;
        }
        if (!unsure.isEmpty()) {
            report.unverified(job, slot, "no run or report; " + String.join("; ", unsure.stream().distinct().toList()));
            return;
        }
        report.unattended++;
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
    private String held(JobDefinition def, Run prev, List<Ev> events, long decidedAt) {
        long leaseEnd = prev.start() == Ev.NONE ? Long.MIN_VALUE : prev.start() + runDef(def, prev.started(), prev.slot()).lease().toMillis();
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
            long at = cluster(e);
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
        Life life = lifeAt(prev.started().worker(), prev.started().ts());
        if (life != null && life.vanished() && life.lastSeenCluster() <= decidedAt + tolerance) {
            if (expired) {
                return null;
            }
            seen = prev.started().worker() + " vanished, but a lease taken at its start lasts until " + Instant.ofEpochMilli(leaseEnd);
        }
        return seen != null ? seen : "no lease_lost, hand-over or vanished worker before it shows the lease ended";
    }

    /** An event's time by Redis's clock: its worker's wall clock through the offset of the life it was written in. */
    private long cluster(Ev e) {
        Life life = lifeAt(e.worker(), e.ts());
        return e.ts() + (life == null ? 0 : life.offset());
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
        JobDefinition own = runDef(def, run.started(), slot); // the grace of the worker that started it (a rollout may differ)
        long grace = manual ? Math.max(own.misfireGrace().toMillis(), JobDefinition.MANUAL_GRACE.toMillis()) : own.misfireGrace().toMillis();
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

    /** Each run told its lease was lost must end within the stop allowance, by its worker's own clock. */
    private void leaseStops(String job, long slot, List<Ev> events) {
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
            Life life = lifeAt(lost.worker(), lost.ts());
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

    /** Lists vanished workers (within the window) for the report. */
    void workers() {
        lives.stream().filter(l -> l.vanished() && l.lastSeenCluster() <= to).sorted(Comparator.comparingLong(Life::lastSeen))
                .forEach(l -> report.vanished.add(l.worker() + " (started " + Instant.ofEpochMilli(l.start()) + ", last event "
                        + Instant.ofEpochMilli(l.lastSeen()) + ", no worker_stopped): silent slots up to " + VANISHED_REACH_MS
                        + " ms after its last event are unverified, not blamed"));
    }

    /**
     * The definition the worker that logged {@code started} had in force for {@code slot} (its config by its
     * {@code config_hash}); {@code fallback} when the log cannot say. A run is judged by its own worker's lease and
     * grace: in a rollout they differ from worker to worker.
     */
    private JobDefinition runDef(JobDefinition fallback, Ev started, long slot) {
        Life life = started == null ? null : lifeAt(started.worker(), started.ts());
        Targets.Target t = life == null ? null : targets.of(life, fallback.name(), slot);
        return t != null && t.def() != null ? t.def() : fallback;
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
