package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import io.lockstep.examples.it.jobs.BatchJob;
import java.util.Optional;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * F3 of the 2026-12-04 trial: a rolling restart of three worker JVMs, each drained first
 * ({@code lockstep drain --worker ID --wait}), while a batch runs that takes longer than the
 * workers' shutdown timeout (a SIGTERM's 10 s here): the batch ends on the worker that began it,
 * once, never restarted on a peer; that worker exits 0 after it; no run fails; the others keep
 * the schedule meanwhile.
 */
class DrainIT {

    /**
     * 40 steps of 500 ms: a batch of 20 s, so that what is left of it when its worker is drained outlasts
     * the 10 s shutdown timeout. {@code -Ddrain.steps=180} runs the trial's 90 s batch (about 3 minutes).
     */
    private static final int STEPS = Integer.getInteger("drain.steps", 40);

    @TempDir
    Path dir;


    /** The events of every life of the workers (a restart keeps the earlier life's output beside: w1.out.1.jsonl). */
    private List<JsonNode> events(String name) throws IOException {
        com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
        List<JsonNode> found = new ArrayList<>();
        try (var files = Files.list(dir)) {
            for (Path f : files.filter(p -> p.getFileName().toString().matches("w\\d\\.out(\\.\\d+)?\\.jsonl")).toList()) {
                for (String line : Files.readAllLines(f)) {
                    if (line.startsWith("{") && line.endsWith("}")) {
                        JsonNode e = json.readTree(line);
                        if (name.equals(e.path("event").asText())) {
                            found.add(e);
                        }
                    }
                }
            }
        }
        return found;
    }

    @Test
    void aRollingRestartThatDrainsEachWorkerFirstRunsALongBatchOnce() throws Exception {
        Path file = dir.resolve("steps.log");
        String yaml = """
                defaults:
                  lease: 5s
                  misfireGrace: 3s
                jobs:
                  - name: batch
                    cron: "*/30 * * * * *"
                    class: io.lockstep.examples.it.jobs.BatchJob
                    params: { steps: %d, stepMillis: 500, file: "%s" }
                    recover: rerun
                """.formatted(STEPS, file);
        try (Cluster cluster = new Cluster(dir, yaml)) {
            List<WorkerProcess> workers = new ArrayList<>(List.of(cluster.start("w1"), cluster.start("w2"), cluster.start("w3")));
            cluster.awaitStarted();
            // The first batch has begun (three steps in): its worker is drained first, with more than the
            // workers' 10 s shutdown timeout of the batch left (a SIGTERM would cut it off and hand it over).
            BatchJob.Step begun = await().atMost(Duration.ofSeconds(45)).pollInterval(Duration.ofMillis(50))
                    .until(() -> BatchJob.steps(file).stream().filter(s -> s.step() == 2).findFirst(), Optional::isPresent).orElseThrow();
            List<String> order = new ArrayList<>(List.of(begun.worker()));
            List.of("w1", "w2", "w3").stream().filter(id -> !id.equals(begun.worker())).forEach(order::add);
            for (String id : order) {
                WorkerProcess drain = WorkerProcess.command(dir, "drain-" + id, "drain", "--config", cluster.config.toString(),
                        "--worker", id, "--within", "2m", "--wait");
                Duration batch = Duration.ofMillis(STEPS * 500L);
                assertThat(drain.waitForExit(batch.plusSeconds(60))).as("lockstep drain --worker %s --wait (%s)", id, drain.stderr()).isZero();
                WorkerProcess old = workers.stream().filter(w -> w.id.equals(id)).findFirst().orElseThrow();
                assertThat(old.waitForExit(batch.plusSeconds(60))).as("%s exits 0 after its drain", id).isZero();
                workers.remove(old);
                workers.add(cluster.start(id)); // the new version, under the same id
                await().atMost(Duration.ofSeconds(30)).until(() -> workers.stream().allMatch(WorkerProcess::hasStarted));
            }
            await().atMost(Duration.ofSeconds(30).plusMillis(STEPS * 500L)).until(() -> BatchJob.steps(file).stream()
                    .anyMatch(s -> s.slot() == begun.slot() && s.step() == STEPS - 1));

            List<BatchJob.Step> batch = BatchJob.steps(file).stream().filter(s -> s.slot() == begun.slot()).toList();
            assertThat(batch).extracting(BatchJob.Step::step).as("the drained batch: every step once, in order, never restarted")
                    .containsExactlyElementsOf(java.util.stream.IntStream.range(0, STEPS).boxed().toList());
            assertThat(batch).extracting(BatchJob.Step::token).as("one run, on the worker that began it").containsOnly(begun.token());
            Map<Long, List<BatchJob.Step>> bySlot = BatchJob.steps(file).stream().collect(Collectors.groupingBy(BatchJob.Step::slot));
            assertThat(bySlot.values()).as("no batch of the restart was run twice or handed over")
                    .allSatisfy(s -> assertThat(s).extracting(BatchJob.Step::token).containsOnly(s.get(0).token()));
            assertThat(events("job_failed")).as("no run failed or was cut off").isEmpty();
            assertThat(events("drain_requested")).as("each worker heard its drain").hasSize(3);
            assertThat(events("worker_stopping")).filteredOn(e -> e.path("drain").asBoolean()).hasSize(3);
        }
    }
}
