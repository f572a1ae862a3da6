package io.lockstep.scheduler.lock;

import java.time.Instant;
import java.util.List;
import java.util.Objects;

/**
 * What the store knows of one job's runs in flight.
 *
 * @param job the job name
 * @param expired slots whose run lost its lease without an outcome (its worker died or was paused):
 *     to be recovered or abandoned
 * @param nextLeaseEndMillis when, by the store's clock, the earliest lease of the other runs ends
 *     unless renewed (epoch ms); 0 when no other run is in flight
 */
public record RunsInFlight(String job, List<Instant> expired, long nextLeaseEndMillis) {

    public RunsInFlight {
        Objects.requireNonNull(job, "job");
        expired = List.copyOf(expired);
    }
}
