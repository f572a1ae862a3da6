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
 *
 * <p>The heartbeat also brings each worker what others wrote on that hash tag, kept by classes of
 * their own: the operators' commands and manual runs ({@link OperatorCommands}) and, on Redlock,
 * the master's deployment marker ({@link DeploymentMarker}). Keeping workers of another key layout
 * away is {@link LayoutGuard}'s.
 */
final class RedisMembers {

    private static final LuaScript HEARTBEAT = LuaScript.load("heartbeat.lua");
    private static final ObjectMapper JSON = new ObjectMapper();

    private final UnifiedJedis jedis;
    private final RedisCalls calls;
    private final RedisKeys keys;
    /** Keeps workers of another key layout away ({@link LayoutGuard}); null for the start check's probe, which publishes no real jobs. */
    private final LayoutGuard layouts;
    /** The operators' commands and manual runs the heartbeat carries to every worker ({@link OperatorCommands}). */
    private final OperatorCommands operatorCommands;
    /** Redlock: this master's deployment marker, which the heartbeat reads ({@link DeploymentMarker}). */
    private final DeploymentMarker deployment;

    RedisMembers(UnifiedJedis jedis, RedisCalls calls, RedisKeys keys) {
        this(jedis, calls, keys, true);
    }

    RedisMembers(UnifiedJedis jedis, RedisCalls calls, RedisKeys keys, boolean holdLegacy) {
        this.jedis = jedis;
        this.calls = calls;
        this.keys = keys;
        this.layouts = holdLegacy ? new LayoutGuard(calls, keys.prefix(), () -> read(WorkerInfo.HEARTBEAT_TTL).others()) : null;
        this.operatorCommands = new OperatorCommands(jedis, calls, keys);
        this.deployment = new DeploymentMarker(jedis, calls, keys);
    }

    /** The operators' commands and manual runs on this server, which each heartbeat reads. */
    OperatorCommands commands() {
        return operatorCommands;
    }

    /** Redlock: this master's deployment marker, which each heartbeat reads. */
    DeploymentMarker deployment() {
        return deployment;
    }

    /**
     * A heartbeat as one master answered it, with what Redlock compares across masters: the manual
     * runs requested as stored ({@code '<job> <slot ms>'}) and the operator commands (job to JSON).
     */
    record Beat(Heartbeat heartbeat, List<String> triggers, Map<String, String> commands, String marker) {}

    Heartbeat heartbeat(WorkerInfo self, Duration ttl) {
        return beat(self, ttl).heartbeat();
    }

    Beat beat(WorkerInfo self, Duration ttl) {
        Object reply = calls.call("heartbeat", new RedisCalls.Call(HEARTBEAT,
                List.of(keys.workers(), keys.seen(), keys.config(self.configHash()), keys.triggers(), keys.operator(), keys.deployment(),
                        keys.drains(), keys.backfills()),
                List.of(self.id(), toJson(self), Long.toString(ttl.toMillis()))));
        List<?> r = (List<?>) reply;
        List<String> stored = new ArrayList<>();
        ((List<?>) r.get(4)).forEach(o -> stored.add(text(o)));
        Map<String, String> commands = new HashMap<>();
        List<?> flat = r.size() > 5 ? (List<?>) r.get(5) : List.of();
        for (int i = 0; i + 1 < flat.size(); i += 2) {
            commands.put(text(flat.get(i)), text(flat.get(i + 1)));
        }
        List<Heartbeat.Trigger> triggers = new ArrayList<>();
        for (String o : stored) {
            String[] t = o.split(" ");
            if (t.length == 2) {
                triggers.add(new Heartbeat.Trigger(t[0], Instant.ofEpochMilli(Long.parseLong(t[1]))));
            }
        }
        // On Redis Cluster the heartbeat's master is not the clock of every job: leave the clock to its probe.
        long serverTime = keys.cluster() ? 0 : calls.asLong("heartbeat", r.get(0));
        Live parsed = parse((List<?>) r.get(2), (List<?>) r.get(3));
        List<WorkerInfo> live = parsed.ours();
        if (layouts != null) {
            // This worker keeps the holds of its config when it is the first live worker by id of those that run it.
            layouts.beat(parsed.others(), live.stream().filter(w -> w.configHash().equals(self.configHash()))
                    .map(WorkerInfo::id).min(String::compareTo).map(self.id()::equals).orElse(true));
        }
        String drain = r.size() > 7 ? text(r.get(7)) : "";
        Map<String, String> backfillFields = new HashMap<>();
        List<?> bf = r.size() > 8 ? (List<?>) r.get(8) : List.of();
        for (int i = 0; i + 1 < bf.size(); i += 2) {
            backfillFields.put(text(bf.get(i)), text(bf.get(i + 1)));
        }
        return new Beat(new Heartbeat(live, triggers, serverTime, calls.asLong("heartbeat", r.get(1)) == 1,
                drain.isEmpty() ? null : Duration.ofMillis(Long.parseLong(drain)),
                BackfillStore.parse(backfillFields)), stored, commands, r.size() > 6 ? text(r.get(6)) : "");
    }

