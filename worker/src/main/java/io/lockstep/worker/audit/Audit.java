package io.lockstep.worker.audit;

import io.lockstep.scheduler.JobDefinition;
import io.lockstep.scheduler.config.LockstepConfig;
import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * {@code lockstep audit}: reads a cluster's exported events and says whether the guarantees held,
 * in the spirit of Jepsen's Chronos checker: the config gives every slot that should have been
 * decided in the window (the targets), the events give what became of each (runs and reports),
 * and each check compares the two. Unlike Chronos, which matches runs to targets by time within
 * an epsilon, every event names its slot, so a run is matched to its slot exactly, and the
 * fencing tokens and Redis-time lateness the events carry let the checks see order and timing
 * by the store's clock rather than the hosts'.
 *
 * <p>Streaming: the input is read once and only the {@link Ev} fields the checks need are kept
 * (about 60 bytes an event). The checks then go job by job.
 */
public final class Audit {

    /**
     * How the audit reads time.
     *
     * @param from the window's first slot, or null for the first event's time plus {@code margin}
     * @param to the window's last slot, or null for the last event's time less {@code margin}
     * @param margin the default window's cut at an end where the log was cut (it begins inside a worker's life, or
     *     ends while one still runs), or null for the longest {@code misfireGrace} of the enabled jobs plus 1 s: a slot near
     *     such an end may have been decided before the log began, or not yet when it ends
     * @param tolerance how far two clocks' readings may disagree: a start this much before its slot, or out of slot
     *     order by this much, is not a violation (the workers read Redis's clock over a network)
     * @param stopAllowance how long a run may take to stop once its worker told it that its lease was lost
     */
    public record Options(Instant from, Instant to, Duration margin, Duration tolerance, Duration stopAllowance) {
        public static final Duration DEFAULT_TOLERANCE = Duration.ofMillis(100);
        public static final Duration DEFAULT_STOP_ALLOWANCE = Duration.ofSeconds(2);
        /** A run is decided by Redis within misfireGrace; its thread then starts at once. This covers a busy host. */
        static final long START_LATENCY_MS = 1_000;

        public static Options defaults() {
            return new Options(null, null, null, DEFAULT_TOLERANCE, DEFAULT_STOP_ALLOWANCE);
        }
    }

    /** The input could not be read, or gave nothing to check: exit 2. */
    public static final class BadInput extends Exception {
        public BadInput(String message) {
            super(message);
        }
    }

    /** A default window (the events' span) longer than this is taken for a stray timestamp: --from/--to are asked for. */
    static final Duration LONGEST_DEFAULT_WINDOW = Duration.ofDays(31);

    private Audit() {}

    /** Reads {@code paths} ("-" for {@code stdin}) and checks them against {@code config}'s enabled jobs. */
    public static AuditReport run(List<String> paths, InputStream stdin, LockstepConfig config, Options options) throws BadInput {
        return run(paths, stdin, List.of(config), options);
    }

