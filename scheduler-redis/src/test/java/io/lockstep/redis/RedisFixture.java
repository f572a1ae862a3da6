package io.lockstep.redis;

import java.time.Instant;
import java.util.UUID;
import java.util.function.UnaryOperator;
import redis.clients.jedis.RedisClient;

/**
 * One real redis-server for a test class: a provider on it, a raw client to look at the keys the
 * scripts wrote, and job names no other test uses.
 */
final class RedisFixture implements AutoCloseable {

    final LocalRedisServer server;
    final RedisLockProvider provider;
    final RedisClient raw;

    private RedisFixture(UnaryOperator<RedisLockProvider.Builder> configure) {
        server = LocalRedisServer.start();
        provider = configure.apply(RedisLockProvider.builder().uri(server.uri())).build();
        raw = RedisClient.create(server.host(), server.port());
    }

    static RedisFixture start() {
        return new RedisFixture(b -> b);
    }

    static RedisFixture start(UnaryOperator<RedisLockProvider.Builder> configure) {
        return new RedisFixture(configure);
    }

    /** A job name no other test uses. */
    static String job() {
        return "job-" + UUID.randomUUID().toString().substring(0, 8);
    }

    /** The server's clock now. */
    Instant serverNow() {
        return Instant.ofEpochMilli(provider.serverTimeMillis());
    }

    @Override
    public void close() {
        raw.close();
        provider.close();
        server.close();
    }
}
