package io.lockstep.redis;

import io.lockstep.scheduler.lock.InForce;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisException;

/**
 * The in-force stamps on one server ({@link InForce}): {@code inforce.lua} keeps, per job, its last
 * enabled stamp, the current run of disabled stamps and the latest closed period, in
 * {@code <prefix>:{workers}:inforce}; {@code forget.lua} drops the marks of the jobs it forgot.
 * Thread-safe.
 */
final class RedisInForce {

    private final UnifiedJedis jedis;
    private final RedisCalls calls;
    private final RedisKeys keys;

    RedisInForce(UnifiedJedis jedis, RedisCalls calls, RedisKeys keys) {
        this.jedis = jedis;
        this.calls = calls;
        this.keys = keys;
    }

    private static final LuaScript IN_FORCE = LuaScript.load("inforce.lua");
    private static final LuaScript FORGET = LuaScript.load("forget.lua");
    /** How often a worker forgets the jobs no config stamped for {@link InForce#KEEP}, with their marks. */
    static final Duration PRUNE_EVERY = Duration.ofHours(1);
    private volatile long prunedAt = System.nanoTime() - PRUNE_EVERY.toNanos();

    /** {@link io.lockstep.scheduler.lock.LockProvider#stampInForce}: {@code inforce.lua}, forgetting once every {@link #PRUNE_EVERY}. */
    void stampInForce(java.util.Collection<String> enabled, java.util.Collection<String> disabled, boolean fresh) {
        boolean prune = System.nanoTime() - prunedAt >= PRUNE_EVERY.toNanos();
        stampInForce(enabled, disabled, fresh, InForce.GAP, InForce.KEEP, prune);
        if (prune) {
            prunedAt = System.nanoTime();
        }
    }

    /**
     * {@code inforce.lua} with its periods given (tests shorten them); with {@code prune}, also
     * drops the marks of the jobs it forgot ({@code forget.lua}: only where they decided nothing
     * for {@code keep} either). Returns the jobs it forgot. A drop that fails leaves those marks to
     * the group's own ttl.
     */
    List<String> stampInForce(java.util.Collection<String> enabled, java.util.Collection<String> disabled, boolean fresh, Duration gap,
            Duration keep, boolean prune) {
        List<String> args = new ArrayList<>(enabled.size() + disabled.size() + 4);
        args.add(Long.toString(gap.toMillis()));
        args.add(Long.toString(keep.toMillis()));
        args.add(prune ? "1" : "0");
        args.add(Integer.toString(enabled.size()));
        args.add(fresh ? "1" : "0");
        args.addAll(enabled);
        args.addAll(disabled);
        List<?> r = (List<?>) calls.call("in force", new RedisCalls.Call(IN_FORCE, List.of(keys.inForce()), args));
        List<String> forgotten = new ArrayList<>();
        r.subList(1, r.size()).forEach(o -> forgotten.add(RedisCalls.asString(o)));
        for (String job : forgotten) {
            calls.call("in force", new RedisCalls.Call(FORGET, List.of(keys.marks(job)),
                    List.of(Long.toString(keep.toMillis()), RedisKeys.markField(job))));
        }
        return forgotten;
    }

    /** {@link io.lockstep.scheduler.lock.LockProvider#inForce}: one {@code HMGET}; a field it cannot read counts as none. */
    Map<String, InForce> inForce(List<String> jobs) {
        Map<String, InForce> result = new HashMap<>();
        if (jobs.isEmpty()) {
            return result;
        }
        List<String> values;
        try {
            values = jedis.hmget(keys.inForce(), jobs.toArray(String[]::new));
        } catch (JedisException e) {
            throw calls.wrap("in force", e);
        } catch (ClassCastException e) {
            throw new io.lockstep.scheduler.lock.LockException(calls.target, calls.target + ": in force: unexpected reply ("
                    + e.getMessage() + ")", e);
        }
        for (int i = 0; i < jobs.size(); i++) {
            String v = values.get(i);
            if (v == null) {
                continue;
            }
            String[] p = v.split(",", -1);
            try {
                result.put(jobs.get(i), InForce.fromStamps(stamp(p, 1), stamp(p, 2), stamp(p, 3), stamp(p, 4)));
            } catch (NumberFormatException e) {
                // unreadable: as none kept (everything owed)
            }
        }
        return result;
    }

    private static Long stamp(String[] fields, int i) {
        return i < fields.length && !fields[i].isEmpty() ? Long.valueOf(fields[i]) : null;
    }
}
