package io.lockstep.examples;

import io.lockstep.scheduler.Job;
import io.lockstep.scheduler.JobContext;
import java.time.Duration;

/**
 * A small job for per-second schedules, demos and tests: it "works" for {@code params.workMillis}
 * (default 0) in steps of at most 50 ms, checking its lease between steps, so a lost lease or a
 * shutdown stops it promptly.
 */
public class HeartbeatJob implements Job {

    private static final long STEP_MILLIS = 50;

    @Override
    public void execute(JobContext context) throws InterruptedException {
        Object configured = context.params().getOrDefault("workMillis", 0);
        long workMillis = configured instanceof Number n ? n.longValue() : Long.parseLong(configured.toString());
        long end = System.nanoTime() + Duration.ofMillis(workMillis).toNanos();
        while (true) {
            context.checkLease();
            long left = end - System.nanoTime();
            if (left <= 0) {
                return;
            }
            Thread.sleep(Math.min(STEP_MILLIS, Math.max(1, left / 1_000_000)));
        }
    }
}