    /**
     * Reads {@code paths} ("-" for {@code stdin}) and checks them against the enabled jobs of the configs the workers had
     * in force: each worker's {@code config_hash} picks its config among {@code configs} (the first for a life that logged
     * none), so a log spanning a reload gets one verdict ({@link Targets}).
     */
    public static AuditReport run(List<String> paths, InputStream stdin, List<LockstepConfig> configs, Options options) throws BadInput {
        if (configs.isEmpty()) {
            throw new IllegalArgumentException("no config");
        }
        Ledger ledger = new Ledger();
        EventReader reader = new EventReader(ledger);
        try {
            reader.read(paths, stdin);
        } catch (IOException e) {
            throw new BadInput("cannot read " + e.getMessage());
        }
        if (reader.events == 0) {
            throw new BadInput("no Lockstep events in " + String.join(", ", paths) + " (" + reader.lines
                    + " lines read; each event is one JSON object with \"event\", \"worker\" and \"ts\")");
        }
        List<JobDefinition> jobs = configs.stream().flatMap(c -> c.jobs().stream()).filter(JobDefinition::enabled).toList();
        String sources = String.join(", ", configs.stream().map(c -> String.valueOf(c.source())).distinct().toList());
        Duration margin = options.margin() != null ? options.margin()
                : jobs.stream().map(JobDefinition::misfireGrace).max(Duration::compareTo).orElse(Duration.ZERO).plusSeconds(1);
        // The margin guards an end where the log was cut: it began inside a worker's life, or ends while one still ran.
        List<Ledger.Life> lives = ledger.lives();
        boolean cutAtStart = lives.stream().anyMatch(Ledger.Life::begunBefore);
        boolean cutAtEnd = lives.stream().anyMatch(l -> l.vanished() && l.lastSeen() > ledger.maxTs - margin.toMillis());
        // The workers' lives by Redis time (each through its clock offset), not their raw times: a stepped host clock moves those.
        long first = lives.stream().mapToLong(Ledger.Life::startCluster).min().orElse(ledger.minTs);
        long last = lives.stream().mapToLong(l -> l.vanished() ? l.lastSeenCluster() : l.endCluster()).max().orElse(ledger.maxTs);
        Instant from = options.from() != null ? options.from() : Instant.ofEpochMilli(first).plus(cutAtStart ? margin : Duration.ZERO);
        Instant to = options.to() != null ? options.to() : Instant.ofEpochMilli(last).minus(cutAtEnd ? margin : Duration.ZERO);
        if (from.isAfter(to)) {
            throw new BadInput("the window is empty: " + from + " .. " + to + " (the workers' events span " + Instant.ofEpochMilli(first)
                    + " .. " + Instant.ofEpochMilli(last) + (cutAtStart || cutAtEnd ? ", less a margin of " + margin.toMillis()
                    + " ms where the log was cut" : "") + "); pass --from and --to" + (cutAtStart || cutAtEnd ? ", or a smaller --margin" : ""));
        }
        AuditReport report = new AuditReport();
        report.from = from;
        report.to = to;
        report.lines = reader.lines;
        report.events = reader.events;
        report.skippedLines = reader.skipped;
        report.duplicates = ledger.duplicates;
        report.unreadable = ledger.unreadableSlots;
        if ((options.from() == null || options.to() == null) && Duration.between(from, to).compareTo(LONGEST_DEFAULT_WINDOW) > 0) {
            throw new BadInput("the events span " + from + " .. " + to + ", longer than " + LONGEST_DEFAULT_WINDOW.toDays()
                    + " days: a stray timestamp? pass --from and --to");
        }
        Targets targets = new Targets(configs);
        targets.see(lives);
        Checks checks = new Checks(ledger, lives, report, options, from.toEpochMilli(), to.toEpochMilli(), margin.toMillis(), targets);
        Set<String> known = new TreeSet<>(targets.known());
        targets.jobs().forEach(checks::job);
        // Each worker's instance of an every-worker job: checked against that worker's lives alone (no peer answers for it).
        Set<String> workerIds = new TreeSet<>();
        lives.forEach(l -> workerIds.add(l.worker()));
        for (String job : targets.everyWorker()) {
            for (String worker : workerIds) {
                String instance = io.lockstep.scheduler.RunOn.instance(job, worker);
                known.add(instance);
                new Checks(ledger, lives.stream().filter(l -> l.worker().equals(worker)).toList(), report, options, from.toEpochMilli(),
                        to.toEpochMilli(), margin.toMillis(), targets).job(instance);
            }
        }
        checks.workers();
        if (!targets.notGiven.isEmpty()) {
            report.notes.add("the workers logged config_hash " + String.join(", ", targets.notGiven) + ", which no --config matches"
                    + " (given: " + String.join(", ", configs.stream().map(c -> c.source() + " = " + Targets.hash(c)).toList())
                    + "): the slots only those configs could say are unverified; pass each config the workers ran");
        }
        if (report.slotsChecked == 0) {
            throw new BadInput("no slot of an enabled job of " + sources + " lies in the window " + from + " .. " + to
                    + (ledger.slots.isEmpty() ? "" : " (the events name " + String.join(", ", new TreeSet<>(ledger.slots.keySet())) + ")")
                    + ": nothing to check; is it the workers' config, and the right window?");
        }
        Set<String> unknown = new TreeSet<>(ledger.slots.keySet());
        unknown.removeAll(known);
        if (!unknown.isEmpty()) {
            report.notes.add("events of jobs not in " + sources + " were not checked: " + String.join(", ", unknown));
        }
        return report;
    }
}
