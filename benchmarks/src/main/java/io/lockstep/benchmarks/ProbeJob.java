package io.lockstep.benchmarks;

import io.lockstep.scheduler.Job;
import io.lockstep.scheduler.JobContext;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;

/**
 * The job of the scale runs: does nothing but append, for every run, a line {@code job slotMillis
 * latenessMicros} to {@code <probe.out>.runs} (lateness: this machine's clock at start minus the
 * slot; all workers share the clock). Lines go straight to a buffered file, so the probe holds no
 * memory that would distort the worker's heap. The first run also writes {@code <probe.out>.ready}.
 */
public class ProbeJob implements Job {

    private static final String OUT = System.getProperty("probe.out");
    private static final BufferedWriter RUNS = open();

    private static BufferedWriter open() {
        if (OUT == null) {
            return null;
        }
        try {
            BufferedWriter w = Files.newBufferedWriter(Path.of(OUT + ".runs"));
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                synchronized (ProbeJob.class) {
                    try {
                        w.close();
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                }
            }, "probe-flush"));
            Files.writeString(Path.of(OUT + ".ready"), "ready");
            return w;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void execute(JobContext context) throws IOException {
        Instant slot = context.scheduledTime();
        long latenessMicros = Duration.between(slot, Instant.now()).toNanos() / 1_000;
        if (RUNS != null) {
            synchronized (ProbeJob.class) {
                RUNS.write(context.jobName() + " " + slot.toEpochMilli() + " " + latenessMicros + "\n");
            }
        }
    }
}
