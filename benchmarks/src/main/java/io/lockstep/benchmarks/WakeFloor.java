package io.lockstep.benchmarks;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Collectors;

/**
 * The machine's floor for a burst: what starting N things at the same instant costs with nothing
 * else in the way. {@code workers} JVMs each hold {@code N / workers} platform threads parked until
 * the top of the same second, as the scheduler's job threads are for a claim made ahead, and each
 * thread notes how late it woke, {@code rounds} seconds in a row. No Redis, no scheduler: the
 * lateness a scale run adds on top of this is the scheduler's own.
 */
final class WakeFloor {

    private WakeFloor() {}

    /** p50 and p99 (ms) of the wake lateness of {@code total} threads over {@code workers} JVMs. */
    record Result(int total, int workers, int rounds, double p50Ms, double p99Ms, double maxMs) {}

    static Result run(Path dir, int total, int workers, int rounds) throws Exception {
        Files.createDirectories(dir);
        List<Process> processes = new ArrayList<>();
        List<Path> outs = new ArrayList<>();
        for (int w = 0; w < workers; w++) {
            Path out = dir.resolve("wake-" + total + "-" + w + ".txt");
            outs.add(out);
            processes.add(new ProcessBuilder(Bench.java(), "-cp", Bench.jar(), WakeFloor.class.getName(),
                    Integer.toString(total / workers), Integer.toString(rounds), out.toString())
                    .redirectErrorStream(true).redirectOutput(dir.resolve("wake-" + total + "-" + w + ".log").toFile()).start());
        }
        for (Process p : processes) {
            if (!p.waitFor(rounds + 60L, java.util.concurrent.TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IllegalStateException("the wake floor probe failed; see " + dir);
            }
        }
        List<Long> all = new ArrayList<>();
        for (Path out : outs) {
            for (String line : Files.readAllLines(out)) {
                all.add(Long.parseLong(line));
            }
        }
        long[] sorted = all.stream().mapToLong(Long::longValue).sorted().toArray();
        return new Result(total, workers, rounds, ScaleRun.percentile(sorted, 50), ScaleRun.percentile(sorted, 99),
                sorted[sorted.length - 1] / 1000.0);
    }

    /** {@code threads rounds outFile}: one JVM's share; writes one lateness (µs) per line. */
    public static void main(String[] args) throws InterruptedException, IOException {
        int threads = Integer.parseInt(args[0]);
        int rounds = Integer.parseInt(args[1]);
        long[] lateness = new long[threads * rounds];
        // Warm up the threads once (created, started, parked) like a worker's pool in its steady state.
        for (int r = -1; r < rounds; r++) {
            Instant second = Instant.now().truncatedTo(ChronoUnit.SECONDS).plusSeconds(1);
            long deadline = System.nanoTime() + (second.toEpochMilli() - System.currentTimeMillis()) * 1_000_000L;
            CountDownLatch done = new CountDownLatch(threads);
            final int round = r;
            for (int i = 0; i < threads; i++) {
                final int index = i;
                Thread t = new Thread(() -> {
                    long wait;
                    while ((wait = deadline - System.nanoTime()) > 0) {
                        LockSupport.parkNanos(wait);
                    }
                    long late = (System.nanoTime() - deadline) / 1_000;
                    if (round >= 0) {
                        lateness[round * threads + index] = late;
                    }
                    done.countDown();
                });
                t.start();
            }
            done.await();
        }
        Files.writeString(Path.of(args[2]), java.util.Arrays.stream(lateness).mapToObj(Long::toString).collect(Collectors.joining("\n")));
    }
}
