package io.lockstep.redis;

import java.util.List;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisException;

/**
 * Redlock: a master's deployment marker, which says whether a master up for less than its restart
 * quarantine may count all the same ({@link RestartQuarantine#vouches}, which reads it with the
 * uptime). It is written at the start of a new deployment on a master without Lockstep's state
 * ({@link RedlockStart}: such a master had nothing a restart could have lost), and copied by the
 * heartbeat to a master that came back without it ({@link RedlockMembers}; a copy vouches for
 * nothing). Apart from {@link RedisMembers}, whose heartbeat only reads it: whether a master is to be
 * trusted after a restart is a question of its own. Thread-safe.
 */
final class DeploymentMarker {

    private static final LuaScript MARKER = LuaScript.load("marker.lua");

    private final UnifiedJedis jedis;
    private final RedisCalls calls;
    private final RedisKeys keys;

    DeploymentMarker(UnifiedJedis jedis, RedisCalls calls, RedisKeys keys) {
        this.jedis = jedis;
        this.calls = calls;
        this.keys = keys;
    }

    /** Redlock: this master's deployment marker's id, "" when it has none. */
    String id() {
        try {
            String id = jedis.hget(keys.deployment(), "id");
            return id == null ? "" : id;
        } catch (JedisException e) {
            throw calls.wrap("marker", e);
        }
    }

    /**
     * Redlock: writes the deployment marker {@code id} on this master unless it has one
     * ({@code marker.lua}); {@code fresh}: a new deployment's, which vouches for a master without
     * Lockstep's state (its own keys are what tells).
     */
    String mark(String id, boolean fresh) {
        return RedisCalls.asString(calls.call("marker", new RedisCalls.Call(MARKER, stateKeys(),
                List.of(id, Long.toString(System.currentTimeMillis()), fresh ? "new" : "copy"))));
    }

    /** Redlock: whether this master holds any of {@link #stateKeys()} (Lockstep ran on it lately). */
    boolean hasState() {
        try {
            return jedis.exists(stateKeys().subList(1, stateKeys().size()).toArray(String[]::new)) > 0;
        } catch (JedisException e) {
            throw calls.wrap("marker", e);
        }
    }

    /**
     * The marker, then keys only a server where Lockstep ran lately has: live workers, operators'
     * commands, manual runs, and the marks of the probe every worker start writes (kept 7 days).
     */
    private List<String> stateKeys() {
        return List.of(keys.deployment(), keys.seen(), keys.operator(), keys.triggers(), keys.marks(StartCheck.PREFLIGHT_JOB));
    }
}
