package io.lockstep.redis;

import java.time.Instant;
import java.util.List;
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

    LocalRedisServer server() {
        return server;
    }

    /** A job (or lock) name no other test uses: the one name generator of the Redis tests. */
    public static String job() {
        return "job-" + UUID.randomUUID().toString().substring(0, 8);
    }

    /**
     * A port that was free on the loopback interface a moment ago, for a server a test starts itself
     * and never restarts (a TLS port, a worker's HTTP port). Redis servers take theirs from
     * {@link LocalPorts#free()}, which keeps a restarted server's port its own.
     */
    public static int freeLoopbackPort() {
        try (java.net.ServerSocket socket = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            socket.setReuseAddress(true);
            return socket.getLocalPort();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /**
     * Who holds {@code lease} now, read by lease.lua itself: an exclusive job's lease from its
     * group's marks ({@code <job>:owner} while {@code <job>:until} is ahead of the server's clock),
     * a run's own from its key; null when nobody does.
     */
    static String leaseOwner(redis.clients.jedis.UnifiedJedis jedis, RedisKeys keys, io.lockstep.scheduler.lock.Lease lease) {
        return (String) lease(jedis, keys, lease, "return lease_owner(KEYS[1], ARGV[1], now)");
    }

    /** When {@code lease} ends (server ms), by lease.lua's lease_end; 0 when nobody holds it. */
    static long leaseEnd(redis.clients.jedis.UnifiedJedis jedis, RedisKeys keys, io.lockstep.scheduler.lock.Lease lease) {
        return (Long) lease(jedis, keys, lease, "return lease_end(KEYS[1], ARGV[1], now)");
    }

    /** Gives {@code lease} to {@code token} for {@code ttlMillis} from the server's now, by lease.lua's lease_take (a test's "someone else took it"). */
    static void giveLease(redis.clients.jedis.UnifiedJedis jedis, RedisKeys keys, io.lockstep.scheduler.lock.Lease lease, String token,
            long ttlMillis) {
        lease(jedis, keys, lease, "lease_take(KEYS[1], ARGV[1], ARGV[2], tonumber(ARGV[3]), now) return 1", token, Long.toString(ttlMillis));
    }

    /** Drops {@code lease}, whoever holds it, by lease.lua's lease_drop (a test's "its worker died and the lease ran out"). */
    static void dropLease(redis.clients.jedis.UnifiedJedis jedis, RedisKeys keys, io.lockstep.scheduler.lock.Lease lease) {
        lease(jedis, keys, lease, "lease_drop(KEYS[1], ARGV[1]) return 1");
    }

    /** Runs {@code body} after lease.lua's functions, with {@code now} the server's clock (ms), KEYS[1] the lease's key and ARGV[1] its field. */
    private static Object lease(redis.clients.jedis.UnifiedJedis jedis, RedisKeys keys, io.lockstep.scheduler.lock.Lease lease, String body,
            String... more) {
        List<String> args = new java.util.ArrayList<>(List.of(RedisKeys.leaseField(lease)));
        args.addAll(List.of(more));
        return jedis.eval(LuaScript.load("lease.lua").source() + """

                local t = redis.call('TIME')
                local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
                """ + body, List.of(keys.lease(lease)), args);
    }

    /** The server's clock now. */
    Instant serverNow() {
        return Instant.ofEpochMilli(provider.serverTimeMillis());
    }
}
