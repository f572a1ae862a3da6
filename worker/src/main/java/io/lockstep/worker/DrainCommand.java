package io.lockstep.worker;

import io.lockstep.redis.RedisAdmin;
import io.lockstep.scheduler.Scheduler;
import io.lockstep.scheduler.config.Durations;
import io.lockstep.scheduler.config.LockstepConfig;
import io.lockstep.scheduler.lock.WorkerInfo;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.Optional;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code drain --config FILE --worker ID [--within D] [--wait]}: asks one live worker to drain, as a
 * deploy script does before it stops a host: the worker stops claiming at its next heartbeat (about
 * 3 s), lets its running jobs finish within {@code --within} (default 1 h; a SIGTERM allows only
 * {@code worker.shutdownTimeout}), then exits 0. Its peers take the slots meanwhile. With
 * {@code --wait} the command returns when the worker has left the live list (exit 0), or exits 1 when
 * it is still there past the deadline plus a minute. The worker's own SIGUSR1 drains it the same way,
 * within the default.
 */
@Command(name = "drain", mixinStandardHelpOptions = true,
        description = "Asks a worker to stop claiming, finish its running jobs and exit (before a deploy stops it).")
final class DrainCommand extends AdminCommand {

    /** A live worker heartbeats every 3 s: one that has not shown {@code draining} after this did not take the request. */
    static final Duration TAKEN_WITHIN = Duration.ofSeconds(15);

    @Option(names = "--worker", required = true, paramLabel = "ID", description = "the worker's id (status lists them)")
    String worker;

    @Option(names = "--within", paramLabel = "D", description = "how long its running jobs may take (default 1h; 30s, 5m, 2h)")
    String within;

    @Option(names = "--wait", description = "return once the worker has left (exit 1 if it is still there past the deadline and a minute)")
    boolean await;

    @Override
    int run(LockstepConfig config, RedisAdmin admin, PrintWriter out, PrintWriter err) {
        Duration deadline = Scheduler.DEFAULT_DRAIN;
        if (within != null) {
            Optional<Duration> d = Durations.parse(within);
            if (d.isEmpty() || d.get().toMillis() < 1) {
                err.println("error: --within must be a positive duration such as 30s, 5m or 2h, but was \"" + within + "\"");
                return WorkerMain.BAD_INPUT;
            }
            deadline = d.get();
        }
        if (admin.workers().stream().noneMatch(w -> w.id().equals(worker))) {
            err.println("error: no live worker \"" + worker + "\" under key prefix " + config.redis().keyPrefix() + " (status lists them)");
            return WorkerMain.RUNTIME_FAILURE;
        }
        admin.drain(worker, deadline);
        out.println("asked " + worker + " to drain: it stops claiming within about 3 s, and exits once its running jobs end (at most "
                + Durations.format(deadline) + ")");
        if (!await) {
            return WorkerMain.OK;
        }
        long asked = System.nanoTime();
        long giveUp = asked + deadline.plusMinutes(1).toNanos();
        boolean taken = false;
        while (System.nanoTime() < giveUp) {
            Optional<WorkerInfo> info = admin.workers().stream().filter(w -> w.id().equals(worker)).findFirst();
            if (info.isEmpty()) {
                out.println(worker + " drained and left");
                return WorkerMain.OK;
            }
            taken |= info.get().draining();
            if (!taken && System.nanoTime() - asked > TAKEN_WITHIN.toNanos()) {
                err.println("error: " + worker + " did not take the drain request within " + TAKEN_WITHIN.toSeconds()
                        + " s (a worker older than drain, or its heartbeat's reply was lost): ask again");
                return WorkerMain.RUNTIME_FAILURE;
            }
            try {
                Thread.sleep(1_000); // polling the live list, an operator's command: not a test
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return WorkerMain.RUNTIME_FAILURE;
            }
        }
        err.println("error: " + worker + " is still live past the drain's deadline and a minute");
        return WorkerMain.RUNTIME_FAILURE;
    }
}
