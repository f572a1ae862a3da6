package io.lockstep.worker;

import io.lockstep.scheduler.config.Durations;
import io.lockstep.scheduler.config.LockstepConfig;
import io.lockstep.worker.audit.Audit;
import io.lockstep.worker.audit.AuditReport;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code audit --config FILE [--config FILE2...] [--from T] [--to T] [--json] [--verbose] [--strict] LOG...}: checks a
 * cluster's exported events against the guarantees (docs/GUARANTEES.md, "What audit checks"). Needs no Redis and no
 * job classes. Several configs (a log spanning a reload) are matched to the workers by the {@code config_hash} they
 * log. Exit 0 when every check holds, 4 when one does not (or, with {@code --strict}, when a slot is unverified), 2 for
 * bad usage or input that cannot be read.
 */
@Command(name = "audit", mixinStandardHelpOptions = true,
        description = {"Checks a cluster's exported JSON events (files, directories, .gz, or - for stdin) against the guarantees:",
                "every slot in the window started once or reported with a reason, reruns only after a lost lease, tokens and starts",
                "in slot order, starts on time by Redis's clock, runs that stop when their lease is lost, no contradicting events.",
                "Exit 0: every check holds; 4: one does not (with --strict, or a slot is unverified); 2: bad usage or unreadable input."})
final class AuditCommand implements Callable<Integer> {

    /** A check did not hold. */
    static final int VIOLATED = 4;

    @Spec
    CommandSpec spec;

    /** Where stdin ("-") is read from; a test's stream, or System.in. */
    InputStream stdin = System.in;

    @Option(names = "--config", required = true, paramLabel = "FILE",
            description = {"the YAML file the workers ran (its enabled jobs' slots are checked); repeat it for a log spanning a reload:",
                    "each worker's config_hash picks its file (the first for a worker that logged none)"})
    List<Path> configs;

    @Parameters(arity = "1..*", paramLabel = "LOG", description = "files or directories of event lines (.gz read as gzip); - for stdin")
    List<String> logs;

    @Option(names = "--from", paramLabel = "T", description = "the window's first slot (ISO-8601, 2026-12-01T10:00:00Z); default: the first event's time (plus --margin if the log begins inside a worker's life)")
    String from;

    @Option(names = "--to", paramLabel = "T", description = "the window's last slot; default: the last event's time (less --margin if a worker was still running when the log ends)")
    String to;

    @Option(names = "--margin", paramLabel = "D", description = "the default window's cut at an end where the log was cut (default: the longest misfireGrace plus 1s)")
    String margin;

    @Option(names = "--tolerance", paramLabel = "D", defaultValue = "100ms",
            description = "how far clock readings may disagree before a start counts early or out of order (default: ${DEFAULT-VALUE})")
    String tolerance;

    @Option(names = "--stop-allowance", paramLabel = "D", defaultValue = "2s",
            description = "how long a run may take to stop once told its lease was lost (default: ${DEFAULT-VALUE})")
    String stopAllowance;

    @Option(names = "--json", description = "one JSON document instead of the summary")
    boolean json;

    @Option(names = "--verbose", description = "list every unverified slot (whose fate the log cannot show) with its reason")
    boolean verbose;

    @Option(names = "--strict", description = "exit 4 when a slot is unverified, not only when a check does not hold")
    boolean strict;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        List<LockstepConfig> loaded = new java.util.ArrayList<>();
        for (Path config : configs) {
            Optional<LockstepConfig> one = Configs.load(config, err, false, false);
            if (one.isEmpty()) {
                return WorkerMain.BAD_INPUT;
            }
            loaded.add(one.get());
        }
        Audit.Options options;
        try {
            options = new Audit.Options(instant("--from", from), instant("--to", to), margin == null ? null : duration("--margin", margin),
                    duration("--tolerance", tolerance), duration("--stop-allowance", stopAllowance));
        } catch (IllegalArgumentException e) {
            err.println("error: " + e.getMessage());
            return WorkerMain.BAD_INPUT;
        }
        AuditReport report;
        try {
            report = Audit.run(logs, stdin, loaded, options);
        } catch (Audit.BadInput e) {
            err.println("error: " + e.getMessage());
            return WorkerMain.BAD_INPUT;
        }
        if (json) {
            out.println(report.toJson());
        } else {
            report.print(out, verbose);
        }
        out.flush();
        return report.holds() && !(strict && report.unverifiedCount() > 0) ? WorkerMain.OK : VIOLATED;
    }

    private static Instant instant(String option, String text) {
        if (text == null) {
            return null;
        }
        try {
            return Instant.parse(text);
        } catch (DateTimeParseException e) {
            throw new IllegalArgumentException(option + " must be an ISO-8601 instant such as 2026-12-01T10:00:00Z, but was \"" + text + "\"");
        }
    }

    private static Duration duration(String option, String text) {
        Optional<Duration> d = Durations.parse(text);
        if (d.isEmpty()) {
            throw new IllegalArgumentException(option + " must be a duration such as 100ms, 2s or 5m, but was \"" + text + "\"");
        }
        return d.get();
    }
}
