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
 * The upgrades across key layouts (README, "Upgrading"), with the real older workers: the last
 * commits of key layouts 1 and 2, built from this repository's history ({@link OlderWorkers}).
 * Workers of layout 1 never see a newer layout's slot records, and those of layout 2 keep an
 * exclusive job's lease where layout 3 does not look, so workers of two layouts must never run
 * side by side. From layout 1: a new
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
        Path layoutOne = OlderWorkers.layoutOne();
        // "manual" never falls due by itself: a manual run of it never meets a scheduled run's lease.
        String jobs = Cluster.perSecondJobs(JOBS, 0, "5s", "5s")
                + "  - name: manual\n    cron: \"0 0 0 1 1 *\"\n    class: io.lockstep.examples.HeartbeatJob\n";
        try (Cluster cluster = new Cluster(dir, jobs)) {
            WorkerProcess old1 = old(cluster, layoutOne, "old-1");
            await().atMost(Duration.ofSeconds(30)).until(() -> !old1.events("job_started").isEmpty());

            // A new worker beside a live layout 1 worker: refused, with one line naming it; nothing ran.
            refusedBeside(cluster, "old-1");

            // Stop all, then start all: the new workers run.
            List<WorkerProcess> news = stopAllStartAll(cluster, old1);
            WorkerProcess new1 = news.get(0);
            WorkerProcess new2 = news.get(1);

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
            assertThat(old2.events("job_started")).as("runs of the layout 1 worker beside newer ones").isEmpty();
            assertThat(paused(old2).get(0).path("reason").asText()).isEqualTo("paused");
            assertThat(cluster.events("job_started").stream().filter(e -> e.path("job").asText().equals("manual")).toList())
                    .as("the manual run").hasSize(1).allMatch(e -> e.path("manual").asBoolean() && e.path("worker").asText().startsWith("new-"));
            assertThat(cluster.slotsNeverStarted(JOBS, from, to)).as("slots the new workers left while old-2 lived").isEmpty();
            Map<String, List<String>> starts = cluster.startsBySlot();
            assertThat(starts.entrySet().stream().filter(e -> e.getValue().size() > 1).map(Map.Entry::getKey).toList())
                    .as("slots started twice").isEmpty();
            System.out.printf("upgrade: layout 1 worker beside layout 3 ones: %d slots skipped as paused, 0 run; "
                    + "%d slots run by the new workers%n", paused(old2).size(), starts.size());
        }
    }

    /**
     * From layout 2, whose workers look for other layouts too: a layout 3 worker refuses to start
     * beside a live layout 2 one, and a layout 2 worker beside layout 3 ones (its own refusal); after
     * stop all, start all, every slot runs once across the switch, including the claims the old
     * worker made ahead and handed back when it stopped (in the running index both layouts share).
     */
    @Test
    void layoutTwoWorkersAndLayoutThreeOnesNeverRunSideBySide() throws Exception {
        Path layoutTwo = OlderWorkers.layoutTwo();
        try (Cluster cluster = new Cluster(dir, Cluster.perSecondJobs(JOBS, 200, "5s", "5s"))) {
            WorkerProcess two1 = old(cluster, layoutTwo, "two-1");
            await().atMost(Duration.ofSeconds(30)).until(() -> two1.events("job_started").size() >= 3 * JOBS);

            refusedBeside(cluster, "two-1");

            // Stop all (runs in flight, claims made ahead handed back), then start all.
            List<WorkerProcess> news = stopAllStartAll(cluster, two1);
            WorkerProcess new1 = news.get(0);
            WorkerProcess new2 = news.get(1);

            // A layout 2 worker started beside them refuses by its own look, and runs nothing.
            WorkerProcess two2 = old(cluster, layoutTwo, "two-2");
            assertThat(two2.waitForExit()).isEqualTo(1);
            assertThat(two2.stderr()).contains("new-");
            assertThat(two2.events("job_started")).isEmpty();

            // Every slot from the first new worker's start on (before it, no worker of either layout ran) started,
            // or was skipped because an earlier run of its job held the lease (overlap: skip): a new worker starting
            // within a slot's grace claims it late, and its run may still hold the lease at the next slots. Kept
            // logs of a clean-clone run showed it: new-1 started at :43.940, ran :42 from :43.987 to :44.191, and
            // skipped :43 and :44. Nothing silent, nothing twice.
            Instant from = WorkerProcess.ts(new1.events("worker_started").get(0)).truncatedTo(ChronoUnit.SECONDS).plusSeconds(1);
            Instant to = from.plusSeconds(5);
            try {
                await().atMost(Duration.ofSeconds(30)).until(() -> cluster.everyJobReached(JOBS, to.plusSeconds(1))
                        && cluster.silentSlots(JOBS, from, to).isEmpty());
            } catch (org.awaitility.core.ConditionTimeoutException e) {
                cluster.keepLogs(Path.of("target", "it-logs", "upgrade-2-3"));
                throw new AssertionError("slots from " + from + " to " + to + " silent (logs kept in target/it-logs/upgrade-2-3):\n"
                        + cluster.fates(cluster.silentSlots(JOBS, from, to)), e);
            }
            List<String> notStarted = cluster.slotsNeverStarted(JOBS, from, to);
            assertThat(cluster.events("slot_skipped").stream().filter(e -> notStarted.contains(WorkerProcess.key(e))).toList())
                    .as("each slot not started was skipped for a run of its job holding the lease, and for nothing else: %s",
                            cluster.fates(notStarted))
                    .allSatisfy(e -> assertThat(e.path("reason").asText()).startsWith("overlap"))
                    .extracting(WorkerProcess::key).containsAll(notStarted);
            Map<String, List<String>> starts = cluster.startsBySlot();
            assertThat(starts.entrySet().stream().filter(e -> e.getValue().size() > 1).map(Map.Entry::getKey).toList())
                    .as("slots started twice, across the switch").isEmpty();
            System.out.printf("upgrade: layout 2 to 3: %d slots run, none twice; the layout 2 worker beside layout 3 ones refused%n",
                    starts.size());
        }
    }

    /** A new worker started beside a live older one ({@code other}): refused, with one line naming it; nothing ran. */
    private static void refusedBeside(Cluster cluster, String other) {
        WorkerProcess refused = cluster.start("new-0");
        assertThat(refused.waitForExit()).isEqualTo(1);
        List<String> errors = refused.stderr().lines().filter(l -> !l.isBlank()).toList();
        assertThat(errors).hasSize(1);
        assertThat(errors.get(0)).startsWith("error: ").contains("older key layout").contains(other).contains("Upgrading");
        assertThat(refused.events("job_started")).isEmpty();
    }

    /** The upgrade itself: the old worker stopped (SIGTERM), then two new ones started; returns them once both run. */
    private static List<WorkerProcess> stopAllStartAll(Cluster cluster, WorkerProcess old) {
        assertThat(old.terminate()).isZero();
        List<WorkerProcess> news = List.of(cluster.start("new-1"), cluster.start("new-2"));
        await().atMost(Duration.ofSeconds(30)).until(() -> news.stream().noneMatch(w -> w.events("job_started").isEmpty()));
        return news;
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
