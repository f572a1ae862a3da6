package io.lockstep.redis;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisException;

/**
 * What an operator asks of the jobs on one server (one Redlock master): a job paused or resumed (a
 * command, newest wins, applied by {@code operator.lua}) and a manual run. Both are kept under the
 * workers' hash tag because every worker hears of them with its next heartbeat ({@link RedisMembers});
 * they are written here, by the operator's commands ({@link RedisAdmin}) and, on Redlock, by the
 * repair of a master that missed one ({@link RedlockMembers}). Apart from the membership they ride
 * on: their format and rules are the operator's, and change with the commands, not with the
 * heartbeat. Thread-safe.
 */
final class OperatorCommands {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final LuaScript OPERATOR = LuaScript.load("operator.lua");

    private final UnifiedJedis jedis;
    private final RedisCalls calls;
    private final RedisKeys keys;

    OperatorCommands(UnifiedJedis jedis, RedisCalls calls, RedisKeys keys) {
        this.jedis = jedis;
        this.calls = calls;
        this.keys = keys;
    }

    /** Redlock: applies an operator's command about {@code job} on this master unless it has a newer one ({@code operator.lua}). */
    Applied command(String job, String command) {
        List<?> r = (List<?>) calls.call("pause", new RedisCalls.Call(OPERATOR, List.of(keys.paused(job), keys.operator()), List.of(job, command)));
        return new Applied(calls.asLong("pause", r.get(0)) == 1, calls.asLong("pause", r.get(1)) == 1);
    }

    /** What {@link #command} did on this master: whether it applied it (no newer one there), and whether the job was paused before. */
    record Applied(boolean applied, boolean wasPaused) {}

    /** Redlock: the time of the latest operator command this master has for {@code job} (0: none). */
    long latestCommandAt(String job) {
        try {
            String command = jedis.hget(keys.operator(), job);
            return command == null ? 0 : commandAt(command);
        } catch (JedisException e) {
            throw calls.wrap("pause", e);
        }
    }

    /** Redlock: brings this master to the newest commands and manual-run requests another master had (one round trip each). */
    void repair(Map<String, String> commands, List<String> triggers) {
        if (!commands.isEmpty()) {
            calls.batch("repair", List.copyOf(commands.entrySet()), e -> new RedisCalls.Call(OPERATOR,
                    List.of(keys.paused(e.getKey()), keys.operator()), List.of(e.getKey(), e.getValue())));
        }
        try {
            for (String t : triggers) {
                jedis.zadd(keys.triggers(), Long.parseLong(t.substring(t.lastIndexOf(' ') + 1)), t);
            }
            if (!triggers.isEmpty()) {
                jedis.pexpire(keys.triggers(), Duration.ofMinutes(2).toMillis());
            }
        } catch (JedisException e) {
            throw calls.wrap("repair", e);
        }
    }

    /** An operator's command as {@code operator.lua} reads it. */
    static String command(long at, boolean paused, String note, String by, long until) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("at", at);
        m.put("state", paused ? "paused" : "resumed");
        m.put("note", note);
        m.put("by", by);
        m.put("until", until);
        try {
            return JSON.writeValueAsString(m);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A command's time ({@code at}); 0 when unreadable. */
    static long commandAt(String command) {
        try {
            return JSON.readTree(command).path("at").asLong();
        } catch (JsonProcessingException e) {
            return 0;
        }
    }

    /**
     * Requests a manual run of {@code job}: every worker hears of it with its next heartbeat and
     * races for it like for a slot. Its slot is the server's time, moved off a whole second so it
     * cannot be a scheduled slot.
     *
     * @return the slot of the manual run
     */
    Instant trigger(String job) {
        try {
            return trigger(job, manualSlot(ServerClock.millis(jedis)));
        } catch (JedisException e) {
            throw calls.wrap("trigger", e);
        }
    }

    /** {@link #trigger(String)} at a given slot (Redlock: the same slot on every master). */
    Instant trigger(String job, Instant slot) {
        try {
            long at = slot.toEpochMilli();
            jedis.zadd(keys.triggers(), at, job + " " + at);
            jedis.pexpire(keys.triggers(), Duration.ofMinutes(2).toMillis());
            return slot;
        } catch (JedisException e) {
            throw calls.wrap("trigger", e);
        }
    }

    /** A manual run's slot at {@code serverMillis}: moved off a whole second, so it is never a scheduled slot. */
    static Instant manualSlot(long serverMillis) {
        return Instant.ofEpochMilli(serverMillis % 1000 == 0 ? serverMillis + 1 : serverMillis);
    }
}
