package io.lockstep.scheduler.lock;

import java.time.Instant;
import java.util.List;

/**
 * What a heartbeat answers: the live workers, and the manual runs requested ({@code trigger}) that
 * are still pending.
 *
 * @param workers every live worker, the caller included
 * @param triggers manual runs requested within the last minute, whether decided or not (the claim decides)
 */
public record Heartbeat(List<WorkerInfo> workers, List<Trigger> triggers) {

    public Heartbeat {
        workers = List.copyOf(workers);
        triggers = List.copyOf(triggers);
    }

    /**
     * A manual run of {@code job} requested at {@code slot} (the store's clock; never on a whole second,
     * so it cannot be one of the job's scheduled slots).
     */
    public record Trigger(String job, Instant slot) {}
}
