package io.lockstep.worker.audit;

import io.lockstep.scheduler.JobDefinition;
import io.lockstep.worker.audit.Ev.Type;
import io.lockstep.worker.audit.Ledger.Life;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * The check of a slot that no run took ("silent-slot"), apart from {@link Checks}' checks of the runs: it asks what the
 * log can say of a slot nobody started, which is a question about the workers alive around it (who answered for it,
 * who vanished or stopped near it, where the log was cut), not about fencing tokens. A slot reported with a reason
 * passes; a silent one is a violation only where a worker was running that answered for it, and unverified where the
 * log cannot tell.
 */
final class SilentSlots {

    /** A margin on a worker's start and a vanished worker's reach: a slot decided (claim answered, run started or reported) within this of it. */
    static final long DECIDE_MS = Audit.Options.START_LATENCY_MS;

    private final List<Life> lives;
    private final Targets targets;
    private final AuditReport report;
    private final long margin;

    SilentSlots(List<Life> lives, Targets targets, AuditReport report, long margin) {
        this.lives = lives;
        this.targets = targets;
        this.report = report;
        this.margin = margin;
    }

    /** A slot without a run: reported with a reason, or silent (a violation where a worker was running, unless one vanished near it). */
    void decidedWithoutRun(JobDefinition def, long slot, List<Ev> events, List<Ledger.Range> ranges) {
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
        List<Life> vanished = lives.stream().filter(l -> l.vanished() && l.lastSeenCluster() >= slot - Checks.VANISHED_REACH_MS
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

    private static String describe(List<Life> vanished) {
        return vanished.stream().map(l -> l.worker() + " (last event " + Instant.ofEpochMilli(l.lastSeen()) + ")").distinct()
                .collect(Collectors.joining(", "));
    }
}
