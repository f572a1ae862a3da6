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
 * The job of the scale runs: does nothing but record, for every run, a line {@code job slotMillis
 * latenessMicros} in {@code <probe.out>.runs} (lateness: this machine's clock at start minus the
 * slot; all workers share the clock). Lines go on a lock-free queue that a writer thread drains into
 * a buffered file every few milliseconds, so a thousand runs starting at once do not queue on a
 * lock, and the probe holds no memory that would distort the worker's heap. The first run also
 * writes {@code <probe.out>.ready}.
 */
public class ProbeJob implements Job {

    private static final String OUT = System.getProperty("probe.out");
    private static final java.util.concurrent.ConcurrentLinkedQueue<String> LINES = new java.util.concurrent.ConcurrentLinkedQueue<>();
    private static final BufferedWriter RUNS = open();

    private static BufferedWriter open() {
        if (OUT == null) {
            return null;
        }
        try {
            BufferedWriter w = Files.newBufferedWriter(Path.of(OUT + ".runs"));
            Thread writer = new Thread(() -> {
                while (true) {
                    drain(w);
                    java.util.concurrent.locks.LockSupport.parkNanos(5_000_000);
                }
            }, "probe-writer");
            writer.setDaemon(true);
            writer.start();
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                try {
                    drain(w);
                    w.close();
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
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
            LINES.add(context.jobName() + " " + slot.toEpochMilli() + " " + latenessMicros + "\n");
        }
    }

    private static synchronized void drain(BufferedWriter w) {
        try {
            for (String line; (line = LINES.poll()) != null; ) {
                w.write(line);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
