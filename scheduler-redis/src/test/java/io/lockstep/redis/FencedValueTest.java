package io.lockstep.redis;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.RedisClient;

/** The fenced value against a real redis-server. */
class FencedValueTest {

    private static LocalRedisServer server;
    private static RedisClient jedis;

    @BeforeAll
    static void startRedis() {
        server = LocalRedisServer.start();
        jedis = RedisClient.create(server.host(), server.port());
    }

    @AfterAll
    static void stopRedis() {
        jedis.close();
        server.close();
    }

    private static FencedValue value() {
        return FencedValue.of(jedis, "fenced-" + RedisFixture.job());
    }

    @Test
    void aWriteWithALowerTokenThanOneSeenIsRefusedAndChangesNothing() {
        FencedValue v = value();
        assertThat(v.write(5, "five")).isTrue();
        assertThat(v.write(4, "four")).isFalse();
        assertThat(v.read()).contains("five");
        assertThat(v.fence()).isEqualTo(5);
        assertThat(v.write(5, "five again")).isTrue(); // the same holder may write again
        assertThat(v.write(7, "seven")).isTrue();
        assertThat(v.read()).contains("seven");
        assertThat(v.fence()).isEqualTo(7);
    }

    @Test
    void admittingANewerTokenLocksOutAnOlderHolderBeforeItWrites() {
        FencedValue v = value();
        assertThat(v.admit(3)).isTrue();
        assertThat(v.write(3, "old holder's first write")).isTrue();
        assertThat(v.admit(4)).isTrue(); // the new holder arrives, before reading
        assertThat(v.write(3, "old holder's late write")).isFalse();
        assertThat(v.admit(3)).isFalse();
        assertThat(v.read()).contains("old holder's first write");
    }

    @Test
    void anEmptyValueHasNoFence() {
        FencedValue v = value();
        assertThat(v.read()).isEmpty();
        assertThat(v.fence()).isZero();
    }
}
