package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.lockstep.scheduler.cron.CronSchedule;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The schedule vocabulary on 3 worker JVMs and a real Redis: a job with two crons runs each instant
 * of their union once (an instant both fire at is one slot); a job with {@code jitter} and one with
 * {@code H} fire at the offsets their names hash to, the same on every worker (every claim and
 * every step-aside of every worker names the same slots) and after every worker was restarted.
 */
class ScheduleVocabularyIT {

    private static final ZoneId UTC = ZoneId.of("UTC");

    @TempDir
    Path dir;

    @Test
    void twoCronsRunEachInstantOnceAndHashedOffsetsAreTheSameOnEveryWorkerAcrossARestart() {
        String yaml = """
                defaults:
                  lease: 5s
                  misfireGrace: 2s
                jobs:
                  - name: twice
                    cron: ["*/2 * * * * *", "*/3 * * * * *"]
                    class: io.lockstep.examples.HeartbeatJob
                  - name: spread
                    cron: "*/5 * * * * *"
                    class: io.lockstep.examples.HeartbeatJob
                    jitter: 4s
                  - name: hashed
                    cron: "H/4 * * * * *"
                    class: io.lockstep.examples.HeartbeatJob
                """;
        // What the names hash to, computed here as any worker computes it.
        long offset = CronSchedule.of(List.of("*/5 * * * * *"), UTC, "spread").withJitter(Duration.ofSeconds(4), "spread").offset().toMillis();
        String hashed = CronSchedule.of(List.of("H/4 * * * * *"), UTC, "hashed").expanded().get(0);
        int hashedFirst = Integer.parseInt(hashed.substring(0, hashed.indexOf('-')));
        assertThat(offset).as("names whose hash moves the slots, or the test would not tell").isPositive();
        assertThat(hashedFirst).isPositive();
        try (Cluster cluster = new Cluster(dir, yaml)) {
            List<WorkerProcess> first = List.of(cluster.start("w1"), cluster.start("w2"), cluster.start("w3"));
            cluster.awaitStarted();
            await().atMost(Duration.ofSeconds(40)).until(() -> started(cluster, "twice").size() >= 8 && started(cluster, "spread").size() >= 3
                    && started(cluster, "hashed").size() >= 3);
            first.forEach(w -> assertThat(w.terminate()).as(w.stderr()).isZero());
            List<WorkerProcess> second = List.of(cluster.start("w4"), cluster.start("w5"), cluster.start("w6"));
            await().atMost(Duration.ofSeconds(30)).until(() -> second.stream().allMatch(WorkerProcess::hasStarted));
            await().atMost(Duration.ofSeconds(40)).until(() -> second.stream().mapToLong(w -> w.events("job_started").stream()
                    .filter(e -> e.path("job").asText().equals("spread")).count()).sum() >= 2);
            second.forEach(w -> assertThat(w.terminate()).as(w.stderr()).isZero());

            assertThat(cluster.startsBySlot().values()).as("every slot started once").allSatisfy(ws -> assertThat(ws).hasSize(1));
            List<Instant> twice = started(cluster, "twice");
            assertThat(twice).allSatisfy(s -> assertThat(s.getEpochSecond() % 2 == 0 || s.getEpochSecond() % 3 == 0)
                    .as("%s is an instant of one of the crons", s).isTrue());
            assertThat(twice).as("both crons fire: instants of the second alone (odd multiples of 3) and of the first alone")
                    .anyMatch(s -> s.getEpochSecond() % 6 == 3).anyMatch(s -> s.getEpochSecond() % 6 == 2 || s.getEpochSecond() % 6 == 4);
            // Every worker, before and after the restart, claims at the instants it computes: one that
            // hashed another offset would be alone at its instants, win them and start them there.
            for (JsonNode e : slotEvents(cluster, "spread")) {
                assertThat(WorkerProcess.slot(e).toEpochMilli() % 5000).as("%s", e).isEqualTo(offset);
            }
            assertThat(slotEvents(cluster, "spread").stream().map(e -> e.path("worker").asText()).distinct())
                    .as("claims and step-asides from both generations").containsAnyOf("w1", "w2", "w3").containsAnyOf("w4", "w5", "w6");
            assertThat(cluster.events("slot_claimed").stream().filter(e -> e.path("job").asText().equals("spread")))
                    .allSatisfy(e -> assertThat(e.path("jitter_ms").asLong()).isEqualTo(offset));
            for (JsonNode e : slotEvents(cluster, "hashed")) {
                long second0 = WorkerProcess.slot(e).getEpochSecond() % 60;
                assertThat(second0 >= hashedFirst && (second0 - hashedFirst) % 4 == 0).as("%s fires at %s", e, hashed).isTrue();
            }
            cluster.assertAuditHolds();
            cluster.assertAuditNamesAForgedRerun(started(cluster, "twice").get(2)); // a second run of a slot of two crons
        }
    }

