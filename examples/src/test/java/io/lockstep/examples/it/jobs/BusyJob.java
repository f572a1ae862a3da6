package io.lockstep.examples.it.jobs;

import io.lockstep.scheduler.Job;
import io.lockstep.scheduler.JobContext;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A job that keeps one worker's job threads busy on the test's word: on the worker whose flag file
 * {@code params.dir/busy-<workerId>} exists it works until the file is removed (checking its lease,
 * so that a lost lease stops it; at most 60 s, so a test that died cannot leave it running); on
 * every other worker it returns at once. With {@code overlap: allow} and a per-second cron, the
 * flagged worker's threads fill up with its runs, one per slot it wins: a worker whose threads are
 * all taken by a long job, while its peers are not.
 */
public class BusyJob implements Job {

    @Override
    public void execute(JobContext context) throws InterruptedException {
        Path flag = Path.of(context.params().get("dir").toString()).resolve("busy-" + context.workerId());
        long end = System.nanoTime() + 60_000_000_000L;
        while (Files.exists(flag) && System.nanoTime() < end) {
            context.checkLease();
            java.util.concurrent.locks.LockSupport.parkNanos(20_000_000L);
            if (Thread.interrupted()) {
                throw new InterruptedException("lease lost or shutdown");
            }
        }
    }
}
