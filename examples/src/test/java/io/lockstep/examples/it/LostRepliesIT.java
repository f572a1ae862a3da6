package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.lockstep.redis.ItKeys;
import io.lockstep.redis.TcpProxy;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
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

            // Drop replies once every slot a claimed has its outcome written and acknowledged (counted
            // from a's events, however late a loaded machine ran them), so that no outcome reply is lost
            // (its retry could come after the lease ran out), and before 650 ms of the second, 100 ms
            // clear of the next claim batch (sent 250 ms ahead of the slot): the next thing on the wire
            // is that batch.
            await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20)).until(() -> {
                Set<String> released = a.events("slot_released").stream().map(WorkerProcess::key).collect(Collectors.toSet());
                return Instant.now().getNano() / 1_000_000 < 650
                        && a.events("slot_claimed").stream().map(WorkerProcess::key).allMatch(released::contains);
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
                    case "claimed" -> {
                        // claimed ahead when the worker stopped: handed back unstarted for a peer to run
                        assertThat(starts.getOrDefault(k, 0L)).as("%s handed back: never started", k).isZero();
                        assertThat(count(a.events("slot_handed_over")).getOrDefault(k, 0L)).as("%s handed back: reported once", k)
                                .isEqualTo(1);
                        assertThat(misses.getOrDefault(k, 0L)).as("%s handed back: not also reported missed", k).isZero();
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
            cluster.assertAuditHolds();
        }
    }

    /**
     * Guarantee 11 with a peer that would pounce: the holder's link is cut (requests held, as behind
     * a firewall that drops packets) at the moment its run finishes, so the outcome write times out
     * and has to be sent again; the cut is shorter than the lease, so keeping the lease is possible.
     * The worker keeps it (no lease_lost), writes the outcome once the link is back, and the peer,
     * with {@code recover: rerun}, neither reruns nor abandons the slot. Redis' own record and
     * history say the run succeeded, once. (LostRepliesIT's other test covers replies lost after the
     * write landed; this one, a write that did not land.)
     */
    @Test
    void anOutcomeWriteThatFailsOnceIsRetriedUnderTheKeptLeaseAndTheRunIsNeitherRerunNorAbandoned() throws Exception {
        java.nio.file.Path gate = dir.resolve("gate");
        String yaml = "defaults:\n  lease: 4s\n  misfireGrace: 2s\n  recover: rerun\njobs:\n"
                + "  - { name: gated, cron: \"*/2 * * * * *\", class: io.lockstep.examples.it.jobs.GatedJob, params: { gate: \"" + gate + "\" } }\n";
        try (Cluster cluster = new Cluster(dir, yaml, "500ms");
             TcpProxy link = TcpProxy.to(cluster.redis.host(), cluster.redis.port());
             RedisClient redis = RedisClient.create(cluster.redis.host(), cluster.redis.port());
             io.lockstep.redis.RedisLockProvider provider = io.lockstep.redis.RedisLockProvider.builder().client(redis, "it").build()) {
            WorkerProcess holder = cluster.startBehind(link, "holder");
            await().atMost(Duration.ofSeconds(30)).until(() -> !holder.events("job_started").isEmpty());
            JsonNode run = holder.events("job_started").get(0);
            WorkerProcess peer = cluster.start("peer");
            await().atMost(Duration.ofSeconds(30)).until(peer::hasStarted);

            link.cut(true);
            java.nio.file.Files.writeString(gate, "open"); // the run ends now, with its link cut
            JsonNode finished = await().atMost(Duration.ofSeconds(5)).until(() -> holder.events("job_succeeded").stream()
                    .filter(e -> WorkerProcess.same(e, run)).findFirst(), java.util.Optional::isPresent).orElseThrow();
            // Hold the cut past two redis timeouts (500 ms) after the run ended: the first write surely timed out.
            Instant uncutAfter = WorkerProcess.ts(finished).plusMillis(1_200);
            await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(20)).until(() -> Instant.now().isAfter(uncutAfter));
            link.cut(false);
            Instant uncutAt = Instant.now();
            JsonNode released = await().atMost(Duration.ofSeconds(15)).until(() -> holder.events("slot_released").stream()
                    .filter(e -> WorkerProcess.same(e, run)).findFirst(), java.util.Optional::isPresent).orElseThrow();
            // The peer has had its chance: wait for its next decision on this job after the blip.
            await().atMost(Duration.ofSeconds(15)).until(() -> cluster.events("job_started").stream()
                    .anyMatch(e -> WorkerProcess.slot(e).isAfter(uncutAt.plusSeconds(1))));
            assertThat(peer.terminate()).isZero();
            assertThat(holder.terminate()).isZero();

            assertThat(released.path("success").asBoolean()).as("outcome written, and ours").isTrue();
            assertThat(released.path("outcome").asText()).isEqualTo("succeeded");
            assertThat(WorkerProcess.ts(released)).as("written after the link came back: a retry").isAfter(uncutAt.minusMillis(50));
            assertThat(cluster.events("lease_lost").stream().filter(e -> WorkerProcess.same(e, run))).as("the lease was kept").isEmpty();
            assertThat(cluster.events("slot_recovered").stream().filter(e -> WorkerProcess.same(e, run))).as("not rerun").isEmpty();
            assertThat(cluster.events("slot_abandoned").stream().filter(e -> WorkerProcess.same(e, run))).as("not abandoned").isEmpty();
            assertThat(cluster.startEventsBySlot().get(WorkerProcess.key(run))).as("started once").hasSize(1);
            java.util.Map<String, String> record = redis.hgetAll(ItKeys.slot("gated", WorkerProcess.slot(run)));
            assertThat(record).containsEntry("state", "done").containsEntry("outcome", "succeeded");
            assertThat(io.lockstep.redis.RedisAdmin.of(provider).history("gated", 20))
                    .filteredOn(r -> r.slot().equals(WorkerProcess.slot(run))).singleElement()
                    .satisfies(r -> assertThat(r.outcome()).isEqualTo("succeeded"));
            System.out.printf("%nLostRepliesIT: run ended with the link cut; outcome written %d ms after the run ended (%d ms after the"
                    + " link came back), lease kept, no rerun%n", Duration.between(WorkerProcess.ts(finished), WorkerProcess.ts(released)).toMillis(),
                    Duration.between(uncutAt, WorkerProcess.ts(released)).toMillis());
            cluster.assertAuditHolds();
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
                .filter(e -> ("running".equals(e.getValue()) || "claimed".equals(e.getValue())) && !started.contains(e.getKey()))
                .map(Map.Entry::getKey).collect(Collectors.toSet());
    }

    private static Set<String> pastGrace(Set<String> slots) {
        java.time.Instant limit = java.time.Instant.now().minusMillis(1_500);
        return slots.stream().filter(k -> WorkerProcess.slotOf(k).isBefore(limit))
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
