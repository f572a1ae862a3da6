package io.lockstep.examples.it.jobs;

import io.lockstep.scheduler.Job;
import io.lockstep.scheduler.JobContext;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Keeps its own record of every run: appends {@code slot worker fencingToken startNanos} as one line
 * to {@code params.file} (an append of one short line is atomic across processes), then works
 * {@code params.workMillis}, checking its lease. The ITs compare this record with what Lockstep says.
 * {@code startNanos} is {@link System#nanoTime()} when the run began: the host's monotonic clock,
 * the same in every process on the host and untouched by libfaketime (with
 * {@code FAKETIME_DONT_FAKE_MONOTONIC=1}), so a test can place the start on its own, true, clock.
 */
public class RecordingJob implements Job {

    @Override
    public void execute(JobContext context) throws IOException, InterruptedException {
        long startNanos = System.nanoTime();
        String line = context.scheduledTime().toEpochMilli() + " " + context.workerId() + " " + context.fencingToken() + " " + startNanos
                + "\n";
        Files.write(Path.of(context.params().get("file").toString()), line.getBytes(StandardCharsets.UTF_8),
                StandardOpenOption.CREATE, StandardOpenOption.APPEND, StandardOpenOption.WRITE);
        long work = ((Number) context.params().getOrDefault("workMillis", 0)).longValue();
        long end = System.nanoTime() + work * 1_000_000;
        while (System.nanoTime() < end) {
            context.checkLease();
            java.util.concurrent.locks.LockSupport.parkNanos(20_000_000L);
            if (Thread.interrupted()) {
                throw new InterruptedException("lease lost or shutdown");
            }
        }
    }
}
