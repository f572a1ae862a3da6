package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.lockstep.redis.ItKeys;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.RedisClient;

/**
 * The whole cluster stops across five slots, then two workers start at once: with
 * {@code catchUp: none} every missed slot is reported missed once, with {@code latest} the latest
 * runs and the rest are reported, with {@code all} every one runs; never twice.
 */
class CatchUpIT {

    private static final Duration GRACE = Duration.ofSeconds(1); // the shortest misfireGrace the loader accepts
    private static final List<String> JOBS = List.of("catchup-none", "catchup-latest", "catchup-all");

    @TempDir
    Path dir;

    @Test
    void slotsMissedWhileTheWholeClusterWasDownAreHandledOnceByThePolicy() {
        StringBuilder yaml = new StringBuilder("defaults:\n  lease: 2s\n  misfireGrace: 1s\n  catchUpWindow: 1h\njobs:\n");
        for (String job : JOBS) {
            yaml.append("  - name: ").append(job).append("\n    cron: \"* * * * * *\"\n")
                    .append("    class: io.lockstep.examples.HeartbeatJob\n    params: { workMillis: 100 }\n")
                    .append("    catchUp: ").append(job.substring("catchup-".length())).append('\n');
        }
        try (Cluster cluster = new Cluster(dir, yaml.toString()); RedisClient redis = RedisClient.create(cluster.redis.host(), cluster.redis.port())) {
            WorkerProcess a = cluster.start("before-1");
            WorkerProcess b = cluster.start("before-2");
            cluster.awaitStarted();
            await().atMost(Duration.ofSeconds(20)).until(() -> JOBS.stream().allMatch(job ->
                    cluster.events("job_started").stream().anyMatch(e -> job.equals(e.path("job").asText()))));
            assertThat(a.terminate()).isZero();
            assertThat(b.terminate()).isZero();
            Map<String, Instant> last = new HashMap<>();
            for (String job : JOBS) {
                last.put(job, Instant.ofEpochMilli(Long.parseLong(redis.hget(ItKeys.marks(job), ItKeys.mark(job, "decided")))));
            }

            // The cluster stays down until five slots of every job and their grace have passed.
            Instant latest = last.values().stream().max(Instant::compareTo).orElseThrow();
            await().atMost(Duration.ofSeconds(10)).until(() -> Instant.now().isAfter(latest.plusSeconds(6).plus(GRACE).plusMillis(200)));
            Instant restart = Instant.now();
            WorkerProcess c = cluster.start("back-1");
            WorkerProcess d = cluster.start("back-2");
            cluster.awaitStarted();

            Map<String, List<Instant>> down = new HashMap<>();
            for (String job : JOBS) {
                List<Instant> slots = new ArrayList<>();
                for (Instant s = last.get(job).plusSeconds(1); s.plus(GRACE).plusMillis(100).isBefore(restart); s = s.plusSeconds(1)) {
                    slots.add(s);
                }
                assertThat(slots).as(job + ": slots passed while no worker ran").hasSizeGreaterThanOrEqualTo(5);
                down.put(job, slots);
            }
            // An exclusive job's catch-up slots run one at a time: each refused busy while another
            // holds the lease asks again after 250 ms doubling to 2 s (ClaimAnswers.busyDelay), so
            // the 5-10 slots of a slow machine's down time can take 2 s each.
            try {
                await().atMost(Duration.ofSeconds(60)).until(() -> down.get("catchup-all").stream()
                        .allMatch(slot -> startedOnce(cluster, "catchup-all", slot)));
            } catch (org.awaitility.core.ConditionTimeoutException e) {
                // Two clean-clone runs on a slow machine timed out here, never a local one: keep what they did.
                cluster.keepLogs(Path.of("target", "it-logs", "catchup"));
                throw new AssertionError("catchup-all's slots " + down.get("catchup-all") + " not all started once (logs kept in "
                        + "target/it-logs/catchup): " + cluster.startsBySlot().keySet().stream().filter(k -> k.startsWith("catchup-all")).sorted()
                        .toList(), e);
            }
            // ... and every slot the cluster was down for is handled, by some job's policy, before the workers stop.
            await().atMost(Duration.ofSeconds(10)).until(() -> JOBS.stream().allMatch(job -> down.get(job).stream()
                    .allMatch(slot -> count(cluster, "job_started", job, slot) + count(cluster, "slot_missed", job, slot) >= 1)));
            assertThat(c.terminate()).isZero();
            assertThat(d.terminate()).isZero();

            assertThat(cluster.startsBySlot()).as("no slot started twice").allSatisfy((k, workers) -> assertThat(workers).hasSize(1));
            for (String job : JOBS) {
                for (Instant slot : down.get(job)) {
                    assertThat(count(cluster, "job_started", job, slot) + count(cluster, "slot_missed", job, slot))
                            .as("%s@%s handled exactly once", job, slot).isEqualTo(1);
                }
            }
            for (Instant slot : down.get("catchup-none")) {
                assertThat(count(cluster, "slot_missed", "catchup-none", slot)).isEqualTo(1);
            }
            for (Instant slot : down.get("catchup-all")) {
                assertThat(count(cluster, "job_started", "catchup-all", slot)).isEqualTo(1);
            }
            // latest: exactly one catch-up run, of the latest slot the cluster missed; the rest reported.
            List<JsonNode> latestRuns = cluster.events("slot_claimed").stream()
                    .filter(e -> "catchup-latest".equals(e.path("job").asText()) && e.path("catch_up").asBoolean()).toList();
            assertThat(latestRuns).hasSize(1);
            Instant latestRun = WorkerProcess.slot(latestRuns.get(0));
            assertThat(latestRun).isAfterOrEqualTo(down.get("catchup-latest").get(down.get("catchup-latest").size() - 1));
            for (Instant slot : down.get("catchup-latest")) {
                if (!slot.equals(latestRun)) {
                    assertThat(count(cluster, "slot_missed", "catchup-latest", slot)).as("latest: %s reported missed", slot).isEqualTo(1);
                }
            }
            // The slots the cluster missed are reported as such (a slot due just as the workers came
            // back may still be missed for being later than its 1 s grace: that is not checked here).
            assertThat(cluster.events("slot_missed")).filteredOn(e -> down.get(e.path("job").asText()).contains(WorkerProcess.slot(e)))
                    .isNotEmpty()
                    .allSatisfy(e -> assertThat(e.path("reason").asText()).startsWith("no worker was running"));
            cluster.assertAuditHolds();
        }
    }

    private static boolean startedOnce(Cluster cluster, String job, Instant slot) {
        return count(cluster, "job_started", job, slot) == 1;
    }

    private static long count(Cluster cluster, String event, String job, Instant slot) {
        return cluster.events(event).stream()
                .filter(e -> job.equals(e.path("job").asText()) && slot.equals(WorkerProcess.slot(e))).count();
    }
}
