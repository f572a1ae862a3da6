package io.lockstep.redis;

import java.time.Instant;
import java.util.UUID;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import redis.clients.jedis.RedisClient;

/**
 * One real redis-server for a test class: a provider on it, a raw client to look at the keys the
 * scripts wrote, and job names no other test uses. Register it with
 * {@code @RegisterExtension static final RedisFixture redis = RedisFixture.of(b -> b);}: it starts
 * before the class's tests and stops after them.
 */
public final class RedisFixture implements BeforeAllCallback, AfterAllCallback {

    private final UnaryOperator<RedisLockProvider.Builder> configure;
    private LocalRedisServer server;
    private RedisLockProvider provider;
    private RedisClient raw;

    private RedisFixture(UnaryOperator<RedisLockProvider.Builder> configure) {
        this.configure = configure;
    }

    /** A fixture whose provider {@code configure} sets up beyond the server's URI. */
    static RedisFixture of(UnaryOperator<RedisLockProvider.Builder> configure) {
        return new RedisFixture(configure);
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        server = LocalRedisServer.start();
        provider = configure.apply(RedisLockProvider.builder().uri(server.uri())).build();
        raw = RedisClient.create(server.host(), server.port());
    }

    @Override
    public void afterAll(ExtensionContext context) {
        raw.close();
        provider.close();
        server.close();
    }

    RedisLockProvider provider() {
        return provider;
    }

    RedisClient raw() {
        return raw;
    }

    /** A job (or lock) name no other test uses: the one name generator of the Redis tests. */
    public static String job() {
        return "job-" + UUID.randomUUID().toString().substring(0, 8);
    }

    /**
     * A port that was free on the loopback interface a moment ago (for a server a test starts
     * itself, say a TLS port): the one free-port helper of the Redis tests and the ITs.
     */
    public static int freeLoopbackPort() {
        try (java.net.ServerSocket socket = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            socket.setReuseAddress(true);
            return socket.getLocalPort();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** The server's clock now. */
    Instant serverNow() {
        return Instant.ofEpochMilli(provider.serverTimeMillis());
    }
}
