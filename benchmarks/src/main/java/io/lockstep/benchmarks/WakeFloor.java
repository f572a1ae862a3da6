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
 * The machine's floor for a burst: what starting N runs at the same instant costs with nothing
 * else in the way, the way the scheduler starts them. {@code workers} JVMs each have a pool of
 * {@link RunAll#THREADS} job threads and one timer thread that parks until the top of the second
 * and hands its {@code N / workers} runs to the pool, as the scheduler's start timer does with
 * the runs it claimed ahead; each run notes how late it began, {@code rounds} seconds in a row.
 * No Redis, no scheduler: the lateness a scale run adds on top of this is the scheduler's own.
 */
final class WakeFloor {

    private WakeFloor() {}

    /** p50 and p99 (ms) of the wake lateness of {@code total} threads over {@code workers} JVMs. */
    record Result(int total, int workers, int rounds, double p50Ms, double p99Ms, double maxMs) {}

    static Result run(Path dir, int total, int workers, int rounds) throws Exception {
        return run(dir, total, workers, rounds, RunAll.THREADS);
    }

    /** As above with a pool of {@code poolThreads} per JVM: a plain executor of the same pool as the workers' {@code threads}. */
    static Result run(Path dir, int total, int workers, int rounds, int poolThreads) throws Exception {
        Files.createDirectories(dir);
        List<Process> processes = new ArrayList<>();
        List<Path> outs = new ArrayList<>();
        for (int w = 0; w < workers; w++) {
            Path out = dir.resolve("wake-" + total + "-" + w + ".txt");
            outs.add(out);
            processes.add(new ProcessBuilder(Bench.java(), "-cp", Bench.jar(), WakeFloor.class.getName(),
                    Integer.toString(total / workers), Integer.toString(rounds), out.toString(), Integer.toString(poolThreads))
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

    /** {@code runs rounds outFile [poolThreads]}: one JVM's share; writes one lateness (µs) per line. */
    public static void main(String[] args) throws InterruptedException, IOException {
        int threads = Integer.parseInt(args[0]);
        int rounds = Integer.parseInt(args[1]);
        long[] lateness = new long[threads * rounds];
        java.util.concurrent.ThreadPoolExecutor pool =
                (java.util.concurrent.ThreadPoolExecutor) java.util.concurrent.Executors.newFixedThreadPool(args.length > 3 ? Integer.parseInt(args[3]) : RunAll.THREADS);
        // A worker's pool is at its full size after its first bursts (its threads never time out):
        // so is this one from the start, or the rounds would time the creation of threads.
        pool.prestartAllCoreThreads();
        // One round first to warm up (threads created, code compiled), like a worker in its steady state.
        for (int r = -1; r < rounds; r++) {
            Instant second = Instant.now().truncatedTo(ChronoUnit.SECONDS).plusSeconds(1);
            long deadline = System.nanoTime() + (second.toEpochMilli() - System.currentTimeMillis()) * 1_000_000L;
            CountDownLatch done = new CountDownLatch(threads);
            long wait;
            while ((wait = deadline - System.nanoTime()) > 0) {
                LockSupport.parkNanos(wait);
            }
            final int round = r;
            for (int i = 0; i < threads; i++) {
                final int index = i;
                pool.execute(() -> {
                    long late = (System.nanoTime() - deadline) / 1_000;
                    if (round >= 0) {
                        lateness[round * threads + index] = late;
                    }
                    done.countDown();
                });
            }
            done.await();
        }
        pool.shutdown();
        Files.writeString(Path.of(args[2]), java.util.Arrays.stream(lateness).mapToObj(Long::toString).collect(Collectors.joining("\n")));
    }
}
