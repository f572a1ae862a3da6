package io.lockstep.redis;

import io.lockstep.scheduler.lock.Lease;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Every key Lockstep writes, under one prefix ({@code redis.keyPrefix}). Keys of one job share a
 * hash tag, and so do the cluster-wide ones ({@code {workers}}), so that every script call touches
 * one hash slot and the layout works unchanged on Redis Cluster:
 * <pre>
 *   &lt;prefix&gt;:{&lt;job&gt;}:slot:&lt;epochMillis&gt;   slot record (hash): running, then done / missed / skipped; has a ttl
 *   &lt;prefix&gt;:{&lt;job&gt;}:fence                 fence counter: max(counter + 1, Redis TIME in us) per claim; ttl 7 days, refreshed
 *   &lt;prefix&gt;:{&lt;job&gt;}:lease                 lease of an {@code overlap: skip} job (one run at a time)
 *   &lt;prefix&gt;:{&lt;job&gt;}:lease:&lt;epochMillis&gt;  lease of an {@code overlap: allow} run
 *   &lt;prefix&gt;:{&lt;job&gt;}:running               runs in flight (zset: slot -> lease end, server ms), for recovery
 *   &lt;prefix&gt;:{&lt;job&gt;}:last                  marks (hash): the latest slot the cluster decided ('decided', for
 *                                           catch-up and stale claims) and started ('started', for slot order),
 *                                           and the slot whose run took the lease ('holder'); ttl 7 days
 *   &lt;prefix&gt;:{&lt;job&gt;}:history               the job's last runs (stream, capped at history.keep); ttl a week
 *   &lt;prefix&gt;:{&lt;job&gt;}:decisions             its last slots decided without a run (stream, the same cap and ttl)
 *   &lt;prefix&gt;:{&lt;job&gt;}:paused                the job is paused (hash: note, by, at); ttl = the pause's --for
 *   &lt;prefix&gt;:{workers}:info                 live workers (hash: id -> JSON), ttl: the heartbeat's
 *   &lt;prefix&gt;:{workers}:seen                 when each was last heard from (zset: id -> server ms)
 *   &lt;prefix&gt;:{workers}:config:&lt;hash&gt;        the job definitions a config hash stands for (hash: job -> JSON)
 *   &lt;prefix&gt;:{workers}:triggers             manual runs requested in the last minute (zset: 'job slot' -> slot ms)
 *   &lt;prefix&gt;:{workers}:operator             Redlock: the latest pause/resume per job on this master (hash: job -> JSON); no ttl
 *   &lt;prefix&gt;:{workers}:deployment           Redlock: this master's deployment marker (hash: id, created, run, fresh); no ttl
 * </pre>
 *
 * @param prefix the key prefix
 * @param cluster whether the keys live on Redis Cluster (a script call may then touch one hash slot only)
 */
public record RedisKeys(String prefix, boolean cluster) {

    /** At most this many slots (or runs) go in one script call. */
    static final int PER_CALL = 64;

    /**
     * Splits items into the groups one script call may carry: at most {@link #PER_CALL}, and on
     * Redis Cluster only items of one hash slot (a job's keys share its hash tag; jobs whose tags
     * fall in the same slot share a call, others never do, or the call fails with CROSSSLOT).
     */
    List<List<Integer>> groups(List<Integer> items, java.util.function.IntFunction<String> job) {
        Map<Integer, List<Integer>> bySlot = new java.util.LinkedHashMap<>();
        for (int i : items) {
            int slot = cluster ? redis.clients.jedis.util.JedisClusterCRC16.getSlot(fence(job.apply(i))) : 0;
            bySlot.computeIfAbsent(slot, k -> new ArrayList<>()).add(i);
        }
        List<List<Integer>> chunks = new ArrayList<>();
        for (List<Integer> same : bySlot.values()) {
            for (int from = 0; from < same.size(); from += PER_CALL) {
                chunks.add(same.subList(from, Math.min(same.size(), from + PER_CALL)));
            }
        }
        return chunks;
    }


    String slot(String job, long slotMillis) {
        return prefix + ":{" + job + "}:slot:" + slotMillis;
    }

    String fence(String job) {
        return prefix + ":{" + job + "}:fence";
    }

    String lease(Lease lease) {
        String base = prefix + ":{" + lease.job() + "}:lease";
        return lease.exclusive() ? base : base + ":" + lease.slot().toEpochMilli();
    }

    String running(String job) {
        return prefix + ":{" + job + "}:running";
    }

    String marks(String job) {
        return prefix + ":{" + job + "}:last";
    }

    String history(String job) {
        return prefix + ":{" + job + "}:history";
    }

    /**
     * The job's decisions without a run (missed, skipped, paused, abandoned, recovered): a stream
     * beside its history of runs, so that a long pause cannot push the runs out of theirs.
     */
    String decisions(String job) {
        return prefix + ":{" + job + "}:decisions";
    }

    String paused(String job) {
        return prefix + ":{" + job + "}:paused";
    }

    String workers() {
        return prefix + ":{workers}:info";
    }

    String seen() {
        return prefix + ":{workers}:seen";
    }

    String triggers() {
        return prefix + ":{workers}:triggers";
    }

    /** Redlock: this master's deployment marker ({@code marker.lua}). */
    String deployment() {
        return prefix + ":{workers}:deployment";
    }

    /** Redlock: the latest operator command (pause, resume) each job was given on this master ({@code operator.lua}). */
    String operator() {
        return prefix + ":{workers}:operator";
    }

    String config(String hash) {
        return prefix + ":{workers}:config:" + hash;
    }
}