    @Test
    void aBlackoutDateIsRecordedSkippedByCalendarOnceForEverySlotAndNothingRuns() throws Exception {
        java.time.LocalDate today = java.time.LocalDate.now(UTC);
        String yaml = """
                defaults:
                  lease: 5s
                  misfireGrace: 2s
                calendars:
                  blackout: { dates: ["%s..%s"] }
                jobs:
                  - name: frozen
                    cron: "* * * * * *"
                    class: io.lockstep.examples.HeartbeatJob
                    skipOn: [blackout]
                  - name: normal
                    cron: "* * * * * *"
                    class: io.lockstep.examples.HeartbeatJob
                """.formatted(today, today.plusDays(1)); // today and tomorrow (UTC): the test may cross midnight
        try (Cluster cluster = new Cluster(dir, yaml)) {
            List.of("w1", "w2", "w3").forEach(cluster::start);
            cluster.awaitStarted();
            await().atMost(Duration.ofSeconds(30)).until(() -> skipped(cluster, "frozen").size() >= 6 && started(cluster, "normal").size() >= 6);
            cluster.workers.forEach(w -> assertThat(w.terminate()).as(w.stderr()).isZero());

            assertThat(started(cluster, "frozen")).as("a blacked-out job never runs").isEmpty();
            List<JsonNode> skips = skipped(cluster, "frozen");
            assertThat(skips).allSatisfy(e -> assertThat(e.path("code").asText()).isEqualTo("calendar"))
                    .allSatisfy(e -> assertThat(e.path("reason").asText()).isEqualTo("calendar: skipOn blackout"));
            assertThat(skips.stream().collect(java.util.stream.Collectors.groupingBy(WorkerProcess::key, java.util.stream.Collectors.counting())).values())
                    .as("each slot reported by the one worker whose request decided it").containsOnly(1L);
            // The history (Redis) has each of those slots, skipped for the calendar.
            io.lockstep.examples.cli.CliRun history = io.lockstep.examples.cli.CliRun.of("history", "--config", cluster.config.toString(),
                    "--job", "frozen", "--limit", "100", "--json");
            assertThat(history.exit()).as(history.err()).isZero();
            JsonNode entries = new com.fasterxml.jackson.databind.ObjectMapper().readTree(history.out());
            java.util.Map<String, String> reasonBySlot = new java.util.HashMap<>();
            entries.forEach(e -> reasonBySlot.put(e.path("slot").asText(), e.path("outcome").asText() + " " + e.path("reason").asText()));
            for (JsonNode e : skips) {
                assertThat(reasonBySlot).containsEntry(e.path("slot").asText(), "skipped calendar");
            }
            cluster.assertAuditHolds();
        }
    }

    @Test
    void aLabelledJobNeverRunsOnAnUnlabelledWorkerAndAJobNoWorkerCanRunIsReportedEverySlot() {
        String yaml = """
                defaults:
                  lease: 5s
                  misfireGrace: 1s
                jobs:
                  - name: render
                    cron: "* * * * * *"
                    class: io.lockstep.examples.HeartbeatJob
                    runOn: { labels: [gpu] }
                  - name: train
                    cron: "* * * * * *"
                    class: io.lockstep.examples.HeartbeatJob
                    runOn: { labels: [tpu] }
                """;
        try (Cluster cluster = new Cluster(dir, yaml)) {
            cluster.startWithArgs("gpu-1", "--label", "gpu");
            cluster.start("plain-1");
            cluster.start("plain-2");
            cluster.awaitStarted();
            await().atMost(Duration.ofSeconds(40)).until(() -> started(cluster, "render").size() >= 6
                    && cluster.events("slot_missed").stream().filter(e -> e.path("job").asText().equals("train")).count() >= 6);
            cluster.workers.forEach(w -> assertThat(w.terminate()).as(w.stderr()).isZero());

            assertThat(cluster.events("job_started")).filteredOn(e -> e.path("job").asText().equals("render"))
                    .allSatisfy(e -> assertThat(e.path("worker").asText()).isEqualTo("gpu-1"));
            assertThat(started(cluster, "train")).as("no worker has its label").isEmpty();
            List<JsonNode> missed = cluster.events("slot_missed").stream().filter(e -> e.path("job").asText().equals("train")).toList();
            assertThat(missed).allSatisfy(e -> assertThat(e.path("code").asText()).isEqualTo("no_worker"));
            assertThat(missed.stream().collect(java.util.stream.Collectors.groupingBy(WorkerProcess::key, java.util.stream.Collectors.counting())).values())
                    .as("each slot reported once").containsOnly(1L);
            assertThat(cluster.events("config_loaded")).anySatisfy(e -> assertThat(e.path("labels").toString()).isEqualTo("[\"gpu\"]"));
            cluster.assertAuditHolds();
        }
    }

