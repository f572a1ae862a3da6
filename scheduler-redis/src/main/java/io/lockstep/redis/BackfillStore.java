package io.lockstep.redis;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.lockstep.scheduler.lock.Backfill;
import io.lockstep.scheduler.lock.ClaimRequest;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisException;

/**
 * Backfills on one server (or Sentinel, or Cluster): the requests and their progress in
 * {@link RedisKeys#backfills()} (which every heartbeat reads), each job's backfill mark in its
 * group's marks ({@code backfill_begin.lua}, {@code backfill_end.lua}; claim.lua moves its cursor),
 * and what the server knows of a backfill's slots ({@code backfill_view.lua}). Thread-safe.
 */
final class BackfillStore {

    private static final LuaScript BEGIN = LuaScript.load("backfill_begin.lua");
    private static final LuaScript END = LuaScript.load("backfill_end.lua");
    private static final LuaScript VIEW = LuaScript.load("backfill_view.lua");
    private static final LuaScript PROGRESS = LuaScript.load("backfill_progress.lua");
    private static final LuaScript CANCEL = LuaScript.load("backfill_cancel.lua");
    private static final ObjectMapper JSON = new ObjectMapper();
    /** How long the requests and their progress are kept after the last write: as long as a job's history. */
    private static final Duration KEPT = Duration.ofDays(7);
    /** Slots asked about per view call (their record keys are the call's keys). */
    private static final int PER_CALL = 500;

    private final UnifiedJedis jedis;
    private final RedisCalls calls;
    private final RedisKeys keys;
    private final int historyKeep;

    BackfillStore(UnifiedJedis jedis, RedisCalls calls, RedisKeys keys, int historyKeep) {
        this.jedis = jedis;
        this.calls = calls;
        this.keys = keys;
        this.historyKeep = historyKeep;
    }

    /**
     * Stores a new backfill of {@code job}: first the range's slots decided now (a set of its own),
     * then the job's backfill mark (from then on every undecided slot of the range is the backfill's),
     * then the request every worker hears of with its next heartbeat.
     *
     * @throws IllegalStateException when the job has a backfill that has neither ended nor been cancelled
     */
    Backfill request(String job, Instant from, Instant to, double perSecond, String by, java.util.Collection<Instant> decided) {
        Backfill b = new Backfill(java.util.UUID.randomUUID().toString(), job, from, to, perSecond, by,
                Instant.ofEpochMilli(ServerClock.millis(jedis)), false);
        String set = keys.backfillDecided(job, b.id());
        try {
            List<String> members = decided.stream().map(s -> Long.toString(s.toEpochMilli())).toList();
            for (int i = 0; i < members.size(); i += 1_000) {
                jedis.sadd(set, members.subList(i, Math.min(i + 1_000, members.size())).toArray(String[]::new));
            }
            jedis.pexpire(set, KEPT.toMillis());
        } catch (JedisException e) {
            throw calls.wrap("backfill", e);
        }
        String mark = begin(job, b);
        if (!mark.isEmpty()) {
            // A mark whose backfill ended or was cancelled, left by an end cut off between its two writes: cleared, then asked again.
            String id = mark.substring(0, mark.indexOf(':'));
            if (entries().stream().anyMatch(e -> e.backfill().id().equals(id) && !e.running())) {
                end(job, id);
                mark = begin(job, b);
            }
        }
        if (!mark.isEmpty()) {
            jedis.del(set);
            String id = mark.substring(0, mark.indexOf(':'));
            Optional<Backfill> running = entries().stream().map(Backfill.Entry::backfill).filter(r -> r.job().equals(job) && r.id().equals(id)).findFirst();
            throw new IllegalStateException(running.map(r -> job + " has a backfill running (" + r.from() + " to " + r.to()
                    + ", asked by " + r.by() + " at " + r.requestedAt() + "): wait for it to end, or cancel it with lockstep backfill --cancel " + job)
                    .orElse(job + " holds the mark of a backfill whose request is not in Redis (a request cut off midway): "
                            + "lockstep backfill --cancel " + job + " clears it"));
        }
        try {
            jedis.hset(keys.backfills(), job, toJson(b));
            jedis.hdel(keys.backfills(), job + ":progress");
            jedis.pexpire(keys.backfills(), KEPT.toMillis());
        } catch (JedisException e) {
            throw calls.wrap("backfill", e);
        }
        return b;
    }

