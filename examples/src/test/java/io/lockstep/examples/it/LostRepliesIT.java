package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.lockstep.redis.ItKeys;
import io.lockstep.redis.TcpProxy;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.params.ScanParams;

/**
 * Replies lost after Redis carried out the request: a worker behind a proxy that forwards its
 * commands and throws the answers away. Its claims win in Redis but it never hears so (it must not
 * start those slots); when it gives up on them it disowns them, so that in the end every slot
 * record agrees with the events, and no slot gets two contradictory events. Outcome writes whose
 * replies were lost are written again and answered "ours".
 */
class LostRepliesIT {

    private static final int JOBS = 3;

    @TempDir
    Path dir;

    @Test
    void claimsAndOutcomesWhoseRepliesWereLostEndWithRecordsThatAgreeWithTheEvents() {
        String jobs = Cluster.perSecondJobs(JOBS, 100, "5s", "1s");
        try (Cluster cluster = new Cluster(dir, jobs, "300ms");
             TcpProxy proxy = TcpProxy.to(cluster.redis.host(), cluster.redis.port());
             RedisClient redis = RedisClient.create(cluster.redis.host(), cluster.redis.port())) {
            WorkerProcess a = cluster.startBehind(proxy, "a");
            cluster.awaitStarted();
            await().atMost(Duration.ofSeconds(20)).until(() -> a.events("job_started").size() >= 2 * JOBS);

            // Drop replies from mid-second on: the runs of this second have written their outcomes,
            // so the next thing on the wire is the claim batch at the top of the next second.
            await().atMost(Duration.ofSeconds(3)).until(() -> {
                int millis = java.time.Instant.now().getNano() / 1_000_000;
                return millis > 450 && millis < 650;
            });
            proxy.dropReplies(true);
            // The next claims run in Redis, under a's tokens, for slots a never hears it won (then its
            // reconnects hang too: their handshake gets no answer). Past their grace (1 s) those slots
            // can no longer start, whatever a hears later.
            await().atMost(Duration.ofSeconds(20)).until(() -> pastGrace(claimedButNotStarted(redis, a)).size() >= JOBS);
            Set<String> unheard = pastGrace(claimedButNotStarted(redis, a));
            proxy.dropReplies(false);

            // a gives up on each when its grace ends and disowns it once Redis answers again.
            await().atMost(Duration.ofSeconds(20)).until(() -> unheard.stream().allMatch(k -> "missed".equals(state(redis, k))));
            await().atMost(Duration.ofSeconds(20)).until(() -> a.events("job_started").stream()
                    .anyMatch(e -> !unheard.contains(WorkerProcess.key(e)) && WorkerProcess.ts(e).isAfter(java.time.Instant.now().minusSeconds(2))));
            assertThat(a.terminate()).isZero();

            Map<String, String> records = records(redis);
            Map<String, Long> starts = count(a.events("job_started"));
            Map<String, Long> misses = count(a.events("slot_missed"));
            Map<String, Long> skips = count(a.events("slot_skipped"));
            assertThat(a.events("slot_abandoned")).as("no run is abandoned: a never started the slots it lost the reply of").isEmpty();
            for (Map.Entry<String, String> record : records.entrySet()) {
                String k = record.getKey();
                switch (record.getValue()) {
                    case "done" -> assertThat(starts.getOrDefault(k, 0L)).as("%s done: started once", k).isEqualTo(1);
                    case "missed" -> {
                        assertThat(starts.getOrDefault(k, 0L)).as("%s missed: never started", k).isZero();
                        assertThat(misses.getOrDefault(k, 0L)).as("%s missed: reported once", k).isEqualTo(1);
                    }
                    case "skipped" -> {
                        // overlap: skip while a claim that was later disowned still held the lease
                        assertThat(starts.getOrDefault(k, 0L)).as("%s skipped: never started", k).isZero();
                        assertThat(skips.getOrDefault(k, 0L)).as("%s skipped: reported once", k).isEqualTo(1);
                    }
                    default -> throw new AssertionError(k + " ended as " + record.getValue());
                }
            }
            assertThat(unheard).allSatisfy(k -> assertThat(starts.getOrDefault(k, 0L)).as("fail closed: %s", k).isZero());
            // Outcomes whose write failed are written once Redis answers, before the worker's own look
            // at runs in flight could abandon them.
            assertThat(a.events("slot_released")).allSatisfy(e -> assertThat(e.path("success").asBoolean())
                    .as("outcome of %s written and ours", WorkerProcess.key(e)).isTrue());
            System.out.printf("%nLostRepliesIT: %d claims won in Redis without a reply, all disowned; %d replies dropped%n",
                    unheard.size(), proxy.repliesDropped());
        }
    }

    /** job@slot (ISO) of every slot record. */
    private static Map<String, String> records(RedisClient redis) {
        Map<String, String> states = new HashMap<>();
        for (String key : redis.scan("0", new ScanParams().match(ItKeys.slotPattern("job-*")).count(100_000)).getResult()) {
            states.put(ItKeys.jobAtSlot(key), redis.hget(key, "state"));
        }
        return states;
    }

    private static Set<String> claimedButNotStarted(RedisClient redis, WorkerProcess a) {
        Set<String> started = a.events("job_started").stream().map(WorkerProcess::key).collect(Collectors.toSet());
        return records(redis).entrySet().stream()
                .filter(e -> "running".equals(e.getValue()) && !started.contains(e.getKey()))
                .map(Map.Entry::getKey).collect(Collectors.toSet());
    }

    private static Set<String> pastGrace(Set<String> slots) {
        java.time.Instant limit = java.time.Instant.now().minusMillis(1_500);
        return slots.stream().filter(k -> java.time.Instant.parse(k.substring(k.indexOf('@') + 1)).isBefore(limit))
                .collect(Collectors.toSet());
    }

    private static String state(RedisClient redis, String jobAtSlot) {
        String job = jobAtSlot.substring(0, jobAtSlot.indexOf('@'));
        return redis.hget(ItKeys.slot(job, WorkerProcess.slotOf(jobAtSlot)), "state");
    }

    private static Map<String, Long> count(List<JsonNode> events) {
        return events.stream().collect(Collectors.groupingBy(WorkerProcess::key, Collectors.counting()));
    }
}
