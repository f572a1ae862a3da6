package io.lockstep.examples.it.jobs;

import io.lockstep.scheduler.Job;
import io.lockstep.scheduler.JobContext;

/** A job that ignores interrupts: it works its {@code params.workMillis} whatever it is told. */
public class DeafJob implements Job {

    @Override
    public void execute(JobContext context) {
        long work = ((Number) context.params().getOrDefault("workMillis", 1000)).longValue();
        long end = System.nanoTime() + work * 1_000_000;
        while (System.nanoTime() < end) {
            java.util.concurrent.locks.LockSupport.parkNanos(20_000_000L);
            Thread.interrupted(); // deaf on purpose: a badly written job clears the interrupt and goes on
        }
    }
}
