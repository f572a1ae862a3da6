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

    /**
     * Who holds {@code lease} now, read as lease.lua reads it: an exclusive job's lease from its
     * group's marks ({@code <job>:owner} while {@code <job>:until} is ahead of the server's clock),
     * a run's own from its key; null when nobody does.
     */
    static String leaseOwner(redis.clients.jedis.UnifiedJedis jedis, RedisKeys keys, io.lockstep.scheduler.lock.Lease lease) {
        return (String) jedis.eval("""
                local t = redis.call('TIME')
                local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
                if ARGV[1] == '' then return redis.call('GET', KEYS[1]) end
                local v = redis.call('HMGET', KEYS[1], ARGV[1] .. 'owner', ARGV[1] .. 'until')
                if v[1] and v[1] ~= '' and tonumber(v[2] or '0') > now then return v[1] end
                return false""", List.of(keys.lease(lease)), List.of(RedisKeys.leaseField(lease)));
    }

    /** When {@code lease} ends (server ms), read as lease.lua's lease_end reads it; 0 when nobody holds it. */
    static long leaseEnd(redis.clients.jedis.UnifiedJedis jedis, RedisKeys keys, io.lockstep.scheduler.lock.Lease lease) {
        return (Long) jedis.eval("""
                local t = redis.call('TIME')
                local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
                if ARGV[1] == '' then
                  local ttl = redis.call('PTTL', KEYS[1])
                  return ttl > 0 and now + ttl or 0
                end
                local v = redis.call('HMGET', KEYS[1], ARGV[1] .. 'owner', ARGV[1] .. 'until')
                local ends = tonumber(v[2] or '0')
                if v[1] and v[1] ~= '' and ends > now then return ends end
                return 0""", List.of(keys.lease(lease)), List.of(RedisKeys.leaseField(lease)));
    }

    /** Gives {@code lease} to {@code token} for {@code ttlMillis} from the server's now, as lease.lua's lease_take does (a test's "someone else took it"). */
    static void giveLease(redis.clients.jedis.UnifiedJedis jedis, RedisKeys keys, io.lockstep.scheduler.lock.Lease lease, String token,
            long ttlMillis) {
        jedis.eval("""
                local t = redis.call('TIME')
                local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
                if ARGV[1] == '' then return redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) end
                return redis.call('HSET', KEYS[1], ARGV[1] .. 'owner', ARGV[2], ARGV[1] .. 'until', string.format('%.0f', now + tonumber(ARGV[3])))""",
                List.of(keys.lease(lease)), List.of(RedisKeys.leaseField(lease), token, Long.toString(ttlMillis)));
    }

    /** Drops {@code lease}, whoever holds it (a test's "its worker died and the lease ran out"). */
    static void dropLease(redis.clients.jedis.UnifiedJedis jedis, RedisKeys keys, io.lockstep.scheduler.lock.Lease lease) {
        if (lease.exclusive()) {
            jedis.hdel(keys.lease(lease), RedisKeys.leaseField(lease) + "owner");
        } else {
            jedis.del(keys.lease(lease));
        }
    }

    /** The server's clock now. */
    Instant serverNow() {
        return Instant.ofEpochMilli(provider.serverTimeMillis());
    }
}
