package io.lockstep.redis;

import io.lockstep.scheduler.BackfillPlan;
import io.lockstep.scheduler.JobDefinition;
import io.lockstep.scheduler.config.Durations;
import io.lockstep.scheduler.lock.Backfill;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;

/**
 * What an operator may do to a job from a console (the worker's status page, the starter's
 * actuator endpoint): {@value #PAUSE} (params {@code note}, {@code for}), {@value #RESUME},
 * {@value #TRIGGER} and {@value #BACKFILL} (params {@code from}, {@code to}, {@code rate}), with
 * the checks of the CLI's commands, recorded through {@link RedisAdmin} with the user as
 * {@code by}, and each logged as one {@code operator_action} event ({@link #log}). Thread-safe.
 */
public final class OperatorActions {

    public static final String PAUSE = "pause";
    public static final String RESUME = "resume";
    public static final String TRIGGER = "trigger";
    public static final String BACKFILL = "backfill";
    public static final List<String> ALL = List.of(PAUSE, RESUME, TRIGGER, BACKFILL);

    /** The longest pause note taken. */
    public static final int MAX_NOTE = 200;

    private static final Logger EVENTS = LoggerFactory.getLogger("io.lockstep.events");

    private final RedisAdmin admin;
    private final Supplier<List<JobDefinition>> jobs;

    /** Actions on {@code jobs} (the definitions in force, read at each action) through {@code admin}. */
    public OperatorActions(RedisAdmin admin, Supplier<List<JobDefinition>> jobs) {
        this.admin = admin;
        this.jobs = jobs;
    }

    /**
     * Does {@code action} to {@code job} as {@code by}; answers what was done, in words.
     *
     * @throws IllegalArgumentException when the action, the job or a param is wrong (one line: the user's mistake)
     * @throws IllegalStateException when the job has a backfill running
     * @throws UnsupportedOperationException a backfill on Redlock
     * @throws io.lockstep.scheduler.lock.LockException when Redis failed (the action may or may not have been done)
     */
    public String perform(String action, String job, Map<String, String> params, String by) {
        if (!ALL.contains(action)) {
            throw new IllegalArgumentException("no action \"" + action + "\"; one of " + String.join(", ", ALL));
        }
        JobDefinition def = jobs.get().stream().filter(d -> d.name().equals(job)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("no job named \"" + job + "\" on this worker"));
        return switch (action) {
            case PAUSE -> pause(job, params, by);
            case RESUME -> admin.resume(job, by) ? "resumed" : "it was not paused";
            case TRIGGER -> "slot " + admin.trigger(job, by);
            default -> backfill(def, params, by);
        };
    }

    private String pause(String job, Map<String, String> params, String by) {
        String note = params.getOrDefault("note", "").strip();
        if (note.length() > MAX_NOTE) {
            throw new IllegalArgumentException("the note may be at most " + MAX_NOTE + " characters");
        }
        String length = params.getOrDefault("for", "").strip();
        Optional<Duration> until = Optional.empty();
        if (!length.isEmpty()) {
            try {
                until = Durations.parse(length).filter(d -> d.toMillis() >= 1);
            } catch (ArithmeticException e) { // 99999999999999d
                until = Optional.empty();
            }
            if (until.isEmpty()) {
                throw new IllegalArgumentException("for must be a positive duration such as 30s, 5m or 2h, but was \"" + length + "\"");
            }
        }
        admin.pause(job, note, until, by);
        return until.map(d -> "for " + Durations.format(d)).orElse("until resumed") + (note.isEmpty() ? "" : ": " + note);
    }

    private String backfill(JobDefinition job, Map<String, String> params, String by) {
        if (!job.enabled()) {
            throw new IllegalArgumentException(job.name() + " is disabled: no worker runs it to drive a backfill");
        }
        double perSecond = rate("rate", params.getOrDefault("rate", "10/s").strip());
        BackfillPlan plan = admin.backfillPlan(job, instant("from", params.getOrDefault("from", "").strip()),
                instant("to", params.getOrDefault("to", "").strip()));
        Backfill b = admin.backfill(plan, perSecond, by);
        return "backfill " + b.id() + ": " + plan.toRun() + " slot(s) to run from " + b.from() + " to " + b.to();
    }

    /**
     * Logs one {@code operator_action} event: {@code outcome} is {@code done} (INFO), {@code refused}
     * (WARN: a role, a token, a param) or {@code failed} (ERROR: Redis).
     */
    public static void log(String worker, String user, String role, String action, String job, String remote, String outcome,
            String detail) {
        Level level = outcome.equals("done") ? Level.INFO : outcome.equals("refused") ? Level.WARN : Level.ERROR;
        String j = printable(job);
        String d = printable(detail);
        EVENTS.atLevel(level).addKeyValue("event", "operator_action").addKeyValue("worker", worker).addKeyValue("user", user)
                .addKeyValue("role", role).addKeyValue("action", printable(action)).addKeyValue("job", j)
                .addKeyValue("outcome", outcome).addKeyValue("detail", d).addKeyValue("remote", remote)
                .log("{} {} {} by {}: {}", printable(action), j, outcome, user, d);
    }

    /** What a request sent, with its control characters shown as {@code ?}: no forged log line in a plain-text log. */
    private static String printable(String text) {
        return text == null ? "" : text.replaceAll("\\p{Cntrl}", "?");
    }

    /** An ISO-8601 instant ({@code 2026-12-01T10:00:00Z}, or with an offset). */
    public static Instant instant(String option, String text) {
        try {
            return Instant.parse(text);
        } catch (DateTimeParseException e) {
            try {
                return OffsetDateTime.parse(text).toInstant();
            } catch (DateTimeParseException e2) {
                throw new IllegalArgumentException(option + " must be an ISO-8601 instant such as 2026-12-01T10:00:00Z, but was \"" + text + "\"");
            }
        }
    }

    /** A backfill's rate: {@code 50/s} or {@code 50}, more than 0 and at most {@link Backfill#MAX_PER_SECOND}. */
    public static double rate(String option, String text) {
        String n = text.endsWith("/s") ? text.substring(0, text.length() - 2) : text;
        try {
            double r = Double.parseDouble(n);
            if (r > 0 && r <= Backfill.MAX_PER_SECOND) {
                return r;
            }
        } catch (NumberFormatException e) {
            // the message below
        }
        throw new IllegalArgumentException(option + " must be a number of slots a second, more than 0 and at most "
                + (int) Backfill.MAX_PER_SECOND + ", such as 50/s, but was \"" + text + "\"");
    }
}
