package io.lockstep.redis;

import java.util.List;
import java.util.Objects;
import java.util.Optional;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisException;

/**
 * A value in Redis guarded by fencing tokens: it only accepts access carrying a token at least as
 * high as the highest it has seen, so a lock holder that was paused past its lease (and replaced by
 * a holder with a higher token) has its late writes refused.
 *
 * <p>The pattern, with a lock from {@link RedisLocks} or a job's {@code fencingToken()}:
 * <pre>{@code
 * FencedValue stock = FencedValue.of(jedis, "stock:sku-42");
 * if (!stock.admit(token)) return;                     // a newer holder was here: stop
 * int left = Integer.parseInt(stock.read().orElse("0")); // safe: older holders can no longer write
 * if (!stock.write(token, Integer.toString(left - 1))) return; // refused: a newer holder came meanwhile
 * }</pre>
 * {@link #admit} first, then read: admitting raises the fence, so no holder with an older token can
 * write between our read and our write. Without it, an older holder's late write could land after
 * our read and be overwritten by ours.
 *
 * <p>The key is a hash ({@code fence}, {@code value}) without a ttl: it is the user's data. Every
 * call is one atomic Lua script. Thread-safe.
 */
public final class FencedValue {

    private static final LuaScript FENCED = LuaScript.load("fenced.lua");

    private final RedisCalls calls;
    private final String key;
    private final LockMeters meters;

    private FencedValue(RedisCalls calls, String key, LockMeters meters) {
        this.calls = calls;
        this.key = key;
        this.meters = meters;
    }

    /** The fenced value stored under {@code key}. */
    public static FencedValue of(UnifiedJedis jedis, String key) {
        return new FencedValue(new RedisCalls(Objects.requireNonNull(jedis, "jedis"), "redis"), Objects.requireNonNull(key, "key"),
                LockMeters.NONE);
    }

    /** The same value, counting refused writes in {@code lockstep.lock.fenced.refused{lock=<lock>}}. */
    public FencedValue withMeters(io.micrometer.core.instrument.MeterRegistry registry, String lock) {
        return new FencedValue(calls, key, new LockMeters(registry, lock));
    }

    /**
     * Raises the fence to {@code token}: from now on, writes with lower tokens are refused.
     *
     * @return false when a higher token was already seen (this holder is stale)
     */
    public boolean admit(long token) {
        return run(token, "admit", "");
    }

    /**
     * Stores {@code value} if {@code token} is at least the highest token seen, and raises the fence.
     *
     * @return false when refused: a higher token was seen
     */
    public boolean write(long token, String value) {
        return run(token, "write", Objects.requireNonNull(value, "value"));
    }

    /** The stored value, without any fencing. */
    public Optional<String> read() {
        try {
            return Optional.ofNullable(calls.jedis.hget(key, "value"));
        } catch (JedisException e) {
            throw calls.wrap("read", e);
        }
    }

    /** The highest token seen; 0 when none. */
    public long fence() {
        try {
            String fence = calls.jedis.hget(key, "fence");
            return fence == null ? 0 : Long.parseLong(fence);
        } catch (JedisException e) {
            throw calls.wrap("fence", e);
        }
    }

    private boolean run(long token, String mode, String value) {
        if (token < 1) {
            throw new IllegalArgumentException("fencing token must be positive, but was " + token);
        }
        Object reply = calls.call(mode, new RedisCalls.Call(FENCED, List.of(key), List.of(Long.toString(token), mode, value)));
        boolean accepted = calls.asLong(mode, reply) == 1L;
        if (!accepted) {
            meters.refused();
        }
        return accepted;
    }
}
