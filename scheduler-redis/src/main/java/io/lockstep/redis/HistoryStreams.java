package io.lockstep.redis;

import io.lockstep.redis.RedisAdmin.Run;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import redis.clients.jedis.StreamEntryID;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.resps.StreamEntry;

/**
 * A job's history as {@link RedisAdmin} shows it, read from its two streams (runs, written by
 * complete.lua; decisions without a run, by claim.lua and recover.lua) and put in one order; on
 * Redlock, the masters' histories merged into one. Reads only.
 */
final class HistoryStreams {

    private HistoryStreams() {}

    /**
     * Histories from several masters as one, newest slot first: each run once (by slot, token,
     * attempt and outcome); each decision without a run once (by slot and outcome: every master
     * records its own token), and only when more than half of the masters that answered have it (a
     * minority's decision was given back, or never won).
     */
    static List<Run> merge(List<List<Run>> histories, int limit) {
        Map<String, Run> entries = new java.util.LinkedHashMap<>();
        Map<String, Integer> masters = new java.util.HashMap<>();
        for (List<Run> history : histories) {
            java.util.Set<String> seen = new java.util.HashSet<>();
            for (Run r : history) {
                String key = r.isRun() ? r.slot().toEpochMilli() + "/" + r.fencingToken() + "/" + r.attempt() + "/" + r.outcome()
                        : r.slot().toEpochMilli() + "/" + r.outcome();
                if (seen.add(key)) {
                    masters.merge(key, 1, Integer::sum);
                }
                entries.putIfAbsent(key, r);
            }
        }
        return entries.entrySet().stream().filter(e -> e.getValue().isRun() || masters.get(e.getKey()) * 2 > histories.size())
                .map(Map.Entry::getValue).sorted(java.util.Comparator.comparing(Run::slot).reversed()).limit(limit).toList();
    }

    /** One stream entry of a history: the run or decision, and its id (when it was written). */
    record Entry(Run run, StreamEntryID id) {}

    /** The last {@code limit} entries of a history stream (runs, or decisions), newest first. */
    static List<Entry> read(UnifiedJedis jedis, String stream, int limit) {
        List<StreamEntry> entries = jedis.xrevrange(stream, (StreamEntryID) null, (StreamEntryID) null, limit);
        List<Entry> read = new ArrayList<>(entries.size());
        for (StreamEntry e : entries) {
            Map<String, String> f = e.getFields();
            read.add(new Entry(new Run(Instant.ofEpochMilli(Long.parseLong(f.getOrDefault("slot", "0"))), f.getOrDefault("worker", ""),
                    f.getOrDefault("outcome", ""), Integer.parseInt(f.getOrDefault("attempt", "1")),
                    Long.parseLong(f.getOrDefault("token", "0")), Long.parseLong(f.getOrDefault("durationMs", "0")),
                    f.getOrDefault("error", ""), "1".equals(f.get("manual")), f.getOrDefault("reason", ""),
                    f.getOrDefault("origin", "")), e.getID()));
        }
        return read;
    }

    /**
     * Runs and decisions as one history, newest slot first (a recovery is written after later slots
     * were decided); one slot's entries newest first (a rerun's outcome after its recovery).
     */
    static List<Run> merged(List<Entry> runs, List<Entry> decisions, int limit) {
        List<Entry> all = new ArrayList<>(runs);
        all.addAll(decisions);
        all.sort(java.util.Comparator.comparing((Entry e) -> e.run().slot()).thenComparing(Entry::id).reversed());
        return all.stream().limit(limit).map(Entry::run).toList();
    }
}
