package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.lockstep.examples.cli.CliRun;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Review C1, with two real worker JVMs on one real redis-server in the middle of a rollout that
 * raised {@code misfireGrace} from 1s to 5m. The old worker ({@code old}) writes slot records that
 * live 1s + 20 s (a manual run's: 30 s + 20 s; both workers run with the test knob
 * {@code lockstep.recordBeyondGraceMillis=20000}, production's is 2 min); the new one ({@code new}) has one job thread, held
 * by a long run across the slot, so it leaves its daily slots and a manual run waiting for a thread
 * while the old worker runs them. The two configs differ, so each worker is its own slots' preferred
 * claimer: both want every slot. Once every record the old worker wrote has expired, the new
 * worker's thread frees up, within its own grace: it must not run any of them again (each is
 * reported {@code slot_stale}, the store having kept the shortest record ttl any claim wrote).
 * Before the fix it ran all of them a second time. Takes about a minute: the old records' ttl.
 */
class RolloutIT {

    private static final int DAILY = 6;
    /** Records live 20 s past the grace instead of 2 min, so that the old worker's expire within the test. */
    private static final String RECORDS = "-Dlockstep.recordBeyondGraceMillis=20000";

    @TempDir
    Path dir;

    @Test
    void aRolloutThatRaisesTheGraceNeverRunsASlotTwiceOnABusyWorker() throws Exception {
        Path gate = dir.resolve("gate");
        // A daily cron with explicit h/m/s, far enough ahead for both JVMs to start on a loaded machine.
        Instant slot = Instant.now().truncatedTo(ChronoUnit.SECONDS).plusSeconds(25);
        Instant busyAt = slot.minusSeconds(6);
        List<String> daily = IntStream.range(0, DAILY).mapToObj(i -> "daily-" + i).toList();
        StringBuilder jobs = new StringBuilder("defaults:\n  zone: UTC\n  lease: 10s\n  misfireGrace: 5m\njobs:\n");
        for (String name : daily) {
            jobs.append("  - { name: ").append(name).append(", cron: \"").append(cron(slot))
                    .append("\", class: io.lockstep.examples.HeartbeatJob, params: { workMillis: 20 } }\n");
        }
        jobs.append("  - { name: adhoc, cron: \"0 0 0 1 1 *\", class: io.lockstep.examples.HeartbeatJob, params: { workMillis: 20 } }\n");
        String busy = "  - { name: busy, cron: \"" + cron(busyAt) + "\", class: io.lockstep.examples.it.jobs.GatedJob,"
                + " params: { gate: \"" + gate + "\" } }\n";
        try (Cluster cluster = new Cluster(dir, jobs + busy)) {
            // The new config (the audit's too): grace 5m, one job thread, and the job that holds it.
            cluster.editConfig("threads: 8", "threads: 1");
            String newConfig = Files.readString(cluster.config);
            // The old config: grace 1s, threads to spare, no busy job.
            Path old = dir.resolve("old.yaml");
            Files.writeString(old, Cluster.replacing(Cluster.replacing(Cluster.replacing(newConfig, busy, ""),
                    "misfireGrace: 5m", "misfireGrace: 1s"), "threads: 1", "threads: 8"));
            WorkerProcess fresh = cluster.start("new", RECORDS);
            WorkerProcess stale = WorkerProcess.start(dir, old, "old", RECORDS);
            cluster.workers.add(stale);
            cluster.awaitStarted();
            assertThat(Instant.now()).as("both workers started before the busy job's slot (raise the 25 s lead on this machine)")
                    .isBefore(busyAt.minusSeconds(1));

            // The new worker's only thread is taken before the slot; then a manual run it cannot take either.
            await().atMost(Duration.ofSeconds(40)).until(() -> !fresh.events("job_started").isEmpty());
            assertThat(fresh.events("job_started")).singleElement().satisfies(e -> assertThat(e.path("job").asText()).isEqualTo("busy"));
            CliRun trigger = CliRun.of("trigger", "--config", cluster.config.toString(), "--job", "adhoc");
            assertThat(trigger.exit()).as(trigger.err()).isZero();

            // The old worker runs every daily slot and the manual run.
            await().atMost(Duration.ofSeconds(40)).until(() -> starts(stale).size() == DAILY + 1);
            Map<String, JsonNode> ran = starts(stale);
            String manualKey = ran.entrySet().stream().filter(e -> e.getValue().path("manual").asBoolean()).map(Map.Entry::getKey)
                    .findFirst().orElseThrow();
            Set<String> dailyKeys = daily.stream().map(j -> io.lockstep.scheduler.SlotCoverage.key(j, slot)).collect(Collectors.toSet());
            assertThat(ran.keySet()).containsAll(dailyKeys).contains(manualKey);
            assertThat(fresh.events("job_started")).as("the new worker's thread is still held").hasSize(1);

            // Wait out the old worker's records (1s + 20 s; the manual one 30 s + 20 s): the store forgets them.
            Instant expiring = Instant.now();
            await().atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofSeconds(1)).until(() -> slotRecords(cluster).isEmpty());
            System.out.printf("rollout: the old worker's records expired %d s after its runs%n",
                    Duration.between(expiring, Instant.now()).toSeconds());
            assertThat(fresh.events("job_started")).as("the new worker's thread was held all along").hasSize(1);
            assertThat(fresh.events("job_succeeded")).isEmpty();

            // Free the new worker's thread, well within its own grace (5 min): it takes up what it left waiting.
            Files.writeString(gate, "open");
            Set<String> waited = new java.util.HashSet<>(dailyKeys);
            waited.add(manualKey);
            await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(decidedBy(fresh))
                    .as("what the new worker decided or was told once its thread freed up; its events since:%n%s", after(fresh, "job_succeeded"))
                    .containsAll(waited));

