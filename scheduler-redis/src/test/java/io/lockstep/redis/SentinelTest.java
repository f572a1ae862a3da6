package io.lockstep.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lockstep.scheduler.config.RedisSettings;
import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.ClaimResult;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.LockException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.HostAndPort;

/**
 * The provider on a Sentinel-watched master (real processes: master, replica, three Sentinels):
 * claims work through the Sentinels, and after the master is SIGKILLed and the replica promoted the
 * same provider claims on the new master without a restart, with a higher fencing token.
 */
class SentinelTest {

    private static ClaimRequest request(RedisLockProvider p, String job, String token) {
        Instant slot = Instant.ofEpochMilli(p.serverTimeMillis()).minusMillis(5);
        return new ClaimRequest(new Lease(job, slot, token, Duration.ofSeconds(5), false), "w", Duration.ofSeconds(10), false);
    }

    @Test
    void claimsFollowTheMasterAcrossAFailover() {
        try (LocalSentinel sentinel = LocalSentinel.start();
             RedisLockProvider provider = RedisLockProvider.builder().settings(new RedisSettings(
                     new RedisSettings.Sentinel(LocalSentinel.MASTER_NAME, sentinel.nodes(), Optional.empty(), Optional.empty()),
                     "lockstep", Duration.ofMillis(500), Optional.empty(), Optional.empty(), RedisSettings.Tls.OFF, 0, RedisSettings.DEFAULT_WAIT_TIMEOUT)).build()) {
            String job = RedisFixture.job();
            ClaimResult before = provider.claim(List.of(request(provider, job, "a"))).get(0);
            assertThat(before.status()).isEqualTo(ClaimResult.Status.CLAIMED);
            assertThat(provider.describe()).startsWith("sentinel mymaster via 127.0.0.1:");

            sentinel.master().kill();
            HostAndPort promoted = new HostAndPort("127.0.0.1", sentinel.replica().port());
            await().atMost(Duration.ofSeconds(20)).until(() -> promoted.equals(sentinel.currentMaster()));
            ClaimResult after = await().atMost(Duration.ofSeconds(20)).ignoreException(LockException.class)
                    .until(() -> provider.claim(List.of(request(provider, job, "b"))).get(0), r -> r != null);
            assertThat(after.status()).isEqualTo(ClaimResult.Status.CLAIMED);
            assertThat(after.fencingToken()).isGreaterThan(before.fencingToken());
            assertThat(provider.describe()).as("names the master it follows now").endsWith("(master " + promoted + ")");
        }
    }

    /**
     * The lost write, reproduced: the replica is stopped, the master's replication stream is filled
     * (8 MB) so that a claim stays in the master's buffers, the master is killed and the replica
     * resumed and promoted. Without {@code waitReplicas} the claim is lost and a second worker wins
     * the same slot again, under a higher fencing token; with {@code waitReplicas: 1} the first
     * claim was never confirmed, so its worker never started the job.
     */
    @Test
    void aClaimLostInAFailoverIsRunAgainOnlyUnderAHigherTokenAndNeverWithWaitReplicas() {
        try (LocalSentinel sentinel = LocalSentinel.start();
             RedisLockProvider plain = provider(sentinel, 0);
             RedisLockProvider waiting = provider(sentinel, 1);
             redis.clients.jedis.RedisClient master = redis.clients.jedis.RedisClient.create(sentinel.master().host(), sentinel.master().port())) {
            String job = RedisFixture.job();
            ClaimRequest first = request(plain, job, "first");
            ClaimRequest confirmedOrNot = request(plain, "other-" + job, "waiting");

            sentinel.replica().pause();
            master.set("filler", "x".repeat(8 * 1024 * 1024)); // fills the replication link
            ClaimResult lost = plain.claim(List.of(first)).get(0);
            assertThat(lost.status()).as("won on the master").isEqualTo(ClaimResult.Status.CLAIMED);
            assertThat(waiting.claim(List.of(confirmedOrNot)).get(0).status()).as("never confirmed: never runs")
                    .isEqualTo(ClaimResult.Status.UNCONFIRMED);
            sentinel.master().kill();
            sentinel.replica().resume();

            HostAndPort promoted = new HostAndPort("127.0.0.1", sentinel.replica().port());
            await().atMost(Duration.ofSeconds(30)).until(() -> promoted.equals(sentinel.currentMaster()));
            ClaimRequest second = new ClaimRequest(new Lease(job, first.lease().slot(), "second", Duration.ofSeconds(5), false), "w",
                    Duration.ofSeconds(60), false);
            ClaimResult again = await().atMost(Duration.ofSeconds(20)).ignoreException(LockException.class)
                    .until(() -> plain.claim(List.of(second)).get(0), r -> r != null);
            assertThat(again.status()).as("the lost claim lets the slot be won again").isEqualTo(ClaimResult.Status.CLAIMED);
            assertThat(again.fencingToken()).as("but only under a higher fencing token").isGreaterThan(lost.fencingToken());
        }
    }

    private static RedisLockProvider provider(LocalSentinel sentinel, int waitReplicas) {
        return RedisLockProvider.builder().settings(new RedisSettings(
                new RedisSettings.Sentinel(LocalSentinel.MASTER_NAME, sentinel.nodes(), Optional.empty(), Optional.empty()),
                "lockstep", Duration.ofMillis(1000), Optional.empty(), Optional.empty(), RedisSettings.Tls.OFF, waitReplicas,
                Duration.ofMillis(100))).build();
    }
}
