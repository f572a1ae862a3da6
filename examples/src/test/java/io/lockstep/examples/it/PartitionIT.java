package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.lockstep.redis.TcpProxy;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * One worker cut off from Redis while its peer is not (its link alone goes through a proxy that
 * stops passing anything, as a firewall that drops packets would). The cut-off holder stops its
 * job at its own lease deadline, before the peer can recover the slot; the peer then reruns it
 * under a higher fencing token. Both sides' events are on one host clock, so their order is real.
 */
class PartitionIT {

    @TempDir
    Path dir;

    @Test
    void aCutOffHolderStopsAtItsDeadlineBeforeThePeerRecoversTheSlot() {
        String yaml = """
                defaults:
                  lease: 2s
                  misfireGrace: 2s
                jobs:
                  - name: long
                    cron: "*/5 * * * * *"
                    class: io.lockstep.examples.HeartbeatJob
                    params: { workMillis: 8000 }
                    recover: rerun
                """;
        try (Cluster cluster = new Cluster(dir, yaml, "500ms");
             TcpProxy link = TcpProxy.to(cluster.redis.host(), cluster.redis.port())) {
            WorkerProcess cutOff = cluster.startBehind(link, "cut-off");
            await().atMost(Duration.ofSeconds(30)).until(() -> !cutOff.events("job_started").isEmpty());
            WorkerProcess peer = cluster.start("peer");
            await().atMost(Duration.ofSeconds(30)).until(peer::hasStarted);
            // The peer has seen the run in flight (its start looks at every job once); now cut the holder off.
            JsonNode started = cutOff.events("job_started").get(0);
            link.cut(true);
            Instant cutAt = Instant.now();

            // The peer logs slot_recovered, then starts the rerun: wait for both.
            await().atMost(Duration.ofSeconds(15)).until(() -> !peer.events("slot_recovered").isEmpty()
                    && peer.events("job_started").stream().anyMatch(e -> WorkerProcess.same(e, started)));
            JsonNode recovered = peer.events("slot_recovered").get(0);
            JsonNode lost = cutOff.events("lease_lost").stream().filter(e -> WorkerProcess.same(e, started)).findFirst().orElseThrow();
            JsonNode stopped = cutOff.events("job_failed").stream().filter(e -> WorkerProcess.same(e, started)).findFirst().orElseThrow();
            JsonNode rerun = peer.events("job_started").stream().filter(e -> WorkerProcess.same(e, started)).findFirst().orElseThrow();

            assertThat(recovered.path("slot").asText()).isEqualTo(started.path("slot").asText());
            assertThat(stopped.path("reason").asText()).isEqualTo("lease lost");
            assertThat(WorkerProcess.ts(lost)).as("the holder knows first").isBefore(WorkerProcess.ts(recovered));
            assertThat(WorkerProcess.ts(stopped)).as("and has stopped before the rerun starts").isBefore(WorkerProcess.ts(rerun));
            assertThat(rerun.path("fencing_token").asLong()).isGreaterThan(started.path("fencing_token").asLong());

            link.cut(false);
            // The holder's own outcome comes once its link is back: the slot is the rerun's now, so
            // it is added to the slot's history marked late, not dropped (issue 20).
            JsonNode late = await().atMost(Duration.ofSeconds(20)).until(() -> cutOff.events("outcome_late").stream()
                    .filter(e -> WorkerProcess.same(e, started)).findFirst(), java.util.Optional::isPresent).orElseThrow();
            assertThat(late.path("recorded").asText()).isEqualTo("true");
            try (io.lockstep.redis.RedisLockProvider provider = io.lockstep.redis.RedisLockProvider.builder().uri(cluster.redis.uri()).build()) {
                assertThat(io.lockstep.redis.RedisAdmin.of(provider).history("long", 20)).as("the history of the recovered slot")
                        .filteredOn(r -> r.slot().equals(WorkerProcess.slot(started)))
                        .extracting(io.lockstep.redis.RedisAdmin.Run::worker, io.lockstep.redis.RedisAdmin.Run::reason)
                        .contains(org.assertj.core.groups.Tuple.tuple("cut-off", "late"));
            }
            assertThat(peer.terminate()).isZero();
            assertThat(cutOff.terminate()).isZero();
            assertThat(cluster.events("slot_recovered")).hasSize(1);
            String recoveredSlot = WorkerProcess.key(recovered);
            assertThat(cluster.startsBySlot()).as("only the recovered slot runs twice").allSatisfy((slot, workers) -> assertThat(workers)
                    .as(slot).hasSize(slot.equals(recoveredSlot) ? 2 : 1));
            assertThat(cluster.startsBySlot().get(recoveredSlot)).containsExactly("cut-off", "peer");
            System.out.printf("%nPartitionIT: cut at +0 ms; holder lease_lost at +%d ms, job stopped at +%d ms; peer slot_recovered at +%d ms%n",
                    Duration.between(cutAt, WorkerProcess.ts(lost)).toMillis(), Duration.between(cutAt, WorkerProcess.ts(stopped)).toMillis(),
                    Duration.between(cutAt, WorkerProcess.ts(recovered)).toMillis());
            cluster.assertAuditHolds();
        }
    }
}
