package io.lockstep.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.ClaimResult;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.Outcome;
import io.lockstep.scheduler.lock.PartiallyConfirmed;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.RedisClient;

/**
 * {@code waitReplicas} against a real master and replica: a claim counts only once the replica
 * acknowledged it; with the replica stopped (SIGSTOP) the claim is disowned and answered
 * {@code UNCONFIRMED}, so it never runs, and an outcome is refused as unwritten (to be written again).
 */
class WaitReplicasTest {

    @Test
    void aClaimTheReplicaDidNotAcknowledgeIsDisownedAndNeverRuns() {
        try (LocalRedisServer master = LocalRedisServer.start();
             LocalRedisServer replica = LocalRedisServer.start("--replicaof", master.host(), Integer.toString(master.port()));
             RedisClient raw = RedisClient.create(master.host(), master.port());
             RedisLockProvider provider = RedisLockProvider.builder().uri(master.uri()).waitReplicas(1, Duration.ofMillis(100)).build()) {
            await().atMost(Duration.ofSeconds(10)).until(() -> raw.info("replication").contains("connected_slaves:1")
                    && raw.info("replication").contains("state=online") && caughtUp(raw.info("replication")));
            ClaimRequest acknowledged = request(provider, "a");
            assertThat(provider.claim(List.of(acknowledged))).extracting(ClaimResult::status).containsExactly(ClaimResult.Status.CLAIMED);
            assertThat(provider.complete(acknowledged.lease(), Outcome.SUCCEEDED)).isTrue();

            replica.pause();
            try {
                ClaimRequest lonely = request(provider, "b");
                assertThat(provider.claim(List.of(lonely))).extracting(ClaimResult::status)
                        .containsExactly(ClaimResult.Status.UNCONFIRMED);
                String record = provider.keys().slot(lonely.lease().job(), lonely.lease().slot().toEpochMilli());
                assertThat(raw.hget(record, "state")).isEqualTo("missed");
                assertThat(raw.hget(record, "why")).isEqualTo("disowned");
                assertThat(RedisFixture.leaseOwner(raw, provider.keys(), lonely.lease())).isNull();

                ClaimRequest run = request(provider, "c");
                RedisLockProvider plain = RedisLockProvider.builder().uri(master.uri()).build();
                try (plain) {
                    plain.claim(List.of(run));
                }
                assertThatThrownBy(() -> provider.complete(run.lease(), Outcome.SUCCEEDED)).isInstanceOf(LockException.class)
                        .hasMessageContaining("fewer than 1 replica(s) acknowledged some outcomes");
            } finally {
                replica.resume();
            }
        }
    }

    /**
     * m5 of the 2026-12-04 review: renewals never waited for replicas, so a renewal the replica never
     * received extended the holder's validity, though a failover would lose it (the promoted replica
     * holds the lease only until the previous renewal's end, and a peer may rerun the slot while the
     * holder believes it holds it). Now a renewal counts only once the replicas acknowledged it: an
     * unacknowledged one is answered null inside {@link PartiallyConfirmed} (sent again, the lease's
     * deadline unchanged), and the watchdog declares the lease lost if none is confirmed in time.
     * (The 500 ms wait only bounds how long an acknowledgement may take on a loaded machine; the
     * stopped replica sends none however long it is given.)
     */
    @Test
    void aRenewalTheReplicaDidNotAcknowledgeDoesNotExtendTheLease() {
        try (LocalRedisServer master = LocalRedisServer.start();
             LocalRedisServer replica = LocalRedisServer.start("--replicaof", master.host(), Integer.toString(master.port()));
             RedisClient raw = RedisClient.create(master.host(), master.port());
             RedisLockProvider provider = RedisLockProvider.builder().uri(master.uri()).waitReplicas(1, Duration.ofMillis(500)).build()) {
            await().atMost(Duration.ofSeconds(10)).until(() -> raw.info("replication").contains("connected_slaves:1")
                    && raw.info("replication").contains("state=online") && caughtUp(raw.info("replication")));
            ClaimRequest held = request(provider, "r");
            assertThat(provider.claim(List.of(held))).extracting(ClaimResult::status).containsExactly(ClaimResult.Status.CLAIMED);
            assertThat(provider.renew(List.of(held.lease()))).as("acknowledged").containsExactly(true);

            replica.pause();
            try {
                assertThatThrownBy(() -> provider.renew(List.of(held.lease()))).as("a renewal the replica did not acknowledge")
                        .isInstanceOfSatisfying(PartiallyConfirmed.class, e -> assertThat(e.answers()).containsExactly((Boolean) null))
                        .hasMessageContaining("fewer than 1 replica(s) acknowledged some renewals within 500 ms");
            } finally {
                replica.resume();
            }
            await().atMost(Duration.ofSeconds(10)).ignoreExceptions()
                    .untilAsserted(() -> assertThat(provider.renew(List.of(held.lease()))).as("acknowledged again").containsExactly(true));
        }
    }

    /**
     * Whether the replica acknowledged everything the master has (its {@code offset} in the master's
     * INFO equals {@code master_repl_offset}): a replica just attached may not acknowledge within the
     * 100 ms the claims wait until it has.
     */
    private static boolean caughtUp(String info) {
        java.util.regex.Matcher master = java.util.regex.Pattern.compile("master_repl_offset:(\\d+)").matcher(info);
        java.util.regex.Matcher replica = java.util.regex.Pattern.compile("slave0:.*offset=(\\d+)").matcher(info);
        return master.find() && replica.find() && master.group(1).equals(replica.group(1));
    }

    private static ClaimRequest request(RedisLockProvider p, String token) {
        String job = RedisFixture.job() + "-" + token;
        Instant slot = Instant.ofEpochMilli(p.serverTimeMillis()).minusMillis(5);
        return new ClaimRequest(new Lease(job, slot, token, Duration.ofSeconds(5), true), "w", Duration.ofSeconds(10), false);
    }
}
