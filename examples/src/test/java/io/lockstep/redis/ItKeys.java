package io.lockstep.redis;

import java.time.Instant;

/**
 * The Redis keys the worker ITs read, from {@link RedisKeys} itself (whose key methods are
 * package-private, hence this class in its package), so that no IT re-types the layout and a
 * change of it cannot turn an IT's negative check vacuous. Default prefix, standalone Redis.
 * Stateless, thread safe.
 */
public final class ItKeys {

    private static final RedisKeys KEYS = new RedisKeys(RedisLockProvider.DEFAULT_KEY_PREFIX, false);

    private ItKeys() {
    }

    /** The slot record of {@code job} at {@code slot}. */
    public static String slot(String job, Instant slot) {
        return KEYS.slot(job, slot.toEpochMilli());
    }

    /** A SCAN pattern for the slot records of the jobs matching {@code jobGlob}. */
    public static String slotPattern(String jobGlob) {
        return KEYS.slotPattern(jobGlob);
    }

    /** The marks of the job's group (hash: the job's fields are {@link #mark}s). */
    public static String marks(String job) {
        return KEYS.marks(job);
    }

    /** The field of a job's mark {@code name} (decided, started, holder, until, closed) in its group's {@link #marks}. */
    public static String mark(String job, String name) {
        return RedisKeys.markField(job) + name;
    }

    /** job@slot (ISO instant) of a slot record's key. */
    public static String jobAtSlot(String slotKey) {
        String job = slotKey.substring(slotKey.indexOf("}:") + 2, slotKey.lastIndexOf(":slot:"));
        long millis = Long.parseLong(slotKey.substring(slotKey.lastIndexOf(':') + 1));
        if (!slotKey.equals(KEYS.slot(job, millis))) {
            throw new IllegalArgumentException("not a slot record key: " + slotKey);
        }
        return job + "@" + Instant.ofEpochMilli(millis);
    }

    /** The key of a job's marks on a Redis Cluster (with its hash tag): the shard that holds it holds all of the job's keys. */
    public static String clusterMarks(String job) {
        return new RedisKeys(RedisLockProvider.DEFAULT_KEY_PREFIX, true).marks(job);
    }
}