    /** Sets the job's backfill mark for {@code b} (backfill_begin.lua); answers '' or the mark that holds the job. */
    private String begin(String job, Backfill b) {
        return RedisMembers.text(calls.call("backfill", new RedisCalls.Call(BEGIN, List.of(keys.marks(job)),
                List.of(RedisKeys.markField(job) + "bf", b.id(), Long.toString(ClaimRequest.LAST_SLOT_TTL.toMillis()),
                        Long.toString(b.to().toEpochMilli())))));
    }

    /**
     * Cancels the job's backfill: first its mark goes (from then on no slot is claimed for it, whatever
     * its driver still sends), then its request says cancelled (its driver says so at its next
     * heartbeat). Also clears a mark whose request never landed (a request cut off between its two
     * writes). A backfill that already ended is left as it is.
     *
     * @return the backfill cancelled; empty when the job had none running
     */
    Optional<Backfill> cancel(String job) {
        try {
            String mark = jedis.hget(keys.marks(job), RedisKeys.markField(job) + "bf");
            String marked = mark == null || mark.indexOf(':') < 0 ? null : mark.substring(0, mark.indexOf(':'));
            if (marked != null) {
                end(job, marked);
            }
            Optional<Backfill.Entry> e = entries().stream().filter(r -> r.backfill().job().equals(job)).findFirst();
            if (e.isEmpty() || !e.get().running() || marked != null && !e.get().backfill().id().equals(marked)) {
                return Optional.empty(); // none, ended already, or a newer request than the mark removed
            }
            if (marked == null && jedis.hexists(keys.marks(job), RedisKeys.markField(job) + "bf")) {
                return Optional.empty(); // a new request set its mark meanwhile: it is not the one this cancel saw
            }
            Backfill b = e.get().backfill();
            calls.call("backfill cancel", new RedisCalls.Call(CANCEL, List.of(keys.backfills()), List.of(job, b.id())));
            return Optional.of(b.cancel());
        } catch (JedisException e) {
            throw calls.wrap("backfill cancel", e);
        }
    }

    /** Removes the job's backfill mark if it names {@code id}, and the backfill's decided set (backfill_end.lua). */
    private void end(String job, String id) {
        calls.call("backfill end", new RedisCalls.Call(END, List.of(keys.marks(job), keys.backfillDecided(job, id)),
                List.of(RedisKeys.markField(job), id)));
    }

    /** Every backfill stored, with its progress. */
    List<Backfill.Entry> entries() {
        try {
            return parse(jedis.hgetAll(keys.backfills()));
        } catch (JedisException e) {
            throw calls.wrap("backfills", e);
        }
    }

    /** The requests of a {@code HGETALL} of {@link RedisKeys#backfills()} (as the heartbeat reads it). */
    static List<Backfill.Entry> parse(Map<String, String> fields) {
        List<Backfill.Entry> entries = new ArrayList<>();
        for (Map.Entry<String, String> f : fields.entrySet()) {
            if (!f.getKey().endsWith(":progress")) {
                Backfill b = fromJson(f.getValue());
                if (b != null) {
                    Backfill.Progress p = progressFromJson(fields.get(f.getKey() + ":progress"));
                    entries.add(new Backfill.Entry(b, p != null && p.id().equals(b.id()) ? p : null));
                }
            }
        }
        entries.sort(java.util.Comparator.comparing(e -> e.backfill().job()));
        return entries;
    }

    /**
     * Writes a backfill's progress (not over a newer request's, nor over its own that ended:
     * backfill_progress.lua); one that ended then also removes the job's backfill mark.
     */
    void progress(Backfill b, Backfill.Progress p) {
        calls.call("backfill progress", new RedisCalls.Call(PROGRESS, List.of(keys.backfills()),
                List.of(b.job(), b.id(), toJson(p), Long.toString(KEPT.toMillis()))));
        if (p.ended()) {
            end(b.job(), b.id());
        }
    }

