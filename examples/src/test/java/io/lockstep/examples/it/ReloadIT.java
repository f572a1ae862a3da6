package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.lockstep.examples.cli.CliRun;
import io.lockstep.redis.LocalRedisServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Schedules that change without a restart (issue 22), with three real worker JVMs on a real
 * redis-server, each reading its own copy of the config as on three hosts: a rollout of a new
 * config, one worker at a time (SIGHUP on two, the file watch on the third), with an invalid file
 * on the way. The drift check reports the rollout until every worker runs the new config; the
 * invalid file changes nothing and {@code status} shows its worker still on the old hash; the
 * removed job's run in flight finishes; a changed cron takes its next slot from the reload; the
 * added job starts at its next slot; no slot runs twice across it all. One worker also traces its
 * runs through the OpenTelemetry SDK configured from the OTEL_* environment (logging exporter).
 */
class ReloadIT {

    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;

    private static String config(LocalRedisServer redis, String reload, String jobs) {
        return "redis:\n  uri: " + redis.uri() + "\n  timeout: 1s\nworker:\n  threads: 8\n  shutdownTimeout: 10s\n  reload: " + reload
                + "\ndefaults:\n  lease: 2s\n  misfireGrace: 2s\njobs:\n" + jobs;
    }

    @Test
    void aConfigRollsOutWorkerByWorkerWithoutARestartAndWithoutASlotTwice() throws Exception {
        Path gate = dir.resolve("gate");
        String v1 = "  - { name: tick, cron: \"* * * * * *\", class: io.lockstep.examples.HeartbeatJob, params: { workMillis: 20 } }\n"
                + "  - { name: gated, cron: \"* * * * * *\", class: io.lockstep.examples.it.jobs.GatedJob, overlap: skip,"
                + " params: { gate: \"" + gate + "\" } }\n";
        String v2 = "  - { name: tick, cron: \"*/2 * * * * *\", class: io.lockstep.examples.HeartbeatJob, params: { workMillis: 20 } }\n"
                + "  - { name: added, cron: \"* * * * * *\", class: io.lockstep.examples.HeartbeatJob, params: { workMillis: 20 } }\n";
        String invalid = v2.replace("*/2 * * * * *", "*/61 * * * * *");
        try (LocalRedisServer redis = LocalRedisServer.start(); Cluster cluster = Cluster.onRedis(dir, "", "")) {
            Path c1 = dir.resolve("w1.yaml");
            Path c2 = dir.resolve("w2.yaml");
            Path c3 = dir.resolve("w3.yaml");
            Files.writeString(c1, config(redis, "signal", v1));
            Files.writeString(c2, config(redis, "signal", v1));
            // The two versions the rollout goes through, kept for the audit of its logs.
            Files.writeString(dir.resolve("v1.yaml"), config(redis, "signal", v1));
            Files.writeString(dir.resolve("v2.yaml"), config(redis, "signal", v2));
            cluster.auditConfigs.addAll(List.of(dir.resolve("v1.yaml"), dir.resolve("v2.yaml")));
            Files.writeString(c3, config(redis, "watch", v1));
            WorkerProcess w1 = WorkerProcess.start(dir, c1, "w1", Map.of("OTEL_TRACES_EXPORTER", "logging", "OTEL_SERVICE_NAME", "reload-it"));
            WorkerProcess w2 = WorkerProcess.start(dir, c2, "w2", Map.of());
            WorkerProcess w3 = WorkerProcess.start(dir, c3, "w3", Map.of());
            cluster.workers.addAll(List.of(w1, w2, w3));
            cluster.awaitStarted();
            JsonNode gatedRun = await().atMost(Duration.ofSeconds(30)).until(() -> cluster.events("job_started").stream()
                    .filter(e -> e.path("job").asText().equals("gated")).findFirst(), java.util.Optional::isPresent).orElseThrow();
            String oldHash = hashOf(w1);

            // w1 first: SIGHUP. Its peers report the drift, naming the jobs that differ.
            Files.writeString(c1, config(redis, "signal", v2));
            Instant firstReload = Instant.now();
            w1.signal("HUP");
            JsonNode updated = await().atMost(Duration.ofSeconds(10)).until(() -> w1.events("schedule_updated"), l -> !l.isEmpty()).get(0);
            assertThat(updated.path("added").asText()).isEqualTo("added");
            assertThat(updated.path("changed").asText()).isEqualTo("tick");
            assertThat(updated.path("removed").asText()).isEqualTo("gated");
            String newHash = updated.path("config_hash").asText();
            long reloadMs = Duration.between(firstReload, WorkerProcess.ts(updated)).toMillis();
            assertThat(newHash).isNotEqualTo(oldHash);
            await().atMost(Duration.ofSeconds(15)).until(() -> !w2.events("config_drift").isEmpty() && !w3.events("config_drift").isEmpty());
            long driftMs = Duration.between(firstReload, WorkerProcess.ts(w2.events("config_drift").get(0))).toMillis();
            assertThat(w2.events("config_drift")).extracting(e -> e.path("job").asText()).containsExactlyInAnyOrder("tick", "added", "gated");

            // w2: an invalid file first. Nothing changes; status shows w2 still on the old hash.
            Files.writeString(c2, config(redis, "signal", invalid));
            w2.signal("HUP");
            JsonNode failed = await().atMost(Duration.ofSeconds(10)).until(() -> w2.events("config_reload_failed"), l -> !l.isEmpty()).get(0);
            assertThat(failed.path("problems").toString()).contains(c2.toString()).contains("cron");
            assertThat(w2.events("schedule_updated")).isEmpty();
            await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(hashes()).containsEntry("w1", newHash)
                    .containsEntry("w2", oldHash).containsEntry("w3", oldHash));
            JsonNode status = status(c1);
            assertThat(status.path("drift")).isNotEmpty();

            // Then the right file on w2 (SIGHUP), and w3 by its file watch alone.
            Files.writeString(c2, config(redis, "signal", v2));
            w2.signal("HUP");
            Files.writeString(c3, config(redis, "watch", v2));
            await().atMost(Duration.ofSeconds(15)).until(() -> !w2.events("schedule_updated").isEmpty() && !w3.events("schedule_updated").isEmpty());
            // config_reloaded follows schedule_updated in the worker's log: wait for the event read, not the one before it.
            JsonNode watched = await().atMost(Duration.ofSeconds(5)).until(() -> w3.events("config_reloaded"), l -> !l.isEmpty()).get(0);
            assertThat(watched.path("trigger").asText()).isEqualTo("file changed");
            long watchMs = Duration.between(Files.getLastModifiedTime(c3).toInstant(), WorkerProcess.ts(w3.events("schedule_updated").get(0)))
                    .toMillis();
            Instant allReloaded = Instant.now();
            await().atMost(Duration.ofSeconds(15)).untilAsserted(() -> assertThat(Set.copyOf(hashes().values())).containsExactly(newHash));
            await().atMost(Duration.ofSeconds(15)).until(() -> cluster.workers.stream()
                    .allMatch(w -> w.events("config_drift").isEmpty() || !w.events("config_drift_resolved").isEmpty()));
            assertThat(status(c1).path("drift")).isEmpty();
            long resolvedMs = Duration.between(allReloaded, cluster.workers.stream().flatMap(w -> w.events("config_drift_resolved").stream())
                    .map(WorkerProcess::ts).max(Instant::compareTo).orElse(allReloaded)).toMillis();
            System.out.printf("%nReloadIT: SIGHUP to schedule_updated %d ms; drift reported by a peer %d ms after it; file written to "
                    + "reload by the watch %d ms; drift resolved on every worker %d ms after the last reload%n", reloadMs, driftMs, watchMs,
                    resolvedMs);

            // The removed job's run in flight finishes, and it runs nothing new.
            Files.writeString(gate, "open");
            await().atMost(Duration.ofSeconds(10)).until(() -> cluster.events("job_succeeded").stream()
                    .anyMatch(e -> WorkerProcess.same(e, gatedRun)));
            Instant settled = allReloaded.truncatedTo(ChronoUnit.SECONDS).plusSeconds(4);
            await().atMost(Duration.ofSeconds(20)).until(() -> cluster.events("job_started").stream()
                    .anyMatch(e -> e.path("job").asText().equals("added") && !WorkerProcess.slot(e).isBefore(settled)));
            assertThat(cluster.events("job_started")).filteredOn(e -> e.path("job").asText().equals("gated"))
                    .allSatisfy(e -> assertThat(WorkerProcess.slot(e)).isBefore(allReloaded.plusSeconds(1)));
            assertThat(cluster.events("job_started")).filteredOn(e -> e.path("job").asText().equals("added"))
                    .allSatisfy(e -> assertThat(WorkerProcess.slot(e)).as("the added job's slots").isAfter(firstReload));
            assertThat(cluster.events("job_started")).filteredOn(e -> e.path("job").asText().equals("tick")
                    && WorkerProcess.slot(e).isAfter(allReloaded.plusSeconds(1)))
                    .isNotEmpty().allSatisfy(e -> assertThat(WorkerProcess.slot(e).getEpochSecond() % 2).as("the new cron's slots").isZero());
            assertThat(cluster.startsBySlot()).as("each slot once").allSatisfy((slot, workers) -> assertThat(workers).as(slot).hasSize(1));

            // No slot silent across the rollout, by the schedule each worker ran: tick every second while
            // every worker ran v1, its odd seconds while one still did (w2 and w3 reloaded last), its even
            // seconds throughout; added every second from a second after w1 took it on.
            Instant began = WorkerProcess.slot(gatedRun).plusSeconds(1);
            Instant lastReload = java.util.stream.Stream.of(w2, w3).map(w -> WorkerProcess.ts(w.events("schedule_updated").get(0)))
                    .max(Instant::compareTo).orElseThrow();
            Instant end = Instant.now().truncatedTo(ChronoUnit.SECONDS).minusSeconds(3); // every slot's grace (2 s) over
            Set<String> handled = cluster.handled();
            Instant oldUntil = firstReload.truncatedTo(ChronoUnit.SECONDS);
            List<String> silent = new java.util.ArrayList<>(io.lockstep.scheduler.SlotCoverage.silent(handled, List.of("tick"), began, oldUntil,
                    Duration.ofSeconds(1)));
            Instant firstEven = Instant.ofEpochSecond(oldUntil.getEpochSecond() + oldUntil.getEpochSecond() % 2);
            silent.addAll(io.lockstep.scheduler.SlotCoverage.silent(handled, List.of("tick"), firstEven, end, Duration.ofSeconds(2)));
            silent.addAll(io.lockstep.scheduler.SlotCoverage.silent(handled, List.of("tick"), firstEven.plusSeconds(1),
                    lastReload.truncatedTo(ChronoUnit.SECONDS).minusSeconds(1), Duration.ofSeconds(2)));
            silent.addAll(io.lockstep.scheduler.SlotCoverage.silent(handled, List.of("added"), WorkerProcess.ts(updated)
                    .truncatedTo(ChronoUnit.SECONDS).plusSeconds(2), end, Duration.ofSeconds(1)));
            assertThat(silent).as("slots neither started nor reported across the rollout [%s, %s)", began, end).isEmpty();
            // Reloaded, not restarted: one life per worker.
            assertThat(cluster.workers).allSatisfy(w -> assertThat(w.events("worker_started")).as(w.id).hasSize(1));
            // The removed job's run in flight wrote its outcome: released as a success, and so in the history.
            assertThat(cluster.events("slot_released")).filteredOn(e -> WorkerProcess.same(e, gatedRun))
                    .singleElement().satisfies(e -> assertThat(e.path("success").asBoolean()).as("gated's run released as a success").isTrue());
            try (io.lockstep.redis.RedisLockProvider provider = io.lockstep.redis.RedisLockProvider.builder().uri(redis.uri()).build()) {
                assertThat(io.lockstep.redis.RedisAdmin.of(provider).history("gated", 50))
                        .filteredOn(r -> r.slot().equals(WorkerProcess.slot(gatedRun))).singleElement()
                        .satisfies(r -> assertThat(r.outcome()).isEqualTo("succeeded"));
            }

            // w1's runs are traced: the logging exporter prints each span with its trace id, the one in the run's events.
            JsonNode traced = w1.events("job_started").stream().filter(e -> e.has("trace_id")).findFirst().orElseThrow();
            await().atMost(Duration.ofSeconds(10)).until(() -> w1.stderr().contains(traced.path("trace_id").asText()));
            assertThat(w1.stderr()).contains("'lockstep.run " + traced.path("job").asText() + "'");
            assertThat(w2.events("job_started")).allSatisfy(e -> assertThat(e.has("trace_id")).as("no OTEL_* variable: untraced").isFalse());

            // One verdict over the whole rollout: each worker's slots checked against the config it ran at each.
            cluster.assertAuditHolds("--strict");
        }
    }

    private static String hashOf(WorkerProcess w) {
        return w.events("worker_started").get(0).path("config_hash").asText();
    }

    private Map<String, String> hashes() throws Exception {
        JsonNode workers = status(dir.resolve("w1.yaml")).path("workers");
        return java.util.stream.StreamSupport.stream(workers.spliterator(), false)
                .collect(Collectors.toMap(w -> w.path("id").asText(), w -> w.path("configHash").asText()));
    }

    private static JsonNode status(Path config) throws Exception {
        CliRun status = CliRun.of("status", "--config", config.toString(), "--json");
        assertThat(status.exit()).as(status.err()).isZero();
        return JSON.readTree(status.out());
    }
}
