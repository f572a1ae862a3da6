package io.lockstep.worker;

import io.lockstep.redis.RedisAdmin;
import io.lockstep.scheduler.config.Durations;
import io.lockstep.scheduler.config.LockstepConfig;
import io.lockstep.scheduler.lock.WorkerInfo;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code trigger --config FILE --job NAME [--wait] [--timeout D]}: one extra run now. The request
 * goes into Redis; every worker that runs the job hears of it with its next heartbeat (within
 * {@link WorkerInfo#HEARTBEAT_INTERVAL}) and claims it through the same script as a slot, so
 * exactly one runs it, with a fencing token, under the job's overlap policy (even while the job is
 * paused). {@code --wait} prints the outcome. Exit 0 (with {@code --wait}: it succeeded), 3 when it
 * failed, timed out, was lost or refused, or nothing ran it within the timeout.
 */
@Command(name = "trigger", mixinStandardHelpOptions = true,
        description = "Runs a job once now, on exactly one worker; --wait prints how it ended.")
final class TriggerCommand extends AdminCommand {

    static final int RUN_FAILED = 3;

    @Option(names = "--job", required = true, paramLabel = "NAME", description = "the job")
    String job;

    @Option(names = "--wait", description = "wait for the outcome and exit by it")
    boolean await;

    @Option(names = "--timeout", paramLabel = "D", defaultValue = "2m", description = "how long --wait waits (default: ${DEFAULT-VALUE})")
    String timeout;

    @Option(names = "--json", description = "one JSON document: job, slot, and with --wait state, outcome, worker, fencingToken")
    boolean json;

    @Override
    int run(LockstepConfig config, RedisAdmin admin, PrintWriter out, PrintWriter err) {
        if (!knows(config, job)) {
            return unknownJob(config, job, err);
        }
        Optional<Duration> limit = Durations.parse(timeout);
        if (limit.isEmpty() || limit.get().toMillis() < 1) {
            err.println("error: --timeout must be a positive duration such as 30s or 5m, but was \"" + timeout + "\"");
            return WorkerMain.BAD_INPUT;
        }
        Instant slot = admin.trigger(job, PauseCommand.operator());
        if (!json) {
            out.println("requested a manual run of " + job + " (slot " + slot + "); workers pick it up within "
                    + WorkerInfo.HEARTBEAT_INTERVAL.toSeconds() + " s");
        }
        if (!await) {
            if (json) {
                out.println(result(slot, Map.of(), "requested"));
            }
            return WorkerMain.OK;
        }
        long deadline = System.nanoTime() + limit.get().toNanos();
        Map<String, String> run = Map.of();
        while (System.nanoTime() < deadline) {
            run = admin.runOf(job, slot);
            String state = run.getOrDefault("state", "");
            if (!state.isEmpty() && !state.equals("running")) {
                if (json) {
                    out.println(result(slot, run, state));
                    return "succeeded".equals(run.get("outcome")) ? WorkerMain.OK : RUN_FAILED;
                }
                return ended(run, out);
            }
            try {
                Thread.sleep(200);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return WorkerMain.RUNTIME_FAILURE;
            }
        }
        if (json) {
            out.println(result(slot, run, run.isEmpty() ? "not_taken" : "still_running"));
        } else {
            out.println(run.isEmpty() ? "no worker took the run within " + timeout + " (is a worker running this job?)"
                    : "still running on " + run.get("worker") + " after " + timeout);
        }
        return RUN_FAILED;
    }

    /** {@code {"job","slot","state","outcome","worker","fencingToken"}}. */
    private String result(Instant slot, Map<String, String> run, String state) {
        com.fasterxml.jackson.databind.node.ObjectNode o = new com.fasterxml.jackson.databind.ObjectMapper().createObjectNode()
                .put("job", job).put("slot", slot.toString()).put("state", state)
                .put("outcome", run.get("outcome")).put("worker", run.get("worker"));
        if (run.containsKey("fence")) {
            o.put("fencingToken", Long.parseLong(run.get("fence")));
        }
        return o.toString();
    }

    private static int ended(Map<String, String> run, PrintWriter out) {
        String state = run.get("state");
        String outcome = state.equals("done") ? run.getOrDefault("outcome", "?") : state;
        String fence = run.getOrDefault("fence", "0");
        out.println(outcome + " on " + run.getOrDefault("worker", "?") + (fence.equals("0") ? "" : " (fencing token " + fence + ")")
                + (run.containsKey("why") ? ": " + Reasons.describe(run.get("why")) : ""));
        return outcome.equals("succeeded") ? WorkerMain.OK : RUN_FAILED;
    }
}