    /** What the server knows of these slots ({@link Backfill.View}); see backfill_view.lua. */
    Backfill.View view(String job, String backfill, List<Instant> slots, Duration recordTtl) {
        long margin = Backfill.HISTORY_MARGIN.toMillis();
        Set<Instant> decided = new HashSet<>();
        long now = 0;
        String mark = "";
        long kept = recordTtl.toMillis();
        long wholeFrom = Long.MIN_VALUE;
        for (int start = 0; start < Math.max(slots.size(), 1); start += PER_CALL) {
            List<Instant> part = slots.subList(Math.min(start, slots.size()), Math.min(start + PER_CALL, slots.size()));
            List<String> callKeys = new ArrayList<>(part.size() + 4);
            callKeys.addAll(List.of(keys.marks(job), keys.history(job), keys.decisions(job),
                    keys.backfillDecided(job, backfill == null ? "none" : backfill)));
            List<String> args = new ArrayList<>(part.size() + 3);
            long from = part.isEmpty() ? 0 : part.get(0).toEpochMilli();
            args.addAll(List.of(RedisKeys.markField(job), Long.toString(from), Long.toString(margin)));
            for (Instant s : part) {
                callKeys.add(keys.slot(job, s.toEpochMilli()));
                args.add(Long.toString(s.toEpochMilli()));
            }
            List<?> r = (List<?>) calls.call("backfill view", new RedisCalls.Call(VIEW, callKeys, args));
            now = calls.asLong("backfill view", r.get(0));
            mark = RedisMembers.text(r.get(1));
            String keptText = RedisMembers.text(r.get(2));
            if (!keptText.isEmpty()) {
                kept = Math.min(kept, Long.parseLong(keptText));
            }
            for (Object i : (List<?>) r.get(3)) {
                decided.add(part.get((int) calls.asLong("backfill view", i) - 1));
            }
            Set<Long> asked = new HashSet<>();
            part.forEach(s -> asked.add(s.toEpochMilli()));
            for (Object s : (List<?>) r.get(4)) {
                long slot = Long.parseLong(RedisMembers.text(s));
                if (asked.contains(slot)) {
                    decided.add(Instant.ofEpochMilli(slot));
                }
            }
            for (Object w : (List<?>) r.get(5)) {
                wholeFrom = Math.max(wholeFrom, calls.asLong("backfill view", w));
            }
        }
        // A slot at or after now - kept still has its record if it was decided; an earlier one only
        // its history entry, if the history keeps entries and is whole from a margin before it, at
        // most a week back (the history lives a week past its last entry).
        long recordsFrom = now - kept;
        long historyFrom = historyKeep == 0 ? Long.MAX_VALUE
                : Math.max(now - KEPT.toMillis(), wholeFrom) + margin;
        Instant knownFrom = Instant.ofEpochMilli(Math.min(recordsFrom, historyFrom));
        String activeId = null;
        Instant cursor = null;
        String[] parts = mark.split(":"); // '<id>:<cursor>:<to>'
        if (parts.length == 3) {
            activeId = parts[0];
            long c = Long.parseLong(parts[1]);
            cursor = c == 0 ? null : Instant.ofEpochMilli(c);
        }
        return new Backfill.View(now, activeId, cursor, knownFrom, decided);
    }

    static String toJson(Backfill b) {
        ObjectNode o = JSON.createObjectNode().put("id", b.id()).put("job", b.job()).put("from", b.from().toString())
                .put("to", b.to().toString()).put("perSecond", b.perSecond()).put("by", b.by())
                .put("requestedAt", b.requestedAt().toString()).put("cancelled", b.cancelled());
        return o.toString();
    }

    static Backfill fromJson(String text) {
        try {
            JsonNode o = JSON.readTree(text);
            return new Backfill(o.path("id").asText(), o.path("job").asText(), Instant.parse(o.path("from").asText()),
                    Instant.parse(o.path("to").asText()), o.path("perSecond").asDouble(), o.path("by").asText(),
                    Instant.parse(o.path("requestedAt").asText()), o.path("cancelled").asBoolean());
        } catch (Exception e) {
            return null; // not ours (another version's): left alone
        }
    }

    static String toJson(Backfill.Progress p) {
        ObjectNode o = JSON.createObjectNode().put("id", p.id()).put("driver", p.driver()).put("total", p.total())
                .put("ran", p.ran()).put("decided", p.decided()).put("skipped", p.skipped())
                .put("state", p.state()).put("updatedAt", p.updatedAt().toString());
        if (p.cursor() != null) {
            o.put("cursor", p.cursor().toString());
        }
        return o.toString();
    }

    static Backfill.Progress progressFromJson(String text) {
        if (text == null) {
            return null;
        }
        try {
            JsonNode o = JSON.readTree(text);
            return new Backfill.Progress(o.path("id").asText(), o.path("driver").asText(), o.path("total").asLong(),
                    o.path("ran").asLong(), o.path("decided").asLong(), o.path("skipped").asLong(),
                    o.hasNonNull("cursor") ? Instant.parse(o.path("cursor").asText()) : null, o.path("state").asText(),
                    Instant.parse(o.path("updatedAt").asText()));
        } catch (Exception e) {
            return null;
        }
    }
}
