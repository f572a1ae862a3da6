package io.lockstep.worker;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import io.lockstep.redis.RedisAdmin;
import io.lockstep.scheduler.config.LockstepConfig;
import java.io.PrintWriter;
import java.time.Instant;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code history --config FILE --job NAME [--limit N] [--json]}: the job's recent slots, newest
 * first: each run's outcome, and each slot decided without a run (missed, skipped, paused,
 * abandoned, recovered) with why. For an every-worker job, the instances of the live workers merged
 * (each entry names its worker); {@code --job JOB@WORKER} shows one worker's instance.
 */
@Command(name = "history", mixinStandardHelpOptions = true,
        description = "Shows what became of a job's recent slots, newest first: runs, and slots missed, skipped, paused, abandoned or recovered, with why.")
final class HistoryCommand extends AdminCommand {

    @Option(names = "--job", required = true, paramLabel = "NAME", description = "the job")
    String job;

    @Option(names = "--limit", paramLabel = "N", defaultValue = "20", description = "at most this many entries, runs and slots decided without one (default: ${DEFAULT-VALUE})")
    int limit;

    @Option(names = "--json", description = "one JSON document instead of a table")
    boolean json;

    @Override
    int run(LockstepConfig config, RedisAdmin admin, PrintWriter out, PrintWriter err) {
        String base = io.lockstep.scheduler.RunOn.jobOf(job); // an every-worker job's instance: <job>@<worker id>
        java.util.Optional<io.lockstep.scheduler.JobDefinition> def = config.jobs().stream().filter(d -> d.name().equals(base)).findFirst();
        if (def.isEmpty() || !base.equals(job) && !def.get().runOn().everyWorker()) {
            return unknownJob(config, job, err);
        }
        if (limit < 1) {
            err.println("error: --limit must be at least 1, but was " + limit);
            return WorkerMain.BAD_INPUT;
        }
        List<RedisAdmin.Run> runs;
        if (base.equals(job) && def.get().runOn().everyWorker()) {
            // Each live worker runs its own instance: their histories, merged newest first (--job JOB@WORKER for one).
            runs = admin.workers().stream().flatMap(w -> admin.history(io.lockstep.scheduler.RunOn.instance(job, w.id()), limit).stream())
                    .sorted(java.util.Comparator.comparing(RedisAdmin.Run::slot).reversed()).limit(limit).toList();
        } else {
            runs = admin.history(job, limit);
        }
        // A job with jitter: its slots are its cron's fire times plus this stable offset (by the config given).
        long offset = config.jobs().stream().filter(d -> d.name().equals(job)).findFirst()
                .map(d -> d.schedule().offset().toMillis()).orElse(0L);
        List<RedisAdmin.Action> actions;
        try {
            actions = admin.actions(base, limit);
        } catch (RuntimeException e) { // the runs are the command's answer; who did what is extra
            actions = List.of();
            err.println("warning: the operator actions of " + base + " could not be read: " + e.getMessage());
        }
        // Who asked for each manual run (a trigger's record names its slot).
        java.util.Map<String, String> askedBy = new java.util.HashMap<>();
        actions.stream().filter(a -> a.action().equals("trigger") && !a.by().isEmpty()).forEach(a -> askedBy.putIfAbsent(a.detail(), a.by()));
        if (json) {
            ObjectMapper mapper = new ObjectMapper();
            ArrayNode array = mapper.createArrayNode();
            for (RedisAdmin.Run r : runs) {
                array.addObject().put("slot", r.slot().toString()).put("worker", r.worker()).put("outcome", r.outcome())
                        .put("attempt", r.attempt()).put("fencingToken", r.fencingToken()).put("durationMs", r.durationMs())
                        .put("error", r.error()).put("manual", r.manual()).put("reason", r.reason());
                if (r.manual() && askedBy.containsKey(r.slot().toString())) {
                    ((com.fasterxml.jackson.databind.node.ObjectNode) array.get(array.size() - 1)).put("by", askedBy.get(r.slot().toString()));
                }
                if (!r.origin().isEmpty()) {
                    ((com.fasterxml.jackson.databind.node.ObjectNode) array.get(array.size() - 1)).put("origin", r.origin());
                }
                if (offset > 0) {
                    ((com.fasterxml.jackson.databind.node.ObjectNode) array.get(array.size() - 1)).put("jitterOffsetMs", offset);
                }
            }
            out.println(array.toString());
            return WorkerMain.OK;
        }
        if (runs.isEmpty()) {
            out.println("no runs of " + job + " recorded yet");
            printActions(actions, out);
            return WorkerMain.OK;
        }
        Instant now = Instant.ofEpochMilli(admin.serverTimeMillis());
        config.jobs().stream().filter(d -> d.name().equals(job) && !d.schedule().jitter().isZero()).findFirst()
                .ifPresent(d -> out.println(job + ": " + Configs.schedule(d.schedule()) + ", so each slot is a fire time plus "
                        + io.lockstep.scheduler.config.Durations.format(d.schedule().offset())));
        Table table = new Table("SLOT", "WHEN", "WORKER", "OUTCOME", "ATTEMPT", "TOKEN", "DURATION", "WHY / ERROR");
        for (RedisAdmin.Run r : runs) {
            // A decision without a run (missed, skipped, paused, abandoned, recovered) says why; a run its error.
            String why = r.isRun() ? r.error() : String.join("; ", java.util.stream.Stream.of(Reasons.describe(r.reason()),
                    r.error().isEmpty() ? "" : "replaced the " + r.error()).filter(w -> !w.isEmpty()).toList());
            table.row(r.slot().toString() + (r.manual() ? " (manual" + (askedBy.containsKey(r.slot().toString())
                    ? ", by " + askedBy.get(r.slot().toString()) : "") + ")" : r.origin().isEmpty() ? "" : " (" + r.origin() + ")"), relative(r.slot(), now), r.worker(), r.outcome(),
                    r.isRun() ? Integer.toString(r.attempt()) : "-", r.fencingToken() == 0 ? "-" : Long.toString(r.fencingToken()),
                    r.isRun() ? r.durationMs() + " ms" : "-", why);
        }
        table.print(out);
        printActions(actions, out);
        return WorkerMain.OK;
    }

    /** What operators did to the job (pause, resume, trigger, backfill), newest first, with who. */
    private static void printActions(List<RedisAdmin.Action> actions, PrintWriter out) {
        if (actions.isEmpty()) {
            return;
        }
        out.println();
        out.println("operator actions, newest first:");
        Table table = new Table("AT", "ACTION", "BY", "DETAIL");
        for (RedisAdmin.Action a : actions) {
            table.row(a.at().toString(), a.action(), a.by().isEmpty() ? "-" : a.by(), a.detail());
        }
        table.print(out);
    }
}
