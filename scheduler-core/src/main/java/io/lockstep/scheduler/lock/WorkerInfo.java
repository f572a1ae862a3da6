package io.lockstep.scheduler.lock;

import java.time.Instant;
import java.util.Objects;

/**
 * What a worker tells the cluster about itself in each heartbeat, and what {@code status} shows.
 *
 * @param id the worker id, as in every event
 * @param host the host name
 * @param pid the process id
 * @param version the Lockstep version the worker runs
 * @param started when the worker started (the store's clock)
 * @param threads how many job threads it has
 * @param busy how many of them run a job now
 * @param configHash the fingerprint of its job definitions, all jobs together (equal hashes: the same jobs)
 * @param lastSeen when the store last heard from it (the store's clock; set by the store)
 * @param draining whether it is stopping: it claims nothing new, so peers no longer prefer it
 * @param labels its {@code worker.labels}: peers prefer it only for jobs whose labels it has
 *     for slots, though it still runs (and heartbeats) until its runs drained
 */
public record WorkerInfo(String id, String host, long pid, String version, Instant started, int threads, int busy,
        String configHash, Instant lastSeen, boolean draining, java.util.Set<String> labels) {

    /** A worker without labels. */
    public WorkerInfo(String id, String host, long pid, String version, Instant started, int threads, int busy,
            String configHash, Instant lastSeen, boolean draining) {
        this(id, host, pid, version, started, threads, busy, configHash, lastSeen, draining, java.util.Set.of());
    }

    /** A worker that is not draining. */
    public WorkerInfo(String id, String host, long pid, String version, Instant started, int threads, int busy,
            String configHash, Instant lastSeen) {
        this(id, host, pid, version, started, threads, busy, configHash, lastSeen, false);
    }

    /** How often a worker heartbeats. */
    public static final java.time.Duration HEARTBEAT_INTERVAL = java.time.Duration.ofSeconds(3);
    /** A worker not heard from for this long is no longer live. */
    public static final java.time.Duration HEARTBEAT_TTL = java.time.Duration.ofSeconds(10);

    public WorkerInfo {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(version, "version");
        Objects.requireNonNull(started, "started");
        Objects.requireNonNull(configHash, "configHash");
        Objects.requireNonNull(lastSeen, "lastSeen");
        labels = java.util.Set.copyOf(labels);
    }
}
