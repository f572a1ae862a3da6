package io.lockstep.scheduler.lock;

import java.time.Duration;
import java.util.Objects;

/**
 * A run claimed ahead, asked to start at its slot ({@link LockProvider#start}).
 *
 * <p>A claim made ahead ({@link ClaimRequest#ahead} &gt; 0) is staged: the store records it as
 * claimed but not started, under a short lease that lives until the slot plus
 * {@link ClaimRequest#STAGED_MARGIN}. Just before the slot its worker asks to start it; only then
 * does the store record the run as started and the lease become the job's full ttl. A staged claim
 * whose worker died or stalled before that is therefore known never to have started, and a peer
 * runs it within the slot's grace whatever the job's recover policy.
 *
 * @param lease the staged claim's lease, with the job's full ttl (the lease once started)
 * @param misfireGrace how late (by the store's clock) the run may still start; later, the store
 *     records the slot as missed ({@link StartAnswer#LATE})
 */
public record StartRequest(Lease lease, Duration misfireGrace) {
    public StartRequest {
        Objects.requireNonNull(lease, "lease");
        Objects.requireNonNull(misfireGrace, "misfireGrace");
    }
}
