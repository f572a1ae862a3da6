package io.lockstep.examples.it.jobs;

import io.lockstep.scheduler.Job;
import io.lockstep.scheduler.JobContext;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

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

    /** A run by a job's own record: its job, slot, worker and true start (on the reading JVM's clock). */
    public record Run(String job, Instant slot, String worker, Instant started) {}

    /**
     * Every run recorded in {@code dir/job-<j>.log} for jobs {@code job-00} .. {@code job-<jobs-1>},
     * each monotonic start placed on this JVM's (true) wall clock. A line being written may be cut
     * short: it is left for the next read.
     */
    public static List<Run> read(Path dir, int jobs) {
        long nanosNow = System.nanoTime();
        Instant now = Instant.now();
        List<Run> runs = new ArrayList<>();
        for (int j = 0; j < jobs; j++) {
            Path file = dir.resolve("job-" + j + ".log");
            try {
                if (Files.exists(file)) {
                    for (String line : Files.readAllLines(file)) {
                        String[] f = line.split(" ");
                        if (f.length >= 4) {
                            runs.add(new Run(String.format("job-%02d", j), Instant.ofEpochMilli(Long.parseLong(f[0])), f[1],
                                    now.minusNanos(nanosNow - Long.parseLong(f[3]))));
                        }
                    }
                }
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
        return runs;
    }
}
