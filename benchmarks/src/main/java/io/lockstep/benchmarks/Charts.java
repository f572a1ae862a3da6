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
