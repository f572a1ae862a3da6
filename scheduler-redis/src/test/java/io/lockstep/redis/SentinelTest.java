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
import java.util.UUID;
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
                     "lockstep", Duration.ofMillis(500), Optional.empty(), Optional.empty(), RedisSettings.Tls.OFF)).build()) {
            String job = "job-" + UUID.randomUUID().toString().substring(0, 8);
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
}
