package io.lockstep.redis;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.lockstep.scheduler.lock.Heartbeat;
import io.lockstep.scheduler.lock.WorkerInfo;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.params.SetParams;
import redis.clients.jedis.exceptions.JedisException;

/**
 * Membership in Redis: each worker's heartbeat ({@code heartbeat.lua}, one call every few seconds)
 * and the job definitions each config hash stands for. The keys are in {@link RedisKeys}; they all
 * share the {@code {workers}} hash tag. Also read by the {@code status} command. Thread-safe.
 */
final class RedisMembers {

    private static final LuaScript HEARTBEAT = LuaScript.load("heartbeat.lua");
    private static final ObjectMapper JSON = new ObjectMapper();

    private final UnifiedJedis jedis;
    private final RedisCalls calls;
    private final RedisKeys keys;

    RedisMembers(UnifiedJedis jedis, RedisCalls calls, RedisKeys keys) {
        this.jedis = jedis;
        this.calls = calls;
        this.keys = keys;
    }

    Heartbeat heartbeat(WorkerInfo self, Duration ttl) {
        Object reply = calls.call("heartbeat", new RedisCalls.Call(HEARTBEAT,
                List.of(keys.workers(), keys.seen(), keys.config(self.configHash()), keys.triggers()),
                List.of(self.id(), toJson(self), Long.toString(ttl.toMillis()))));
        List<?> r = (List<?>) reply;
        List<Heartbeat.Trigger> triggers = new ArrayList<>();
        for (Object o : (List<?>) r.get(4)) {
            String[] t = text(o).split(" ");
            if (t.length == 2) {
                triggers.add(new Heartbeat.Trigger(t[0], Instant.ofEpochMilli(Long.parseLong(t[1]))));
            }
        }
        // On Redis Cluster the heartbeat's master is not the clock of every job: leave the clock to its probe.
        long serverTime = keys.cluster() ? 0 : calls.asLong("heartbeat", r.get(0));
        return new Heartbeat(parse((List<?>) r.get(2), (List<?>) r.get(3)), triggers, serverTime,
                calls.asLong("heartbeat", r.get(1)) == 1);
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

    void publish(String configHash, Map<String, String> jobs) {
        try {
            String key = keys.config(configHash);
            if (!jobs.isEmpty()) {
                jedis.hset(key, jobs);
            }
            jedis.pexpire(key, Duration.ofMinutes(1).toMillis()); // then kept alive by each heartbeat
        } catch (JedisException e) {
            throw calls.wrap("publish config", e);
        }
    }

    Map<String, String> config(String configHash) {
        try {
            return jedis.hgetAll(keys.config(configHash));
        } catch (JedisException e) {
            throw calls.wrap("read config", e);
        }
    }

    void leave(String workerId) {
        try {
            jedis.hdel(keys.workers(), workerId);
            jedis.zrem(keys.seen(), workerId);
        } catch (JedisException e) {
            throw calls.wrap("leave", e);
        }
    }

    /** The live workers as the last heartbeat of anyone left them (for {@code status}), oldest first. */
    List<WorkerInfo> live(Duration ttl) {
        try {
            Map<String, String> info = jedis.hgetAll(keys.workers());
            List<redis.clients.jedis.resps.Tuple> seen = jedis.zrangeWithScores(keys.seen(), 0, -1);
            long now = ServerClock.millis(jedis);
            List<Object> flatInfo = new ArrayList<>();
            info.forEach((k, v) -> {
                flatInfo.add(k);
                flatInfo.add(v);
            });
            List<Object> flatSeen = new ArrayList<>();
            seen.stream().filter(t -> t.getScore() >= now - ttl.toMillis()).forEach(t -> {
                flatSeen.add(t.getElement());
                flatSeen.add(Long.toString((long) t.getScore()));
            });
            return parse(flatInfo, flatSeen);
        } catch (JedisException e) {
            throw calls.wrap("workers", e);
        }
    }

    private static List<WorkerInfo> parse(List<?> info, List<?> seen) {
        Map<String, Instant> lastSeen = new HashMap<>();
        for (int i = 0; i + 1 < seen.size(); i += 2) {
            lastSeen.put(text(seen.get(i)), Instant.ofEpochMilli((long) Double.parseDouble(text(seen.get(i + 1)))));
        }
        Map<String, WorkerInfo> workers = new LinkedHashMap<>();
        for (int i = 0; i + 1 < info.size(); i += 2) {
            String id = text(info.get(i));
            Instant at = lastSeen.get(id);
            if (at != null) {
                fromJson(text(info.get(i + 1)), at).ifPresent(w -> workers.put(id, w));
            }
        }
        return workers.values().stream().sorted(java.util.Comparator.comparing(WorkerInfo::started)).toList();
    }

    private static String text(Object o) {
        return o instanceof byte[] b ? new String(b, java.nio.charset.StandardCharsets.UTF_8) : String.valueOf(o);
    }

    private static String toJson(WorkerInfo w) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", w.id());
        m.put("host", w.host());
        m.put("pid", w.pid());
        m.put("version", w.version());
        m.put("started", w.started().toEpochMilli());
        m.put("threads", w.threads());
        m.put("busy", w.busy());
        m.put("configHash", w.configHash());
        if (w.draining()) {
            m.put("draining", true);
        }
        try {
            return JSON.writeValueAsString(m);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A worker entry; empty when it cannot be read (written by another version, say). */
    private static java.util.Optional<WorkerInfo> fromJson(String json, Instant lastSeen) {
        try {
            JsonNode n = JSON.readTree(json);
            return java.util.Optional.of(new WorkerInfo(n.path("id").asText(), n.path("host").asText(), n.path("pid").asLong(),
                    n.path("version").asText(), Instant.ofEpochMilli(n.path("started").asLong()), n.path("threads").asInt(),
                    n.path("busy").asInt(), n.path("configHash").asText(), lastSeen, n.path("draining").asBoolean(false)));
        } catch (JsonProcessingException | RuntimeException e) {
            return java.util.Optional.empty();
        }
    }
}
