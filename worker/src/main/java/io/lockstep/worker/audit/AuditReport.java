package io.lockstep.worker.audit;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.PrintWriter;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What {@link Audit} found: the counts of the summary, each violation with the events that show
 * it, and what the log cannot settle (unverified, with a reason; not blamed). {@link #holds()} is
 * the exit code's question; {@code --strict} asks {@link #unverifiedCount()} too.
 */
public final class AuditReport {

    /** The checks, in the order the summary lists them; each is a heading in docs/GUARANTEES.md. */
    public static final List<String> CHECKS = List.of("silent-slot", "second-run", "token-order", "start-order", "start-time",
            "lease-stop", "contradiction");

    /** At most this many violations are printed in full per check; every one is counted. */
    static final int SHOWN_PER_CHECK = 20;

    /** One broken promise: the check, the slot, what is wrong, and the events that show it. */
    public record Violation(String check, String job, Instant slot, String message, List<String> events) {}

    /** A slot (or a run) whose fate the log cannot show, and why: unverified, not a violation. */
    public record Unverified(String job, Instant slot, String reason) {}

    Instant from, to;
    long lines, events, skippedLines, duplicates, unreadable;
    long slotsChecked, startedOnce, rerunSlots, unattended, manualRuns, outsideSchedule, backfilledRuns;
    final Map<String, Long> reported = new TreeMap<>();
    final Map<String, Long> violationsByCheck = new LinkedHashMap<>();
    final List<Violation> violations = new ArrayList<>();
    final List<Unverified> unverified = new ArrayList<>();
    final List<String> vanished = new ArrayList<>();
    final List<String> notes = new ArrayList<>();

    AuditReport() {
        CHECKS.forEach(c -> violationsByCheck.put(c, 0L));
    }

    void violation(String check, String job, long slot, String message, List<Ev> shown) {
        violationsByCheck.merge(check, 1L, Long::sum);
        violations.add(new Violation(check, job, Instant.ofEpochMilli(slot), message, shown.stream().map(Ev::describe).toList()));
    }

    void unverified(String job, long slot, String reason) {
        unverified.add(new Unverified(job, Instant.ofEpochMilli(slot), reason));
    }

    void reported(String why) {
        reported.merge(why, 1L, Long::sum);
    }

    /** Whether every check held. */
    public boolean holds() {
        return violations.isEmpty();
    }

    public List<Violation> violations() {
        return List.copyOf(violations);
    }

    public List<Unverified> unverified() {
        return List.copyOf(unverified);
    }

    /** How many slots (or runs) the log cannot settle. */
    public long unverifiedCount() {
        return unverified.size();
    }

    public Map<String, Long> violationsByCheck() {
        return Map.copyOf(violationsByCheck);
    }

    public long slotsChecked() {
        return slotsChecked;
    }

    public long events() {
        return events;
    }

    /** The summary table, then each violation with its events; the unverified slots counted by reason. */
    public void print(PrintWriter out) {
        print(out, false);
    }

    /** The same; {@code verbose} lists every unverified slot with its reason. */
    public void print(PrintWriter out, boolean verbose) {
        out.printf("window      %s .. %s%n", from, to);
        out.printf("input       %,d lines: %,d events, %,d other lines skipped, %,d repeated events ignored%s%n", lines, events,
                skippedLines, duplicates, unreadable > 0 ? ", " + unreadable + " events without a readable job or slot" : "");
        out.printf("slots       %,d checked: %,d started once, %,d rerun after a lost lease, %,d reported, %,d with no worker running, %,d unverified%n",
                slotsChecked, startedOnce, rerunSlots, reported.values().stream().mapToLong(Long::longValue).sum(), unattended, unverified.size());
        if (!reported.isEmpty()) {
            out.printf("reported    %s%n", String.join(", ", reported.entrySet().stream().map(e -> e.getKey() + " " + e.getValue()).toList()));
        }
        if (manualRuns > 0 || outsideSchedule > 0 || backfilledRuns > 0) {
            out.printf("other       %,d manual runs; %,d backfilled slots (checked wherever they lie); %,d slots outside the config's schedule%n",
                    manualRuns, backfilledRuns, outsideSchedule);
        }
        out.println();
        out.println("CHECK          RESULT");
        violationsByCheck.forEach((check, n) -> out.printf("%-14s %s%n", check, n == 0 ? "holds" : n + (n == 1 ? " violation" : " violations")));
        out.printf("%-14s %s%n", "unverified", unverified.isEmpty() ? "none" : unverified.size() + " (the log cannot show their fate; not blamed"
                + (verbose ? "; listed below)" : "; --verbose lists them)"));
        Map<String, Integer> shown = new TreeMap<>();
        for (Violation v : violations) {
            if (shown.merge(v.check(), 1, Integer::sum) > SHOWN_PER_CHECK) {
                continue;
            }
            out.println();
            out.printf("VIOLATION %s: %s @ %s: %s%n", v.check(), v.job(), v.slot(), v.message());
            v.events().forEach(e -> out.println("    " + e));
        }
        shown.forEach((check, n) -> {
            if (n > SHOWN_PER_CHECK) {
                out.printf("%n(%d more %s violations not shown; --json lists them all)%n", n - SHOWN_PER_CHECK, check);
            }
        });
        if (!unverified.isEmpty()) {
            out.println();
            if (verbose) {
                unverified.forEach(u -> out.printf("unverified: %s @ %s: %s%n", u.job(), u.slot(), u.reason()));
            } else {
                Map<String, Long> byReason = new TreeMap<>();
                unverified.forEach(u -> byReason.merge(kind(u.reason()), 1L, Long::sum));
                byReason.forEach((why, n) -> out.printf("unverified: %,d %s%n", n, why));
            }
        }
        vanished.forEach(v -> out.println("vanished: " + v));
        notes.forEach(n -> out.println("note: " + n));
        out.println();
        out.println(holds() ? "every check holds" : violations.size() + (violations.size() == 1 ? " violation" : " violations"));
    }

    /** A reason without its names and numbers, to count the unverified by kind. */
    static String kind(String reason) {
        return reason.replaceAll("[0-9a-f]{16}", "<hash>").replaceAll("\\d{4}-\\d\\d-\\d\\dT[0-9:.]+Z", "<time>")
                .replaceAll("-?\\d+ ms", "N ms").replaceAll("all its \\d+", "all its N");
    }

    /** The same as one JSON document (every unverified slot listed). */
    public String toJson() {
        ObjectMapper mapper = new ObjectMapper();
        ObjectNode root = mapper.createObjectNode();
        root.put("holds", holds());
        root.putObject("window").put("from", String.valueOf(from)).put("to", String.valueOf(to));
        root.putObject("input").put("lines", lines).put("events", events).put("skippedLines", skippedLines)
                .put("repeatedEvents", duplicates).put("unreadableEvents", unreadable);
        ObjectNode slots = root.putObject("slots").put("checked", slotsChecked).put("startedOnce", startedOnce)
                .put("rerun", rerunSlots).put("noWorkerRunning", unattended).put("unverified", unverified.size()).put("manualRuns", manualRuns).put("backfilledRuns", backfilledRuns)
                .put("outsideSchedule", outsideSchedule);
        ObjectNode rep = slots.putObject("reported");
        reported.forEach(rep::put);
        ObjectNode checks = root.putObject("checks");
        violationsByCheck.forEach(checks::put);
        ArrayNode vs = root.putArray("violations");
        for (Violation v : violations) {
            ObjectNode o = vs.addObject().put("check", v.check()).put("job", v.job()).put("slot", v.slot().toString())
                    .put("message", v.message());
            v.events().forEach(o.putArray("events")::add);
        }
        ArrayNode us = root.putArray("unverified");
        unverified.forEach(u -> us.addObject().put("job", u.job()).put("slot", u.slot().toString()).put("reason", u.reason()));
        vanished.forEach(root.putArray("vanished")::add);
        notes.forEach(root.putArray("notes")::add);
        return root.toString();
    }
}
