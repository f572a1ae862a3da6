package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import io.lockstep.examples.it.jobs.BatchJob;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * F8 of the 2026-12-04 trial: a long batch whose worker is killed (SIGKILL) mid-way is rerun by a
 * peer ({@code recover: rerun}) from its last checkpoint, not from step 0. The batch
 ({@code BatchJob}: 12 steps of 400 ms, a checkpoint after each) logs every step it begins.
 */
class CheckpointIT {

    private static final int STEPS = 12;

    @TempDir
    Path dir;


    @Test
    void aBatchWhoseWorkerIsKilledMidWayResumesFromItsLastCheckpointOnAPeer() throws Exception {
        Path file = dir.resolve("steps.log");
        String yaml = """
                defaults:
                  lease: 5s
                  misfireGrace: 2s
                jobs:
                  - name: batch
                    cron: "*/30 * * * * *"
                    class: io.lockstep.examples.it.jobs.BatchJob
                    params: { steps: %d, stepMillis: 400, file: "%s" }
                    recover: rerun
                """.formatted(STEPS, file);
        try (Cluster cluster = new Cluster(dir, yaml)) {
            List<WorkerProcess> workers = List.of(cluster.start("w1"), cluster.start("w2"));
            cluster.awaitStarted();
            BatchJob.Step third = await().atMost(Duration.ofSeconds(45)).pollInterval(Duration.ofMillis(20))
                    .until(() -> BatchJob.steps(file).stream().filter(s -> s.step() == 3).findFirst(), Optional::isPresent).orElseThrow();
            WorkerProcess holder = workers.stream().filter(w -> w.id.equals(third.worker())).findFirst().orElseThrow();
            holder.signal("KILL"); // mid-batch: between the third step's start and the fourth's
            WorkerProcess peer = workers.stream().filter(w -> w != holder).findFirst().orElseThrow();
            await().atMost(Duration.ofSeconds(30)).until(() -> BatchJob.steps(file).stream()
                    .anyMatch(s -> s.slot() == third.slot() && s.step() == STEPS - 1));
            peer.terminate();

            List<BatchJob.Step> batch = BatchJob.steps(file).stream().filter(s -> s.slot() == third.slot()).toList();
            List<BatchJob.Step> killed = batch.stream().filter(s -> s.token() == third.token()).toList();
            List<BatchJob.Step> rerun = batch.stream().filter(s -> s.token() != third.token()).toList();
            int lastBegun = killed.get(killed.size() - 1).step();
            assertThat(rerun).as("rerun by the peer under a higher token").isNotEmpty()
                    .allSatisfy(s -> assertThat(s.worker()).isEqualTo(peer.id)).allSatisfy(s -> assertThat(s.token()).isGreaterThan(third.token()));
            // The killed run checkpointed every step before the one it last began (and that one too if
            // the kill came after its checkpoint): the rerun begins there, never at step 0.
            assertThat(rerun.get(0).step()).as("the rerun's first step (the killed run last began step %d)", lastBegun)
                    .isBetween(lastBegun, lastBegun + 1).isPositive();
            assertThat(rerun).extracting(BatchJob.Step::step).as("then every step once, in order")
                    .containsExactlyElementsOf(java.util.stream.IntStream.range(rerun.get(0).step(), STEPS).boxed().toList());
            assertThat(killed).extracting(BatchJob.Step::step).containsExactlyElementsOf(java.util.stream.IntStream.rangeClosed(0, lastBegun).boxed().toList());
        }
    }
}
