package io.lockstep.worker;

import io.lockstep.redis.RedisAdmin;
import io.lockstep.scheduler.BackfillPlan;
import io.lockstep.scheduler.JobDefinition;
import io.lockstep.scheduler.config.LockstepConfig;
import io.lockstep.scheduler.lock.Backfill;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code backfill --config FILE JOB --from T1 --to T2 [--rate N/s] [--dry-run] [--detach]} and
 * {@code backfill --config FILE --cancel JOB}: every slot of the job's schedule in the range that
 * nobody decided runs once, in slot order, at most N a second, on the workers (one of them drives
 * it; another takes over if it dies). Slots already decided are left alone and counted. The range
 * is checked first: not in the future, not older than what Redis can still tell of the job's slots
 * (a slot before that may have run, and would run again). Without {@code --detach} it follows the
 * backfill with a progress bar until it ends; Ctrl-C leaves it running. Exit 0 when it is done (or
 * requested, with {@code --detach}, or for a dry run), 2 for bad input, 3 when it was cancelled.
 */
@Command(name = "backfill", mixinStandardHelpOptions = true,
        description = "Runs the slots of a past range that nobody decided, once each, in order; --cancel stops one.")
final class BackfillCommand extends AdminCommand {

    static final int CANCELLED = 3;
    /** How long a follower waits for the driver's last word after it saw the backfill cancelled. */
    private static final Duration CANCEL_WAIT = Duration.ofSeconds(5);

    @Parameters(index = "0", arity = "0..1", paramLabel = "JOB", description = "the job")
    String job;

    @Option(names = "--cancel", paramLabel = "JOB", description = "cancel the job's backfill: no slot is claimed for it any more")
    String cancel;

    @Option(names = "--from", paramLabel = "T1", description = "first instant of the range, ISO-8601 (2026-12-01T00:00:00Z)")
    String from;

    @Option(names = "--to", paramLabel = "T2", description = "last instant of the range, ISO-8601; not in the future")
    String to;

    @Option(names = "--rate", paramLabel = "N/s", defaultValue = "10/s", description = "at most this many slots a second (default: ${DEFAULT-VALUE})")
    String rate;

    @Option(names = "--dry-run", description = "say what it would run; change nothing")
    boolean dryRun;

    @Option(names = "--detach", description = "request it and return; follow it with status")
    boolean detach;

    @Override
    int run(LockstepConfig config, RedisAdmin admin, PrintWriter out, PrintWriter err) {
        if (cancel != null) {
            return cancel(config, admin, out, err);
        }
        if (job == null || from == null || to == null) {
            err.println("error: backfill needs JOB, --from and --to (or --cancel JOB)");
            return WorkerMain.BAD_INPUT;
        }
        Optional<JobDefinition> def = config.jobs().stream().filter(j -> j.name().equals(job)).findFirst();
        if (def.isEmpty()) {
            return unknownJob(config, job, err);
        }
        if (!def.get().enabled()) {
            err.println("error: " + job + " is disabled in " + config.source() + ": no worker runs it to drive a backfill");
            return WorkerMain.BAD_INPUT;
        }
        double perSecond;
        BackfillPlan plan;
        try {
            perSecond = rate(rate);
            plan = admin.backfillPlan(def.get(), instant("--from", from), instant("--to", to));
        } catch (IllegalArgumentException | UnsupportedOperationException e) {
            err.println("error: " + e.getMessage());
            return WorkerMain.BAD_INPUT;
        }
        List<Instant> slots = plan.slots();
        String leftToSchedule = plan.leftToSchedule() == 0 ? "" : "; " + plan.leftToSchedule()
                + " newer slot(s), within misfireGrace, are the schedule's";
        if (dryRun) {
            out.println("dry run: " + job + " has " + slots.size() + " slot(s) from " + slots.get(0) + " to " + plan.to() + ": "
                    + plan.decided().size() + " already decided (left alone), " + plan.excluded() + " excluded by its calendars; would run "
                    + plan.toRun() + (plan.toRun() == 0 ? "" : " at most " + format(perSecond) + "/s (about " + about(plan.toRun() / perSecond) + ")")
                    + leftToSchedule);
            return WorkerMain.OK;
        }
        Backfill b;
        try {
            b = admin.backfill(plan, perSecond, PauseCommand.operator());
        } catch (IllegalStateException | UnsupportedOperationException e) {
            err.println("error: " + e.getMessage());
            return WorkerMain.BAD_INPUT;
        }
        out.println("backfill " + b.id() + " of " + job + ": " + slots.size() + " slot(s) from " + slots.get(0) + " to " + plan.to()
                + ", " + plan.decided().size() + " already decided, " + plan.toRun() + " to run at most " + format(perSecond)
                + "/s; workers pick it up within " + io.lockstep.scheduler.lock.WorkerInfo.HEARTBEAT_INTERVAL.toSeconds() + " s"
                + leftToSchedule);
        if (detach) {
            return WorkerMain.OK;
        }
        out.println("following it (Ctrl-C leaves it running; lockstep backfill --cancel " + job + " stops it)");
        out.flush();
        return follow(admin, b, slots.size(), out);
    }

