package io.lockstep.redis;

import io.lockstep.scheduler.lock.Lease;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Every key Lockstep writes, under one prefix ({@code redis.keyPrefix}): key layout
 * {@value #LAYOUT}. A job's keys carry the hash tag of its group, one of {@value #GROUPS}
 * ({@link #tag}); the cluster-wide ones share {@code {workers}}. So every script call touches one
 * hash slot, the layout works unchanged on Redis Cluster, and there one call carries the claims,
 * starts and outcomes of every job of a group, not of one job:
 * <pre>
 *   &lt;prefix&gt;:{&lt;tag&gt;}:&lt;job&gt;:slot:&lt;epochMillis&gt;  slot record (hash): running, then done / missed / skipped; has a ttl
 *   &lt;prefix&gt;:{&lt;tag&gt;}:&lt;job&gt;:lease:&lt;epochMillis&gt;  lease of an {@code overlap: allow} run (an exclusive job's is in the marks)
 *   &lt;prefix&gt;:{&lt;tag&gt;}:&lt;job&gt;:running         runs in flight (zset: slot -> lease end, server ms), for recovery
 *   &lt;prefix&gt;:{&lt;tag&gt;}:marks                 the group's marks (hash), per job: '&lt;job&gt;:decided', the latest slot the
 *                                           cluster decided (for catch-up and stale claims, and what a worker that
 *                                           stepped aside reads: one HMGET per group), '&lt;job&gt;:started', the latest
 *                                           that started (slot order), '&lt;job&gt;:holder', the slot whose run took the
 *                                           lease, '&lt;job&gt;:until', when that claim's lease ends, '&lt;job&gt;:owner', the
 *                                           token holding an exclusive job's lease (with 'until', its lease: layout 3
 *                                           moved it here from a key of its own, lease.lua), '&lt;job&gt;:closed', the
 *                                           slot of its last run that ended, '&lt;job&gt;:fence', the fence counter
 *                                           (max(counter + 1, Redis TIME in us) per claim), and '&lt;job&gt;:kept' /
 *                                           '&lt;job&gt;:mkept', the shortest record ttl a claim of a scheduled / manual
 *                                           slot wrote (stale claims across configs, see claim.lua); ttl 7 days, refreshed
 *   &lt;prefix&gt;:{&lt;tag&gt;}:&lt;job&gt;:history         the job's last runs (stream, capped at history.keep); ttl a week
 *   &lt;prefix&gt;:{&lt;tag&gt;}:&lt;job&gt;:decisions       its last slots decided without a run (stream, the same cap and ttl)
 *   &lt;prefix&gt;:{&lt;tag&gt;}:&lt;job&gt;:expect          its expectations' judgement (hash: spec, cursors, open breaches, verdicts
 *                                           to deliver 'n:&lt;id&gt;'; expect.lua), beside ':expect:fates' (zset: slot -&gt;
 *                                           what became of it) and ':expect:outbox' (zset: verdict id -&gt; delivery lease end); ttl a week
 *   &lt;prefix&gt;:{&lt;tag&gt;}:&lt;job&gt;:paused          the job is paused (hash: note, by, at); ttl = the pause's --for
 *   &lt;prefix&gt;:{&lt;tag&gt;}:&lt;job&gt;:backfill:&lt;id&gt;   the slots of a backfill's range decided when it was asked for (set); ttl 7 days
 *   &lt;prefix&gt;:{workers}:info                 live workers (hash: id -> JSON with the key layout), ttl: the heartbeat's
 *   &lt;prefix&gt;:{workers}:seen                 when each was last heard from (zset: id -> server ms)
 *   &lt;prefix&gt;:{workers}:inforce              when each job was last in force, and the latest period it was not while the
 *                                           cluster ran (hash: job -> 'last,offFrom,offTo', '*' -> the cluster's last
 *                                           stamp; see inforce.lua); ttl 7 days, refreshed
 *   &lt;prefix&gt;:{workers}:config:&lt;hash&gt;        the job definitions a config hash stands for (hash: job -> JSON)
 *   &lt;prefix&gt;:{workers}:manual               manual runs requested in the last minute (zset: 'job slot' -> slot ms)
 *   &lt;prefix&gt;:{workers}:backfills            backfills (hash: job -> request JSON, '&lt;job&gt;:progress' -> its progress JSON; the
 *                                           job's '&lt;job&gt;:bf' mark, '&lt;id&gt;:&lt;cursor&gt;:&lt;to&gt;', is in its group's marks); ttl 7 days past the last write
 *   &lt;prefix&gt;:{workers}:commands             Redlock: the latest pause/resume per job on this master (hash: job -> JSON); no ttl
 *   &lt;prefix&gt;:{workers}:deployment           Redlock: this master's deployment marker (hash: id, created, run, fresh); no ttl
 * </pre>
 * Layout 1 (before 0.2) tagged each job's keys with the job's own name ({@code {<job>}}) and kept
 * the marks per job; layout 2 (0.2 to 0.4) kept an exclusive job's lease in a key of its own
 * ({@code <prefix>:{<tag>}:<job>:lease}); see {@link LegacyLayout} for how a cluster moves from them.
 *
 * @param prefix the key prefix
 * @param cluster whether the keys live on Redis Cluster (a script call may then touch one hash slot only)
 */
public record RedisKeys(String prefix, boolean cluster) {

    /** At most this many slots (or runs) go in one script call. */
    static final int PER_CALL = 64;

    /** The key layout these keys follow, written in every worker's heartbeat entry. */
    static final int LAYOUT = 3;

    /**
     * How many groups the jobs' keys fall into. A few times the masters of any Redis Cluster
     * Lockstep is likely to meet (so the groups spread over them), few enough that one round of a
     * worker's claims is at most this many script calls. Part of the layout: changing it moves keys.
     */
    static final int GROUPS = 32;

    /**
     * The hash tag of each group: group i's is the first {@code <i>.<n>} (n = 0, 1, ...) whose
     * hash slot (CRC16 mod 16384) falls in the i-th of {@value #GROUPS} equal ranges of the 16,384
     * slots. Redis Cluster gives each master a contiguous range of slots, so the groups spread
     * evenly over any number of masters up to {@value #GROUPS}.
     */
    private static final String[] TAGS = new String[GROUPS];

    static {
        int width = 16384 / GROUPS;
        for (int i = 0; i < GROUPS; i++) {
            for (int n = 0; TAGS[i] == null; n++) {
                String tag = i + "." + n;
                if (redis.clients.jedis.util.JedisClusterCRC16.getSlot(tag) / width == i) {
                    TAGS[i] = tag;
                }
            }
        }
    }

    /**
     * The group of a job: CRC32 of its name's UTF-8 bytes, modulo {@value #GROUPS} (stable across versions and JVMs).
     * An every-worker job's instance ({@code <job>@<worker>}) is in its job's group, so that one call may read the job's
     * pause beside the instance's keys (Redis Cluster) and a job's instances share its marks hash.
     */
    static int group(String job) {
        java.util.zip.CRC32 crc = new java.util.zip.CRC32();
        crc.update(io.lockstep.scheduler.RunOn.jobOf(job).getBytes(java.nio.charset.StandardCharsets.UTF_8));
        return (int) (crc.getValue() % GROUPS);
    }

    /**
     * The hash tag of each job met so far: every key of a slot is built from it, a few times a slot,
     * and the CRC over the name was a measurable share of a worker's CPU per slot. Jobs are the
     * config's (a bound no worker comes near); should something ask for many more, it starts over.
     */
    private static final java.util.concurrent.ConcurrentHashMap<String, String> TAG_OF = new java.util.concurrent.ConcurrentHashMap<>();

    /** The hash tag of a job's keys, braces included. */
    static String tag(String job) {
        String tag = TAG_OF.get(job);
        if (tag == null) {
            if (TAG_OF.size() > 100_000) {
                TAG_OF.clear();
            }
            tag = "{" + TAGS[group(job)] + "}";
            TAG_OF.put(job, tag);
        }
        return tag;
    }

    /** The start of every key of one job: {@code <prefix>:{<tag>}:<job>:}. */
    private String base(String job) {
        return prefix + ":" + tag(job) + ":" + job + ":";
    }

    /**
     * Splits items into the groups one script call may carry: at most {@link #PER_CALL}, and on
     * Redis Cluster only items of jobs of one group (their keys share its hash tag; other groups'
     * keys are in other hash slots, and a call touching two fails with CROSSSLOT).
     */
    List<List<Integer>> groups(List<Integer> items, java.util.function.IntFunction<String> job) {
        Map<Integer, List<Integer>> bySlot = new java.util.LinkedHashMap<>();
        Map<Integer, Integer> groupOf = new java.util.HashMap<>(); // each item's group, its CRC computed once, not per comparison
        for (int i : items) {
            int group = group(job.apply(i));
            groupOf.put(i, group);
            bySlot.computeIfAbsent(cluster ? group : 0, k -> new ArrayList<>()).add(i);
        }
        if (!cluster && !items.isEmpty()) {
            // One server takes any mix, but a call whose slots are of few groups writes few marks
            // keys (each gets its ttl once per call): the items in group order (stable: a job's in its order).
            bySlot.get(0).sort(java.util.Comparator.comparingInt(groupOf::get));
        }
        List<List<Integer>> chunks = new ArrayList<>();
        for (List<Integer> same : bySlot.values()) {
            for (int from = 0; from < same.size(); from += PER_CALL) {
                chunks.add(same.subList(from, Math.min(same.size(), from + PER_CALL)));
            }
        }
        return chunks;
    }


    /** The record of a slot of a job (public for tools that read the records, such as the benchmark harness). */
    public String slot(String job, long slotMillis) {
        return base(job) + "slot:" + slotMillis;
    }

    /** A SCAN pattern for the slot records of the jobs matching {@code jobGlob} (whatever their group). */
    String slotPattern(String jobGlob) {
        return prefix + ":{*}:" + jobGlob + ":slot:*";
    }

    /**
     * The key a lease is held in: an {@code overlap: allow} run's own string key, or, for an exclusive
     * job, its group's marks (fields {@link #leaseField} {@code owner} and {@code until}; lease.lua).
     */
    String lease(Lease lease) {
        return lease.exclusive() ? marks(lease.job()) : base(lease.job()) + "lease:" + lease.slot().toEpochMilli();
    }

    /** What the lease scripts take beside {@link #lease}: the job's field prefix for an exclusive job's lease, else "". */
    static String leaseField(Lease lease) {
        return lease.exclusive() ? markField(lease.job()) : "";
    }

    String running(String job) {
        return base(job) + "running";
    }

    /** The marks of the job's group (hash); the job's fields are {@link #markField}s. */
    String marks(String job) {
        return prefix + ":" + tag(job) + ":marks";
    }

    /** The prefix of a job's fields in its group's marks: {@code <job>:} (then decided, started, holder, until). */
    static String markField(String job) {
        return job + ":";
    }

    /** The slots of backfill {@code id}'s range decided when it was asked for (set of slot ms); ttl 7 days. */
    String backfillDecided(String job, String id) {
        return base(job) + "backfill:" + id;
    }

    String history(String job) {
        return base(job) + "history";
    }

    /**
     * The job's decisions without a run (missed, skipped, paused, abandoned, recovered): a stream
     * beside its history of runs, so that a long pause cannot push the runs out of theirs.
     */
    String decisions(String job) {
        return base(job) + "decisions";
    }

    /** What operators did to the job (pause, resume, trigger, backfill, with who; a capped stream, {@link RedisAdmin#actions}). */
    String actions(String job) {
        return base(job) + "actions";
    }

    /** The judgement of the job's expectations (expect.lua). */
    String expectState(String job) {
        return base(job) + "expect";
    }

    /** What became of each slot of the job not judged yet (expect.lua). */
    String expectFates(String job) {
        return base(job) + "expect:fates";
    }

    /** The job's verdicts not delivered yet (expect.lua). */
    String expectOutbox(String job) {
        return base(job) + "expect:outbox";
    }

    /** A job's pause; an every-worker job's instance is paused with its job ({@code lockstep pause JOB}). */
    String paused(String job) {
        return base(io.lockstep.scheduler.RunOn.jobOf(job)) + "paused";
    }

    String workers() {
        return prefix + ":{workers}:info";
    }

    String seen() {
        return prefix + ":{workers}:seen";
    }

    /** When each job was last in force, and the cluster alive (hash, {@code inforce.lua}). */
    String inForce() {
        return prefix + ":{workers}:inforce";
    }

    /** Layout 1 named it {@code triggers}: a layout 1 worker must not see layout 2's manual runs (it would run them, paused or not). */
    String triggers() {
        return prefix + ":{workers}:manual";
    }

    /** Redlock: this master's deployment marker ({@code marker.lua}). */
    String deployment() {
        return prefix + ":{workers}:deployment";
    }

    /** Redlock: the latest operator command (pause, resume) each job was given on this master ({@code operator.lua}). */
    String operator() {
        return prefix + ":{workers}:commands"; // layout 1's was 'operator': its workers must not repair layout 2's pauses
    }

    /** Drain requests ({@code lockstep drain}): worker id to how long its running jobs may take (ms); read by heartbeat.lua. */
    String drains() {
        return prefix + ":{workers}:drain";
    }

    /**
     * The backfills ({@code lockstep backfill}): job to the request (JSON), and {@code <job>:progress}
     * to its driver's progress (JSON); read by heartbeat.lua; ttl 7 days, refreshed by each write.
     */
    String backfills() {
        return prefix + ":{workers}:backfills";
    }

    String config(String hash) {
        return prefix + ":{workers}:config:" + hash;
    }
}
