package io.lockstep.benchmarks;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.function.ToDoubleFunction;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.style.markers.SeriesMarkers;

/** The charts of {@code BENCHMARKS.md}: how lateness and Redis time per slot grow with load and with workers. */
final class Charts {

    private Charts() {}

    /** p50 and p99 start lateness against load, one Redis and Cluster, with the machine's wake floor. */
    static void lateness(Path file, RunAll.Scale scale) throws IOException {
        XYChart chart = chart("start lateness against load (3 workers)", "slots due every second", "lateness (ms)");
        series(chart, "p50, one Redis", scale.byLoad(), ScaleRun.Result::p50Ms);
        series(chart, "p99, one Redis", scale.byLoad(), ScaleRun.Result::p99Ms);
        if (!scale.cluster().isEmpty()) {
            series(chart, "p99, Cluster of 3 masters", scale.cluster(), ScaleRun.Result::p99Ms);
        }
        chart.addSeries("p99, wake floor (threads alone)", scale.floors().stream().mapToDouble(WakeFloor.Result::total).toArray(),
                scale.floors().stream().mapToDouble(WakeFloor.Result::p99Ms).toArray()).setMarker(SeriesMarkers.TRIANGLE_UP);
        save(chart, file);
    }

    /** Redis time (scripts, all masters) per fired slot against load. */
    static void redisTime(Path file, RunAll.Scale scale) throws IOException {
        XYChart chart = chart("Redis time per fired slot against load (3 workers)", "slots due every second", "µs of Redis time per slot");
        series(chart, "one Redis", scale.byLoad(), ScaleRun.Result::redisMicrosPerSlot);
        if (!scale.cluster().isEmpty()) {
            series(chart, "Cluster of 3 masters (sum of the masters)", scale.cluster(), ScaleRun.Result::redisMicrosPerSlot);
        }
        save(chart, file);
    }

    /** p99 lateness and Redis time per slot against the number of workers, at the lowest load. */
    static void workers(Path file, RunAll.Scale scale) throws IOException {
        List<ScaleRun.Result> runs = new java.util.ArrayList<>(scale.byWorkers());
        runs.add(scale.byLoad().get(0));
        runs.sort(java.util.Comparator.comparingInt(ScaleRun.Result::workers));
        XYChart chart = chart("against workers, " + scale.byLoad().get(0).jobs() + " slots due every second, one Redis",
                "worker JVMs", "ms (lateness) / µs (Redis per slot)");
        runs.removeIf(r -> r.started() == 0);
        chart.addSeries("p99 lateness (ms)", runs.stream().mapToDouble(ScaleRun.Result::workers).toArray(),
                runs.stream().mapToDouble(ScaleRun.Result::p99Ms).toArray()).setMarker(SeriesMarkers.DIAMOND);
        chart.addSeries("Redis time per slot (µs)", runs.stream().mapToDouble(ScaleRun.Result::workers).toArray(),
                runs.stream().mapToDouble(ScaleRun.Result::redisMicrosPerSlot).toArray()).setMarker(SeriesMarkers.CIRCLE);
        save(chart, file);
    }

    /**
     * The capacity model: the slots per second Redis can decide, from the Redis time per slot
     * measured here (one core per master, busy all the time), for 1 to 6 masters; and what the runs
     * started per second, on one Redis and on the Cluster of 3 masters.
     */
    static void capacity(Path file, RunAll.Scale scale) throws IOException {
        XYChart chart = chart("capacity: slots per second Redis can decide", "Redis masters (one core each)", "slots per second");
        double[] masters = {1, 2, 3, 4, 5, 6};
        double perSlot = scale.byLoad().get(0).redisMicrosPerSlot();
        chart.addSeries(String.format(java.util.Locale.ROOT, "model: %.0f µs per slot (one Redis, %,d slots/s)", perSlot,
                scale.byLoad().get(0).jobs()), masters, java.util.Arrays.stream(masters).map(n -> n * 1e6 / perSlot).toArray())
                .setMarker(SeriesMarkers.NONE);
        List<ScaleRun.Result> cluster = scale.cluster().stream().filter(r -> r.started() > 0).toList();
        if (!cluster.isEmpty()) {
            double clusterPerSlot = cluster.get(0).redisMicrosPerSlot();
            chart.addSeries(String.format(java.util.Locale.ROOT, "model: %.0f µs per slot (Cluster, %,d slots/s)", clusterPerSlot,
                    cluster.get(0).jobs()), masters, java.util.Arrays.stream(masters).map(n -> n * 1e6 / clusterPerSlot).toArray())
                    .setMarker(SeriesMarkers.NONE);
            chart.addSeries("measured: slots started per second, Cluster of 3", cluster.stream().mapToDouble(r -> 3).toArray(),
                    cluster.stream().mapToDouble(ScaleRun.Result::firedPerSecond).toArray()).setMarker(SeriesMarkers.DIAMOND);
        }
        List<ScaleRun.Result> single = scale.byLoad().stream().filter(r -> r.started() > 0).toList();
        chart.addSeries("measured: slots started per second, one Redis", single.stream().mapToDouble(r -> 1).toArray(),
                single.stream().mapToDouble(ScaleRun.Result::firedPerSecond).toArray()).setMarker(SeriesMarkers.CIRCLE);
        save(chart, file);
    }

    private static XYChart chart(String title, String x, String y) {
        return new XYChartBuilder().width(800).height(450).title(title).xAxisTitle(x).yAxisTitle(y).build();
    }

    /** One point per run in which slots started (a run that fell behind for good has no lateness to draw). */
    private static void series(XYChart chart, String name, List<ScaleRun.Result> all, ToDoubleFunction<ScaleRun.Result> y) {
        List<ScaleRun.Result> runs = all.stream().filter(r -> r.started() > 0).toList();
        if (runs.isEmpty()) {
            return;
        }
        chart.addSeries(name, runs.stream().mapToDouble(ScaleRun.Result::jobs).toArray(), runs.stream().mapToDouble(y).toArray())
                .setMarker(SeriesMarkers.CIRCLE);
    }

    private static void save(XYChart chart, Path file) throws IOException {
        String name = file.getFileName().toString();
        BitmapEncoder.saveBitmap(chart, file.resolveSibling(name.substring(0, name.lastIndexOf('.'))).toString(),
                BitmapEncoder.BitmapFormat.PNG);
    }
}
