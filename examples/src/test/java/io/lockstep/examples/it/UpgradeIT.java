package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The upgrade across key layouts (README, "Upgrading"), with the real older worker: the last
 * commit of key layout 1, built from this repository's history ({@link LayoutOneWorker}). Workers
 * of two layouts never see each other's slot records, so they must never run side by side: a new
 * worker refuses to start while an old one lives (one line, exit 1, nothing run); once the old ones
 * are stopped the new ones run every slot; an old worker started beside them (a host rolled back)
 * runs nothing, since the new workers hold every job paused in the old layout's keys (a manual run
 * requested meanwhile runs once, on a new worker), and they report it ({@code layout_mixed}) while
 * they go on running every slot once.
 */
class UpgradeIT {

    private static final int JOBS = 6;

    @TempDir
    Path dir;

    @Test
    void workersOfTwoKeyLayoutsNeverRunSideBySide() throws Exception {
        Path layoutOne = LayoutOneWorker.jar();
        // "manual" never falls due by itself: a manual run of it never meets a scheduled run's lease.
        String jobs = Cluster.perSecondJobs(JOBS, 0, "5s", "5s")
                + "  - name: manual\n    cron: \"0 0 0 1 1 *\"\n    class: io.lockstep.examples.HeartbeatJob\n";
        try (Cluster cluster = new Cluster(dir, jobs)) {
            WorkerProcess old1 = old(cluster, layoutOne, "old-1");
            await().atMost(Duration.ofSeconds(30)).until(() -> !old1.events("job_started").isEmpty());

            // A new worker beside a live layout 1 worker: refused, with one line naming it; nothing ran.
            WorkerProcess refused = cluster.start("new-0");
            assertThat(refused.waitForExit()).isEqualTo(1);
            List<String> errors = refused.stderr().lines().filter(l -> !l.isBlank()).toList();
            assertThat(errors).hasSize(1);
            assertThat(errors.get(0)).startsWith("error: ").contains("older key layout").contains("old-1").contains("Upgrading");
            assertThat(refused.events("job_started")).isEmpty();

            // Stop all, then start all: the new workers run.
            assertThat(old1.terminate()).isZero();
            WorkerProcess new1 = cluster.start("new-1");
            WorkerProcess new2 = cluster.start("new-2");
            await().atMost(Duration.ofSeconds(30)).until(() -> !new1.events("job_started").isEmpty()
                    && !new2.events("job_started").isEmpty());

            // A layout 1 worker started beside them runs nothing: every job is held paused for it.
            WorkerProcess old2 = old(cluster, layoutOne, "old-2");
            await().atMost(Duration.ofSeconds(30)).until(() -> paused(old2).size() >= 3 * JOBS);
            await().atMost(Duration.ofSeconds(15)).until(() -> reported(new1, "old-2") && reported(new2, "old-2"));
            // A manual run requested meanwhile runs once, on a new worker (a layout 1 worker runs manual runs even while paused).
            io.lockstep.examples.cli.CliRun trigger = io.lockstep.examples.cli.CliRun.of("trigger", "--config", cluster.config.toString(),
                    "--job", "manual", "--wait", "--timeout", "30s");
            assertThat(trigger.exit()).as(trigger.out() + trigger.err()).isZero();
            Instant from = WorkerProcess.ts(old2.events("worker_started").get(0)).truncatedTo(ChronoUnit.SECONDS).plusSeconds(1);
            Instant to = from.plusSeconds(4);
            await().atMost(Duration.ofSeconds(30)).until(() -> cluster.slotsNeverStarted(JOBS, from, to).isEmpty());
            assertThat(old2.isAlive()).isTrue();
            assertThat(old2.events("job_started")).as("runs of the layout 1 worker beside layout 2 ones").isEmpty();
            assertThat(paused(old2).get(0).path("reason").asText()).isEqualTo("paused");
            assertThat(cluster.events("job_started").stream().filter(e -> e.path("job").asText().equals("manual")).toList())
                    .as("the manual run").hasSize(1).allMatch(e -> e.path("manual").asBoolean() && e.path("worker").asText().startsWith("new-"));
            assertThat(cluster.slotsNeverStarted(JOBS, from, to)).as("slots the new workers left while old-2 lived").isEmpty();
            Map<String, List<String>> starts = cluster.startsBySlot();
            assertThat(starts.entrySet().stream().filter(e -> e.getValue().size() > 1).map(Map.Entry::getKey).toList())
                    .as("slots started twice").isEmpty();
            System.out.printf("upgrade: layout 1 worker beside layout 2 ones: %d slots skipped as paused, 0 run; "
                    + "%d slots run by the new workers%n", paused(old2).size(), starts.size());
        }
    }

    private static WorkerProcess old(Cluster cluster, Path jar, String id) {
        WorkerProcess w = WorkerProcess.startJar(cluster.dir, jar, cluster.config, id);
        cluster.workers.add(w);
        return w;
    }

    private static List<JsonNode> paused(WorkerProcess w) {
        return w.events("slot_skipped").stream().filter(e -> e.path("reason").asText().equals("paused")).toList();
    }

    private static boolean reported(WorkerProcess w, String other) {
        return w.events("layout_mixed").stream().anyMatch(e -> e.path("others").toString().contains(other));
    }
}