    @Test
    void anEveryWorkerJobRunsOncePerWorkerPerSlotThroughARestart() throws Exception {
        String yaml = """
                defaults:
                  lease: 5s
                  misfireGrace: 2s
                jobs:
                  - name: refresh
                    cron: "* * * * * *"
                    class: io.lockstep.examples.HeartbeatJob
                    runOn: every-worker
                """;
        try (Cluster cluster = new Cluster(dir, yaml)) {
            List<WorkerProcess> workers = List.of(cluster.start("w1"), cluster.start("w2"), cluster.start("w3"));
            cluster.awaitStarted();
            await().atMost(Duration.ofSeconds(40)).until(() -> workers.stream().allMatch(w -> w.events("job_started").size() >= 3));
            assertThat(workers.get(1).terminate()).isZero();
            WorkerProcess again = cluster.start("w2"); // the same id: the same instance of the job
            await().atMost(Duration.ofSeconds(40)).until(() -> again.hasStarted() && again.events("job_started").size() >= 3);
            // history: the job's instances on the live workers, merged; JOB@WORKER for one of them.
            com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
            io.lockstep.examples.cli.CliRun merged = io.lockstep.examples.cli.CliRun.of("history", "--config", cluster.config.toString(),
                    "--job", "refresh", "--limit", "30", "--json");
            assertThat(merged.exit()).as(merged.err()).isZero();
            List<String> mergedWorkers = new ArrayList<>();
            json.readTree(merged.out()).forEach(e -> mergedWorkers.add(e.path("worker").asText()));
            assertThat(mergedWorkers).as("entries of every live worker's instance").contains("w1", "w2", "w3");
            io.lockstep.examples.cli.CliRun one = io.lockstep.examples.cli.CliRun.of("history", "--config", cluster.config.toString(),
                    "--job", "refresh@w3", "--json");
            assertThat(one.exit()).as(one.err()).isZero();
            assertThat(json.readTree(one.out())).isNotEmpty().allSatisfy(e -> assertThat(e.path("worker").asText()).isEqualTo("w3"));
            workers.get(0).terminate();
            workers.get(2).terminate();
            again.terminate();

            List<JsonNode> starts = allEvents("job_started");
            assertThat(starts).allSatisfy(e -> assertThat(e.path("job").asText()).isEqualTo("refresh@" + e.path("worker").asText()));
            assertThat(starts.stream().collect(java.util.stream.Collectors.groupingBy(e -> e.path("worker").asText() + " "
                    + e.path("slot").asText(), java.util.stream.Collectors.counting())).values())
                    .as("once per worker per slot, w2's two lives included").containsOnly(1L);
            assertThat(starts.stream().collect(java.util.stream.Collectors.groupingBy(e -> e.path("slot").asText(),
                    java.util.stream.Collectors.counting())).values()).as("a slot runs on each worker").contains(3L);
            cluster.assertAuditHolds();
            // One worker's instance run again on another worker (its own token, one higher): audit names it.
            cluster.assertAuditNamesAForgedRerun(WorkerProcess.slot(starts.get(0)));
        }
    }

    /** Every event of every worker life in the test's folder (a worker started again keeps its earlier life's file). */
    private List<JsonNode> allEvents(String name) throws java.io.IOException {
        List<JsonNode> out = new ArrayList<>();
        com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
        try (java.util.stream.Stream<Path> files = java.nio.file.Files.list(dir)) {
            for (Path f : files.filter(f -> f.getFileName().toString().matches(".*\\.out(\\.\\d+)?\\.jsonl")).toList()) {
                for (String line : java.nio.file.Files.readAllLines(f)) {
                    if (line.startsWith("{") && line.endsWith("}")) {
                        JsonNode e = json.readTree(line);
                        if (name.equals(e.path("event").asText())) {
                            out.add(e);
                        }
                    }
                }
            }
        }
        return out;
    }

    private static List<JsonNode> skipped(Cluster cluster, String job) {
        return cluster.events("slot_skipped").stream().filter(e -> e.path("job").asText().equals(job)).toList();
    }

    private static List<Instant> started(Cluster cluster, String job) {
        return cluster.events("job_started").stream().filter(e -> e.path("job").asText().equals(job)).map(WorkerProcess::slot).sorted().toList();
    }

    /** Every claim, step-aside and start of the job, on every worker. */
    private static List<JsonNode> slotEvents(Cluster cluster, String job) {
        List<JsonNode> all = new ArrayList<>();
        Stream.of("slot_claimed", "slot_contended", "job_started").forEach(n -> all.addAll(cluster.events(n)));
        return all.stream().filter(e -> e.path("job").asText().equals(job)).toList();
    }
}