    /** Prints a progress bar until the backfill ends; answers the exit code. */
    private int follow(RedisAdmin admin, Backfill b, int total, PrintWriter out) {
        boolean terminal = System.console() != null;
        long lastTenth = -1;
        long startedNanos = System.nanoTime();
        boolean warned = false;
        long cancelSeen = Long.MAX_VALUE;
        while (true) {
            Optional<Backfill.Entry> e = admin.backfills().stream().filter(x -> x.backfill().id().equals(b.id())).findFirst();
            Backfill.Progress p = e.map(Backfill.Entry::progress).orElse(null);
            if (p == null && !warned && System.nanoTime() - startedNanos > Duration.ofSeconds(15).toNanos()) {
                out.println("no worker has picked it up yet: is a worker that runs " + b.job() + " running?");
                out.flush();
                warned = true;
            }
            if (p != null) {
                String line = bar(p, total);
                long tenth = p.passed() * 10 / Math.max(total, 1);
                if (terminal) {
                    out.print("\r" + line);
                    out.flush();
                } else if (tenth != lastTenth || p.ended()) {
                    out.println(line);
                    out.flush();
                }
                lastTenth = tenth;
                if (p.ended()) {
                    if (terminal) {
                        out.println();
                    }
                    out.println(b.job() + ": backfill " + p.state() + ": ran " + p.ran() + ", already decided " + p.decided()
                            + ", excluded by calendars " + p.skipped());
                    return p.state().equals("done") ? WorkerMain.OK : CANCELLED; // cancelled, or interrupted (its mark lost)
                }
            }
            if (e.isPresent() && e.get().backfill().cancelled() && (p == null || System.nanoTime() - cancelSeen > CANCEL_WAIT.toNanos())) {
                if (terminal && p != null) {
                    out.println();
                }
                out.println(b.job() + ": backfill cancelled" + (p == null ? " before a worker picked it up"
                        : ": ran " + p.ran() + ", already decided " + p.decided() + ", excluded by calendars " + p.skipped()));
                return CANCELLED;
            }
            if (e.isEmpty() && System.nanoTime() - startedNanos > Duration.ofSeconds(5).toNanos()) {
                // Gone from Redis: a newer request replaced it (after a cancel), or Redis lost it (a restart).
                out.println(b.job() + ": the backfill's request is no longer in Redis (replaced by a newer one, or lost by a restart);"
                        + " lockstep status shows what there is");
                return WorkerMain.RUNTIME_FAILURE;
            }
            if (e.isPresent() && e.get().backfill().cancelled() && cancelSeen == Long.MAX_VALUE) {
                cancelSeen = System.nanoTime(); // its driver says so at its next heartbeat: wait for that, a little
            }
            try {
                Thread.sleep(500); // a person watching: no Redis load worth a push channel
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
                return WorkerMain.RUNTIME_FAILURE;
            }
        }
    }

    /** {@code [#########...........]  120/300  ran 100, decided 20}. */
    static String bar(Backfill.Progress p, int total) {
        int width = 30;
        int filled = (int) Math.min(width, p.passed() * width / Math.max(total, 1));
        return "[" + "#".repeat(filled) + ".".repeat(width - filled) + "] " + p.passed() + "/" + total + "  ran " + p.ran()
                + ", decided " + p.decided() + (p.skipped() > 0 ? ", skipped " + p.skipped() : "") + "  (" + p.driver() + ")";
    }

    private int cancel(LockstepConfig config, RedisAdmin admin, PrintWriter out, PrintWriter err) {
        if (!knows(config, cancel)) {
            return unknownJob(config, cancel, err);
        }
        Optional<Backfill> b;
        try {
            b = admin.cancelBackfill(cancel);
        } catch (UnsupportedOperationException e) {
            err.println("error: " + e.getMessage());
            return WorkerMain.BAD_INPUT;
        }
        if (b.isEmpty()) {
            out.println(cancel + " has no backfill running");
        } else {
            out.println("cancelled the backfill " + b.get().id() + " of " + cancel + " (" + b.get().from() + " to " + b.get().to()
                    + "): no slot is claimed for it any more");
        }
        return WorkerMain.OK;
    }

    static Instant instant(String option, String text) {
        return io.lockstep.redis.OperatorActions.instant(option, text);
    }

    static double rate(String text) {
        return io.lockstep.redis.OperatorActions.rate("--rate", text);
    }

    /** {@code seconds} as a person says a duration: "15 s", "4 min", "2 h". */
    private static String about(double seconds) {
        long s = (long) Math.ceil(seconds);
        return s < 120 ? s + " s" : s < 7_200 ? Math.round(s / 60.0) + " min" : Math.round(s / 3_600.0) + " h";
    }

    private static String format(double perSecond) {
        return perSecond == Math.rint(perSecond) ? Long.toString((long) perSecond) : Double.toString(perSecond);
    }
}
