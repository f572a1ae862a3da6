package io.lockstep.examples.it.jobs;

import io.lockstep.scheduler.Job;
import io.lockstep.scheduler.JobContext;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * A job that uses the limit {@code params.limit}: it works {@code params.ms} milliseconds, then
 * appends one line to {@code params.log}: its job, slot, start and end (epoch ms, this host's clock),
 * its permit and the permit's fencing token, and its worker. So a test reads, from the jobs' own
 * timestamps, how many ran at once.
 */
public class PermitJob implements Job {

    @Override
    public void execute(JobContext context) throws InterruptedException {
        long start = System.currentTimeMillis();
        String limit = context.params().get("limit").toString();
        Thread.sleep(Long.parseLong(context.params().get("ms").toString()));
        String line = String.join(" ", context.jobName(), context.scheduledTime().toString(), Long.toString(start),
                Long.toString(System.currentTimeMillis()), Integer.toString(context.permitOf(limit)),
                Long.toString(context.permitToken(limit)), context.workerId()) + "\n";
        try {
            Files.writeString(Path.of(context.params().get("log").toString()), line, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
