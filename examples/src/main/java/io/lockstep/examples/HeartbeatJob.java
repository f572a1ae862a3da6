package io.lockstep.examples;

import io.lockstep.scheduler.Job;
import io.lockstep.scheduler.JobContext;
import java.time.Duration;

/**
 * A small job for per-second schedules, demos and tests: it "works" for {@code params.workMillis}
 * (default 0) in steps of at most 50 ms, checking its lease between steps, so a lost lease or a
 * shutdown stops it promptly. With {@code params.failAttempts: N} its first N attempts of each slot
 * fail (to watch {@code retry} at work).
 */
public class HeartbeatJob implements Job {

    private static final long STEP_MILLIS = 50;

    @Override
    public void execute(JobContext context) throws InterruptedException {
        long workMillis = number(context, "workMillis");
        long end = System.nanoTime() + Duration.ofMillis(workMillis).toNanos();
        while (true) {
            context.checkLease();
            long left = end - System.nanoTime();
            if (left <= 0) {
                break;
            }
            Thread.sleep(Math.min(STEP_MILLIS, Math.max(1, left / 1_000_000)));
        }
        if (context.attempt() <= number(context, "failAttempts")) {
            throw new IllegalStateException("attempt " + context.attempt() + " fails on purpose (params.failAttempts)");
        }
    }

    private static long number(JobContext context, String param) {
        Object configured = context.params().getOrDefault(param, 0);
        return configured instanceof Number n ? n.longValue() : Long.parseLong(configured.toString());
    }
}