            Map<String, List<String>> starts = cluster.startsBySlot();
            Map<String, List<String>> startersOfWaited = waited.stream().collect(Collectors.toMap(k -> k, starts::get));
            assertThat(startersOfWaited).as("the workers that started each slot the new worker left waiting: the old one only,"
                    + " once (the new one must not run them again)").allSatisfy((key, starters) -> assertThat(starters).as(key)
                    .containsExactly("old"));
            Set<String> reportedStale = fresh.events("slot_stale").stream().map(WorkerProcess::key).collect(Collectors.toSet());
            assertThat(reportedStale).as("the new worker reports each slot it could no longer decide").containsAll(waited);
            System.out.printf("rollout: %d daily slots and 1 manual run, each started once; the busy worker reported %d slot_stale%n",
                    DAILY, reportedStale.size());
            cluster.assertAuditHolds();
        }
    }

    /** The worker's events from its first {@code type} on (lease renewals left out), one a line. */
    private static String after(WorkerProcess w, String type) {
        List<JsonNode> all = w.events();
        int from = IntStream.range(0, all.size()).filter(i -> type.equals(all.get(i).path("event").asText())).findFirst().orElse(0);
        return all.subList(from, all.size()).stream().filter(e -> !e.path("event").asText().equals("lease_renewed"))
                .map(JsonNode::toString).collect(Collectors.joining("\n"));
    }

    /** Six-field cron (s m h dom mon dow) firing daily at {@code at}'s UTC time of day. */
    private static String cron(Instant at) {
        ZonedDateTime t = at.atZone(ZoneOffset.UTC);
        return t.getSecond() + " " + t.getMinute() + " " + t.getHour() + " * * *";
    }

    /** job@slot -> the worker's (only) start of it. */
    private static Map<String, JsonNode> starts(WorkerProcess w) {
        return w.events("job_started").stream().collect(Collectors.toMap(WorkerProcess::key, e -> e, (a, b) -> a));
    }

    /** The job@slot keys the worker decided or was told about: started, reported stale, missed, or lost a race. */
    private static Set<String> decidedBy(WorkerProcess w) {
        Set<String> keys = new java.util.HashSet<>();
        for (String type : List.of("job_started", "slot_stale", "slot_missed", "slot_skipped", "slot_contended")) {
            w.events(type).forEach(e -> keys.add(WorkerProcess.key(e)));
        }
        return keys;
    }

    /** The slot records of the daily and the manual jobs still in Redis (redis-cli, as an operator would look). */
    private static List<String> slotRecords(Cluster cluster) {
        try {
            Process p = new ProcessBuilder("redis-cli", "-h", cluster.redis.host(), "-p", Integer.toString(cluster.redis.port()),
                    "--scan", "--pattern", "*:slot:*").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes());
            if (p.waitFor() != 0) {
                throw new IllegalStateException("redis-cli failed: " + out);
            }
            List<String> keys = new ArrayList<>();
            for (String line : out.split("\n")) {
                if (line.contains(":daily-") || line.contains(":adhoc:")) {
                    keys.add(line.strip());
                }
            }
            return keys;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
