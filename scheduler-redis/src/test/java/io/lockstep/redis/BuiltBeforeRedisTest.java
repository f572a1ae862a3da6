package io.lockstep.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.WorkerInfo;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/**
 * A provider built while its Redis is down (a worker, or a Boot application under
 * {@code lockstep.fail-fast=false}, started before its Redis) works once Redis is up. Jedis left to
 * negotiate the protocol learns it from a connection borrowed when the client is built; with Redis
 * down it never did, read every reply by RESP2 rules while its connections spoke RESP3, and each
 * {@code HGETALL} or {@code ZRANGE WITHSCORES} failed with a ClassCastException (the fault campaign's
 * "a worker restarted into a Redis stall" finding). {@code RedisClients} now says RESP3.
 */
class BuiltBeforeRedisTest {

    @Test
    void aProviderBuiltWhileRedisIsDownReadsTheWorkersOnceItIsUp() {
        try (LocalRedisServer redis = LocalRedisServer.start()) {
            redis.kill();
            try (RedisLockProvider provider = RedisLockProvider.builder().uri(redis.uri()).keyPrefix("early-" + System.nanoTime())
                    .timeout(Duration.ofMillis(500)).build()) {
                assertThatThrownBy(provider::serverTimeMillis).isInstanceOf(LockException.class);
                redis.restart();
                Instant now = Instant.ofEpochMilli(provider.serverTimeMillis());
                provider.heartbeat(new WorkerInfo("w1", "h1", 1, "test", now, 8, 0, "c0ffee", now), Duration.ofSeconds(30));
                assertThat(provider.liveWorkers(Duration.ofSeconds(30))).extracting(WorkerInfo::id).containsExactly("w1");
            }
        }
    }
}
