package io.lockstep.scheduler.lock;

import java.time.Duration;
import java.util.Objects;

/**
 * A request to claim one slot.
 *
 * @param lease the lease to create when the claim wins
 * @param workerId the claiming worker, stored in the slot record for operators
 * @param misfireGrace how late (by the store's clock) the slot may still be claimed; later than
 *     this the store records the slot as missed instead
 * @param missOnly do not claim: only record the slot as missed if nobody has claimed it (a worker
 *     that could not find a free thread before the grace ran out)
 */
public record ClaimRequest(Lease lease, String workerId, Duration misfireGrace, boolean missOnly) {

    public ClaimRequest {
        Objects.requireNonNull(lease, "lease");
        Objects.requireNonNull(workerId, "workerId");
        Objects.requireNonNull(misfireGrace, "misfireGrace");
    }

    /** How far beyond its grace a slot record outlives the slot, at the least. */
    public static final Duration RECORD_BEYOND_GRACE = Duration.ofMinutes(2);

    /**
     * How long the slot record lives. It must outlive every moment at which a worker could still
     * try to claim the slot (the grace, plus a paused worker catching up), so that the record, not
     * a time window, decides; and it must not pile up for jobs that fire every second. Renewals keep
     * the record of a long run alive as long as its lease.
     */
    public Duration recordTtl() {
        Duration beyond = lease.ttl().multipliedBy(2);
        return misfireGrace.plus(beyond.compareTo(RECORD_BEYOND_GRACE) > 0 ? beyond : RECORD_BEYOND_GRACE);
    }
}
