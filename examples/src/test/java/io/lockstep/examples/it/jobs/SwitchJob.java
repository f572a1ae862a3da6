package io.lockstep.examples.it.jobs;

import io.lockstep.scheduler.Job;
import io.lockstep.scheduler.JobContext;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A job that fails until the test says it may succeed: it succeeds once the file {@code params.ok}
 * exists, and throws before that. So a test chooses from when a job's slots succeed.
 */
public class SwitchJob implements Job {

    @Override
    public void execute(JobContext context) {
        if (!Files.exists(Path.of(context.params().get("ok").toString()))) {
            throw new IllegalStateException("not yet: " + context.params().get("ok") + " does not exist");
        }
    }
}