    /**
     * Publishes the job definitions a config hash stands for (a worker's start, and each reload);
     * the first publication also holds the jobs paused for layout 1 workers ({@link LayoutGuard}).
     *
     * @throws io.lockstep.scheduler.lock.LockException at the first, when a live worker of another
     *     key layout uses this Redis: the worker refuses to start (one line naming each)
     */
    void publish(String configHash, Map<String, String> jobs) {
        if (layouts == null) {
            writeConfig(configHash, jobs);
        } else {
            layouts.publish(jobs.keySet(), () -> writeConfig(configHash, jobs));
        }
    }

    private void writeConfig(String configHash, Map<String, String> jobs) {
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

    /** Asks {@code workerId} to drain within {@code within}: its next heartbeat answers it (heartbeat.lua), once. */
    void requestDrain(String workerId, Duration within) {
        try {
            jedis.hset(keys.drains(), workerId, Long.toString(within.toMillis()));
            // A request its worker has not taken within a minute (20 heartbeats) is gone: a copy a Redlock master kept
            // after missing the heartbeat that took it cannot drain a process restarted later under the same id.
            jedis.pexpire(keys.drains(), Duration.ofMinutes(1).toMillis());
        } catch (JedisException e) {
            throw calls.wrap("drain", e);
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

    /**
     * The live workers as the last heartbeat of anyone left them (for {@code status}), oldest first;
     * of every key layout, so that an operator sees an older version's worker too (its version
     * says which).
     */
    List<WorkerInfo> live(Duration ttl) {
        Live read = read(ttl);
        List<WorkerInfo> all = new ArrayList<>(read.ours());
        all.addAll(read.others());
        all.sort(java.util.Comparator.comparing(WorkerInfo::started));
        return all;
    }

    /** The live workers' entries, ours (our key layout) and the others, each oldest first. */
    private record Live(List<WorkerInfo> ours, List<WorkerInfo> others) {}

    private Live read(Duration ttl) {
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
        } catch (ClassCastException e) {
            // A reply of the wrong type (a client that read replies by one protocol's rules while its
            // connections spoke the other, before RedisClients named RESP3: BuiltBeforeRedisTest): an
            // unreadable answer is the store failing, told in one line, not a crash.
            throw new io.lockstep.scheduler.lock.LockException(calls.target, calls.target + ": workers: unexpected reply ("
                    + e.getMessage() + ")", e);
        }
    }

    /** The entries of live workers, split by key layout (one JSON parse each). */
    private static Live parse(List<?> info, List<?> seen) {
        Map<String, Instant> lastSeen = new HashMap<>();
        for (int i = 0; i + 1 < seen.size(); i += 2) {
            lastSeen.put(text(seen.get(i)), Instant.ofEpochMilli((long) Double.parseDouble(text(seen.get(i + 1)))));
        }
        List<WorkerInfo> ours = new ArrayList<>();
        List<WorkerInfo> others = new ArrayList<>();
        for (int i = 0; i + 1 < info.size(); i += 2) {
            Instant at = lastSeen.get(text(info.get(i)));
            if (at == null) {
                continue;
            }
            try {
                JsonNode n = JSON.readTree(text(info.get(i + 1)));
                // An entry without a layout was written before layouts were named: layout 1.
                (n.path("layout").asInt(1) == RedisKeys.LAYOUT ? ours : others).add(fromJson(n, at));
            } catch (JsonProcessingException | RuntimeException e) {
                // Unreadable (written by another version, say): not a worker we can count on.
            }
        }
        ours.sort(java.util.Comparator.comparing(WorkerInfo::started));
        others.sort(java.util.Comparator.comparing(WorkerInfo::started));
        return new Live(List.copyOf(ours), List.copyOf(others));
    }

    static String text(Object o) {
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
        m.put("layout", RedisKeys.LAYOUT);
        if (w.draining()) {
            m.put("draining", true);
        }
        if (!w.labels().isEmpty()) {
            m.put("labels", new java.util.TreeSet<>(w.labels()));
        }
        try {
            return JSON.writeValueAsString(m);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A worker entry. */
    private static WorkerInfo fromJson(JsonNode n, Instant lastSeen) {
        return new WorkerInfo(n.path("id").asText(), n.path("host").asText(), n.path("pid").asLong(),
                n.path("version").asText(), Instant.ofEpochMilli(n.path("started").asLong()), n.path("threads").asInt(),
                n.path("busy").asInt(), n.path("configHash").asText(), lastSeen, n.path("draining").asBoolean(false), labels(n.path("labels")));
    }

    private static java.util.Set<String> labels(JsonNode array) {
        java.util.Set<String> out = new java.util.TreeSet<>();
        array.forEach(l -> out.add(l.asText()));
        return out;
    }
}
