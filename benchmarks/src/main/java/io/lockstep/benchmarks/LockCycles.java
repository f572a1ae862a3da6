package io.lockstep.benchmarks;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/** Runs {@link LockCycleBenchmark} with JMH: throughput, then latency percentiles, at 1 and 8 threads. */
final class LockCycles {

    /** One implementation at one thread count. */
    record Row(String impl, int threads, double opsPerSecond, double opsError, double p50Micros, double p99Micros) {}

    private LockCycles() {}

    /**
     * @param redlockPorts the ports of 5 independent masters for the Redlock rows (3 and 5 masters);
     *     empty: none
     */
    static List<Row> run(int redisPort, List<Integer> redlockPorts, boolean quick) throws RunnerException {
        List<Row> rows = new ArrayList<>();
        for (int threads : new int[] {1, 8}) {
            rows.addAll(rows(options(LockCycleBenchmark.class, redisPort, redlockPorts, threads, Mode.Throughput, quick),
                    options(LockCycleBenchmark.class, redisPort, redlockPorts, threads, Mode.SampleTime, quick), threads));
            if (!redlockPorts.isEmpty()) {
                rows.addAll(rows(options(RedlockCycleBenchmark.class, redisPort, redlockPorts, threads, Mode.Throughput, quick),
                        options(RedlockCycleBenchmark.class, redisPort, redlockPorts, threads, Mode.SampleTime, quick), threads));
            }
        }
        return rows;
    }

    /**
     * {@code --only lock -Dbench.floorOnly=true}: the single-server lock cycle alone (Lockstep, the raw
     * Jedis floor, Redisson), throughput only, at 1 and 8 threads (about a minute and a half), for the
     * spread of several runs of the targets that compare them; no Redlock, no latency percentiles.
     */
    static List<Row> floorOnly(int redisPort) throws RunnerException {
        List<Row> rows = new ArrayList<>();
        for (int threads : new int[] {1, 8}) {
            for (RunResult t : new Runner(options(LockCycleBenchmark.class, redisPort, List.of(), threads, Mode.Throughput, false)).run()) {
                rows.add(new Row(name(t), threads, t.getPrimaryResult().getScore(), t.getPrimaryResult().getScoreError(), 0, 0));
            }
        }
        return rows;
    }

    /**
     * {@code --only redlock-faults}: the Redlock lock cycle over 5 masters with none, 2 killed and 2
     * stalled ({@link RedlockFaultBenchmark}), at 1 and 8 threads, throughput and latency.
     */
    static List<Row> redlockFaults(List<Integer> redlockPorts, boolean quick) throws RunnerException {
        List<Row> rows = new ArrayList<>();
        for (int threads : new int[] {1, 8}) {
            rows.addAll(rows(options(RedlockFaultBenchmark.class, 0, redlockPorts, threads, Mode.Throughput, quick),
                    options(RedlockFaultBenchmark.class, 0, redlockPorts, threads, Mode.SampleTime, quick), threads));
        }
        return rows;
    }

    private static List<Row> rows(Options throughputRun, Options latencyRun, int threads) throws RunnerException {
        List<Row> rows = new ArrayList<>();
        Collection<RunResult> throughput = new Runner(throughputRun).run();
        Collection<RunResult> latency = new Runner(latencyRun).run();
        for (RunResult t : throughput) {
            String impl = name(t);
            RunResult l = latency.stream().filter(r -> name(r).equals(impl)).findFirst().orElseThrow();
            rows.add(new Row(impl, threads, t.getPrimaryResult().getScore(), t.getPrimaryResult().getScoreError(),
                    l.getPrimaryResult().getStatistics().getPercentile(50), l.getPrimaryResult().getStatistics().getPercentile(99)));
        }
        return rows;
    }

    /** The benchmark method's name; for Redlock, {@code redlock-<masters>}. */
    private static String name(RunResult r) {
        String benchmark = r.getParams().getBenchmark();
        String method = benchmark.substring(benchmark.lastIndexOf('.') + 1);
        String masters = r.getParams().getParam("masters");
        String fault = r.getParams().getParam("fault");
        return fault != null ? method + "-5-" + fault : masters == null ? method : method + "-" + masters;
    }

    private static Options options(Class<?> benchmark, int port, List<Integer> redlockPorts, int threads, Mode mode, boolean quick) {
        return new OptionsBuilder()
                .include(benchmark.getName() + "\\.")
                .forks(1)
                .threads(threads)
                .mode(mode)
                .timeUnit(mode == Mode.Throughput ? TimeUnit.SECONDS : TimeUnit.MICROSECONDS)
                .warmupIterations(quick ? 1 : 3)
                .warmupTime(TimeValue.seconds(quick ? 1 : 2))
                .measurementIterations(quick ? 2 : 5)
                .measurementTime(TimeValue.seconds(quick ? 1 : 2))
                .jvmArgsAppend("-D" + LockCycleBenchmark.PORT + "=" + port, "-D" + RedlockCycleBenchmark.PORTS + "="
                        + String.join(",", redlockPorts.stream().map(String::valueOf).toList()), "-Xmx512m")
                .shouldFailOnError(true)
                .build();
    }
}
