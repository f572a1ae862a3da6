package io.lockstep.examples.it.jobs;

import io.lockstep.scheduler.Job;
import io.lockstep.scheduler.JobContext;

/** A job that runs out of memory on its own allocation (an {@link OutOfMemoryError}, an Error). */
public class GreedyJob implements Job {

    /** Keeps the allocation reachable so that it cannot be optimized away. */
    public static volatile long[] sink;

    @Override
    public void execute(JobContext context) {
        sink = new long[Integer.MAX_VALUE - 16]; // 16 GiB: more than any test worker's heap
    }
}
