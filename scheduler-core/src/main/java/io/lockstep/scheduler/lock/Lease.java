package io.lockstep.scheduler.lock;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;

/**
 * One claim on one slot of one job, as the lock store knows it: the handle to renew and complete.
 *
 * @param job the job name
 * @param slot the slot's scheduled time
 * @param token the random owner token of this claim (128 bits, hex); only its holder may renew or
 *     complete it
 * @param ttl how long the lease lives without renewal
 * @param exclusive whether the lease is one per job ({@code overlap: skip}: a slot is skipped while
 *     any run of the job holds its lease) or one per slot ({@code overlap: allow})
 */
public record Lease(String job, Instant slot, String token, Duration ttl, boolean exclusive) {

    public Lease {
        Objects.requireNonNull(job, "job");
        Objects.requireNonNull(slot, "slot");
        Objects.requireNonNull(token, "token");
        Objects.requireNonNull(ttl, "ttl");
        if (ttl.toMillis() < 1) {
            throw new IllegalArgumentException("lease ttl must be at least 1ms, but was " + ttl);
        }
    }
}
