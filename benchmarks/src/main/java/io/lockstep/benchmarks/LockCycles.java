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

    static List<Row> run(int redisPort, boolean quick) throws RunnerException {
        List<Row> rows = new ArrayList<>();
        for (int threads : new int[] {1, 8}) {
            Collection<RunResult> throughput = new Runner(options(redisPort, threads, Mode.Throughput, quick)).run();
            Collection<RunResult> latency = new Runner(options(redisPort, threads, Mode.SampleTime, quick)).run();
            for (RunResult t : throughput) {
                String impl = name(t);
                RunResult l = latency.stream().filter(r -> name(r).equals(impl)).findFirst().orElseThrow();
                rows.add(new Row(impl, threads, t.getPrimaryResult().getScore(), t.getPrimaryResult().getScoreError(),
                        l.getPrimaryResult().getStatistics().getPercentile(50), l.getPrimaryResult().getStatistics().getPercentile(99)));
            }
        }
        return rows;
    }

    private static String name(RunResult r) {
        String benchmark = r.getParams().getBenchmark();
        return benchmark.substring(benchmark.lastIndexOf('.') + 1);
    }

    private static Options options(int port, int threads, Mode mode, boolean quick) {
        return new OptionsBuilder()
                .include(LockCycleBenchmark.class.getName() + "\\.")
                .forks(1)
                .threads(threads)
                .mode(mode)
                .timeUnit(mode == Mode.Throughput ? TimeUnit.SECONDS : TimeUnit.MICROSECONDS)
                .warmupIterations(quick ? 1 : 3)
                .warmupTime(TimeValue.seconds(quick ? 1 : 2))
                .measurementIterations(quick ? 2 : 5)
                .measurementTime(TimeValue.seconds(quick ? 1 : 2))
                .jvmArgsAppend("-D" + LockCycleBenchmark.PORT + "=" + port, "-Xmx512m")
                .shouldFailOnError(true)
                .build();
    }
}
