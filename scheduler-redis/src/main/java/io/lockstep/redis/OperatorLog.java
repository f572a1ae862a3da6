package io.lockstep.redis;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.params.XAddParams;
import redis.clients.jedis.resps.StreamEntry;

/**
 * The record of what operators did to a job on one server (one Redlock master): a capped stream
 * per job ({@link RedisKeys#actions}) of pause, resume, trigger and backfill, with who and when.
 * {@link RedisAdmin} writes it after each action (on every master, with one time) and merges what
 * the masters hold when it is read. Thread-safe.
 */
final class OperatorLog {

    /** How many actions each job keeps, the oldest dropped first. */
    static final int KEPT = 200;

    private final UnifiedJedis jedis;
    private final RedisCalls calls;
    private final RedisKeys keys;

    OperatorLog(UnifiedJedis jedis, RedisCalls calls, RedisKeys keys) {
        this.jedis = jedis;
        this.calls = calls;
        this.keys = keys;
    }

    /** Appends one action, stamped {@code at} (server ms). */
    void append(String job, RedisAdmin.Action action) {
        try {
            jedis.xadd(keys.actions(job), XAddParams.xAddParams().maxLen(KEPT).approximateTrimming(),
                    Map.of("at", Long.toString(action.at().toEpochMilli()), "action", action.action(), "by", action.by(),
                            "detail", action.detail()));
        } catch (JedisException e) {
            throw calls.wrap("record", e);
        }
    }

    /** The job's actions on this server, newest first, at most {@code limit}. */
    List<RedisAdmin.Action> read(String job, int limit) {
        try {
            List<RedisAdmin.Action> actions = new ArrayList<>();
            for (StreamEntry e : jedis.xrevrange(keys.actions(job), "+", "-", limit)) {
                Map<String, String> f = e.getFields();
                actions.add(new RedisAdmin.Action(Instant.ofEpochMilli(Long.parseLong(f.getOrDefault("at", "0"))),
                        f.getOrDefault("action", ""), f.getOrDefault("by", ""), f.getOrDefault("detail", "")));
            }
            return actions;
        } catch (JedisException e) {
            throw calls.wrap("history", e);
        }
    }
}
