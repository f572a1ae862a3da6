package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code lockstep backfill} on 3 worker JVMs and a real Redis: 300 past slots at 50/s each run
 * once, in slot order, while the cluster keeps its schedule (another job's slots and the
 * backfilled job's own live slots each run once, none skipped for the backfill); the worker driving
 * it is SIGKILLed midway and another picks it up where the store's cursor says, none twice; a
 * backfill followed with its progress bar is cancelled cleanly. {@code audit} holds on every log,
 * and names a forged second run of a backfilled slot.
 */
class BackfillIT {

    private static final String YAML = """
            defaults:
              lease: 5s
              misfireGrace: 2s
            jobs:
              - name: report
                cron: "* * * * * *"
                class: io.lockstep.examples.HeartbeatJob
              - name: tick
                cron: "* * * * * *"
                class: io.lockstep.examples.HeartbeatJob
            """;

    @TempDir
    Path dir;

    record CliRun(int exit, String out, String err) {}

    private static CliRun cli(String... args) {
        StringWriter out = new StringWriter(), err = new StringWriter();
        int exit = io.lockstep.worker.WorkerMain.execute(new PrintWriter(out, true), new PrintWriter(err, true), args);
        return new CliRun(exit, out.toString(), err.toString());
    }

    /** The backfill's runs (first attempts of origin backfill) of {@code job}, in the order they started. */
    private static List<JsonNode> backfilled(Cluster cluster, String job) {
        return cluster.events("job_started").stream()
                .filter(e -> e.path("job").asText().equals(job) && e.path("origin").asText().equals("backfill") && !e.path("rerun").asBoolean())
                .sorted(Comparator.comparing(WorkerProcess::ts)).toList();
    }

    private static JsonNode status(Cluster cluster) throws Exception {
        return new ObjectMapper().readTree(cli("status", "--config", cluster.config.toString(), "--json").out());
    }

    @Test
    void threeHundredSlotsRunOnceInOrderThroughTheKillOfTheirDriverWhileTheScheduleKeepsGoing() throws Exception {
        try (Cluster cluster = new Cluster(dir, YAML)) {
            List.of("w1", "w2", "w3").forEach(cluster::start);
            cluster.awaitStarted();
            await().atMost(Duration.ofSeconds(20)).until(() -> cluster.events("job_started").size() >= 6);
            Instant now = Instant.now().truncatedTo(ChronoUnit.SECONDS);
            Instant from = now.minusSeconds(310);
            Instant to = now.minusSeconds(11); // 300 slots, every one before the cluster started: nobody decided them
            CliRun asked = cli("backfill", "--config", cluster.config.toString(), "report", "--from", from.toString(), "--to", to.toString(),
                    "--rate", "50/s", "--detach");
            assertThat(asked.exit()).as(asked.err()).isZero();
            assertThat(asked.out()).contains("300 slot(s)").contains("300 to run at most 50/s");

            // Kill the worker driving it once it is well under way.
            await().atMost(Duration.ofSeconds(30)).until(() -> backfilled(cluster, "report").size() >= 60);
            WorkerProcess driver = cluster.workers.stream().filter(w -> !w.events("backfill_driving").isEmpty()).findFirst().orElseThrow();
            driver.signal("KILL");
            int atKill = backfilled(cluster, "report").size();
            assertThat(atKill).as("killed midway").isLessThan(300);
            Instant killedAt = Instant.now();

            await().atMost(Duration.ofSeconds(60)).until(() -> cluster.workers.stream().filter(w -> w != driver)
                    .anyMatch(w -> w.events("backfill_ended").stream().anyMatch(e -> e.path("state").asText().equals("done"))));
            JsonNode progress = status(cluster).path("backfills").get(0);
            assertThat(progress.path("state").asText()).isEqualTo("done");
            assertThat(progress.path("progress").path("total").asLong()).isEqualTo(300);
            assertThat(progress.path("progress").path("passed").asLong()).isEqualTo(300);
            assertThat(progress.path("progress").path("driver").asText()).isNotEqualTo(driver.id);
            Instant ended = Instant.now();
            await().atMost(Duration.ofSeconds(10)).until(() -> cluster.startsBySlot().keySet().stream()
                    .anyMatch(k -> k.startsWith("tick@") && WorkerProcess.slotOf(k).isAfter(ended.plusSeconds(1))));
            cluster.workers.stream().filter(WorkerProcess::isAlive).forEach(w -> assertThat(w.terminate()).as(w.stderr()).isZero());

            List<JsonNode> runs = backfilled(cluster, "report");
            Map<Instant, Long> perSlot = runs.stream().collect(Collectors.groupingBy(WorkerProcess::slot, Collectors.counting()));
            assertThat(perSlot.values()).as("no slot of the backfill started twice").containsOnly(1L);
            List<Instant> expected = new ArrayList<>();
            for (Instant s = from; !s.isAfter(to); s = s.plusSeconds(1)) {
                expected.add(s);
            }
            // The one slot the killed driver had claimed when the kill came may not run: a claim made within its start window is
            // the run's start, and a started run whose worker dies is not run again under recover: none (GUARANTEES 14).
            Instant afterKilled = backfilled(cluster, "report").stream().filter(e -> e.path("worker").asText().equals(driver.id))
                    .map(WorkerProcess::slot).max(Instant::compareTo).orElseThrow().plusSeconds(1);
            List<Instant> notRun = expected.stream().filter(s -> !perSlot.containsKey(s)).toList();
            assertThat(notRun).as("every slot of the range ran but the one the kill cut off").isSubsetOf(List.of(afterKilled));
            assertThat(runs.stream().map(WorkerProcess::slot).toList()).as("in slot order, across both drivers").isSorted();
            assertThat(runs.stream().map(e -> e.path("worker").asText()).distinct().count()).as("two drivers ran it").isGreaterThanOrEqualTo(2);

            // The cluster kept its schedule: every slot of both jobs from the start to the end ran once, none skipped for the
            // backfill. Around the kill: a slot claimed ahead by the killed worker is recovered or missed, as any kill leaves it;
            // and a run the kill cut off (the backfill's, or one of either job's own) holds its job's lease until it runs out
            // (lease 5 s), so that job's slots
            // until then wait for it past their grace (2 s) and are missed, or skipped for overlap behind the first of them to
            // get the lease, as behind any run a kill cut off.
            Instant firstLive = cluster.workers.stream().map(w -> w.events("worker_started").get(0)).map(WorkerProcess::ts)
                    .max(Comparator.naturalOrder()).orElseThrow().plusSeconds(2).truncatedTo(ChronoUnit.SECONDS);
            Map<String, List<String>> live = cluster.startsBySlot();
            try {
                for (String job : List.of("tick", "report")) {
                    long after = 5_000 + 2_000 + 1_000; // either job's run the kill cut off holds its lease 5 s
                    for (Instant s = firstLive; s.isBefore(ended); s = s.plusSeconds(1)) {
                        long fromKill = Duration.between(killedAt, s).toMillis();
                        if (fromKill > -3_000 && fromKill < after) {
                            continue;
                        }
                        assertThat(live.get(job + "@" + s)).as("%s at %s ran once", job, s).hasSize(1);
                    }
                }
                // (Behind the cut-off run, the first of the waiting slots to get the lease makes the next one skip for overlap.)
                assertThat(cluster.events("slot_skipped")).as("no slot skipped for the backfill, the kill's aftermath aside")
                        .allSatisfy(e -> assertThat(Duration.between(killedAt, WorkerProcess.slot(e)).toMillis()).isBetween(-3_000L, 8_000L));
            } catch (AssertionError e) {
                cluster.keepLogs(Path.of("target", "audit-failures", dir.getFileName().toString()));
                throw e;
            }
            cluster.assertAuditHolds();
            cluster.assertAuditNamesAForgedRerun(e -> e.path("origin").asText().equals("backfill") && WorkerProcess.slot(e).equals(expected.get(150)));
        }
    }

    @Test
    void aBackfillFollowedWithItsProgressBarIsCancelledCleanly() throws Exception {
        try (Cluster cluster = new Cluster(dir, YAML)) {
            List.of("w1", "w2", "w3").forEach(cluster::start);
            cluster.awaitStarted();
            Instant now = Instant.now().truncatedTo(ChronoUnit.SECONDS);
            Instant from = now.minusSeconds(200);
            CompletableFuture<CliRun> following = CompletableFuture.supplyAsync(() -> cli("backfill", "--config", cluster.config.toString(),
                    "report", "--from", from.toString(), "--to", now.minusSeconds(11).toString(), "--rate", "5/s"));
            await().atMost(Duration.ofSeconds(30)).until(() -> backfilled(cluster, "report").size() >= 8);
            CliRun cancel = cli("backfill", "--config", cluster.config.toString(), "--cancel", "report");
            assertThat(cancel.exit()).as(cancel.err()).isZero();
            int atCancel = backfilled(cluster, "report").size();

            CliRun followed = following.get(30, java.util.concurrent.TimeUnit.SECONDS);
            assertThat(followed.exit()).as("the following CLI exits 3 for a cancel: %s%s", followed.out(), followed.err()).isEqualTo(3);
            assertThat(followed.out()).contains("following it").contains("] ").contains("ran ").contains("backfill cancelled");
            assertThat(status(cluster).path("backfills").get(0).path("state").asText()).isEqualTo("cancelled");
            // One claim may have been on its way as the cancel landed; none after it.
            await().during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(5)).until(() -> backfilled(cluster, "report").size() <= atCancel + 1);
            assertThat(cluster.workers.stream().flatMap(w -> w.events("backfill_ended").stream()))
                    .singleElement().satisfies(e -> assertThat(e.path("state").asText()).isEqualTo("cancelled"));
            cluster.assertAuditHolds();
        }
    }
}
