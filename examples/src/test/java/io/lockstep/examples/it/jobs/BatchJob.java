package io.lockstep.examples.it.jobs;

import io.lockstep.scheduler.Job;
import io.lockstep.scheduler.JobContext;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * A batch of {@code params.steps} steps of {@code params.stepMillis} each that saves a checkpoint
 * after every step and starts from the one after its slot's last checkpoint: a rerun resumes where
 * the run before it stopped. Appends {@code slot worker fencingToken step} to {@code params.file}
 * as it begins each step (an append of one short line is atomic across processes).
 */
public class BatchJob implements Job {

    /** One line of the batch's own log: which slot, which worker, under which token, which step it began. */
    public record Step(long slot, String worker, long token, int step) {}

    /** Every step begun so far, as {@code file} has them (none before the first). */
    public static java.util.List<Step> steps(Path file) throws IOException {
        if (!Files.exists(file)) {
            return java.util.List.of();
        }
        return Files.readAllLines(file).stream().map(l -> l.split(" ")).filter(f -> f.length == 4)
                .map(f -> new Step(Long.parseLong(f[0]), f[1], Long.parseLong(f[2]), Integer.parseInt(f[3]))).toList();
    }

    @Override
    public void execute(JobContext context) throws IOException, InterruptedException {
        int steps = ((Number) context.params().get("steps")).intValue();
        long stepMillis = ((Number) context.params().get("stepMillis")).longValue();
        Path file = Path.of(context.params().get("file").toString());
        int from = context.lastCheckpoint().map(done -> Integer.parseInt(done) + 1).orElse(0);
        for (int step = from; step < steps; step++) {
            String line = context.scheduledTime().toEpochMilli() + " " + context.workerId() + " " + context.fencingToken() + " " + step + "\n";
            Files.write(file, line.getBytes(StandardCharsets.UTF_8), StandardOpenOption.CREATE, StandardOpenOption.APPEND,
                    StandardOpenOption.WRITE);
            long end = System.nanoTime() + stepMillis * 1_000_000;
            while (System.nanoTime() < end) { // the step's work
                context.checkLease();
                java.util.concurrent.locks.LockSupport.parkNanos(20_000_000L);
                if (Thread.interrupted()) {
                    throw new InterruptedException("lease lost or shutdown");
                }
            }
            context.checkpoint(Integer.toString(step));
        }
    }
}
