package io.lockstep.examples.it.jobs;

import io.lockstep.scheduler.Job;
import io.lockstep.scheduler.JobContext;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A job whose run ends when the test says so: it works until the file {@code params.gate} exists
 * (then returns, succeeded), or until it is interrupted (then fails with the interrupt, as a
 * well-behaved job does at a shutdown past its timeout). So a test can end a run at the moment it
 * chose (with the link cut, say, or after a SIGTERM) instead of guessing a duration.
 */
public class GatedJob implements Job {

    @Override
    public void execute(JobContext context) throws InterruptedException {
        Path gate = Path.of(context.params().get("gate").toString());
        while (!Files.exists(gate)) {
            java.util.concurrent.locks.LockSupport.parkNanos(20_000_000L);
            if (Thread.interrupted()) {
                throw new InterruptedException("interrupted before the gate opened");
            }
        }
    }
}
