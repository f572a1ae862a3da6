package io.lockstep.scheduler.lock;

import java.time.Instant;
import java.util.Objects;

/**
 * A slot whose run lost its lease without an outcome: its worker died or was paused past the lease.
 *
 * @param job the job name
 * @param slot the slot's scheduled time
 */
public record StaleRun(String job, Instant slot) {

    public StaleRun {
        Objects.requireNonNull(job, "job");
        Objects.requireNonNull(slot, "slot");
    }
}
