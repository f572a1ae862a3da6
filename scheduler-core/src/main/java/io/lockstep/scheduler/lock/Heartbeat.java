package io.lockstep.scheduler.lock;

import java.time.Instant;
import java.util.List;

/**
 * What a heartbeat answers: the live workers, and the manual runs requested ({@code trigger}) that
 * are still pending.
 *
 * @param workers every live worker, the caller included
 * @param triggers manual runs requested within the last minute, whether decided or not (the claim decides)
 * @param serverTimeMillis the store's clock when it wrote the heartbeat, when that is the clock the
 *     claims are decided by (0 otherwise: on Redis Cluster a job's claims follow its own master)
 * @param configPublished whether the store still has the config this worker published (false after
 *     the store lost it: the worker publishes it again)
 * @param drainWithin an operator asked this worker to drain ({@code lockstep drain}): stop claiming,
 *     let its runs end within this long, then stop; null when nobody did. Answered once per request.
 * @param backfills the backfills the store keeps, one per job at most, with their progress, running,
 *     ended or cancelled ({@link Backfill.Entry}); a worker drives one only while it {@link Backfill.Entry#running}
 */
public record Heartbeat(List<WorkerInfo> workers, List<Trigger> triggers, long serverTimeMillis, boolean configPublished,
        java.time.Duration drainWithin, List<Backfill.Entry> backfills) {

    public Heartbeat {
        workers = List.copyOf(workers);
        triggers = List.copyOf(triggers);
        backfills = List.copyOf(backfills);
    }

    /** A heartbeat that carries no backfill. */
    public Heartbeat(List<WorkerInfo> workers, List<Trigger> triggers, long serverTimeMillis, boolean configPublished,
            java.time.Duration drainWithin) {
        this(workers, triggers, serverTimeMillis, configPublished, drainWithin, List.of());
    }

    /** A heartbeat that asks no drain. */
    public Heartbeat(List<WorkerInfo> workers, List<Trigger> triggers, long serverTimeMillis, boolean configPublished) {
        this(workers, triggers, serverTimeMillis, configPublished, null);
    }

    /** A heartbeat that carries no clock reading, from a store that keeps what was published. */
    public Heartbeat(List<WorkerInfo> workers, List<Trigger> triggers) {
        this(workers, triggers, 0, true);
    }

    /**
     * A manual run of {@code job} requested at {@code slot} (the store's clock; never on a whole second,
     * so it cannot be one of the job's scheduled slots).
     */
    public record Trigger(String job, Instant slot) {}
}
