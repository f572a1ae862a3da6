package io.lockstep.scheduler.lock;

import java.util.Objects;

/**
 * A run's end, to be written into its slot record: the lease it held and how it ended.
 *
 * @param lease the run's lease
 * @param outcome how the run ended
 */
public record Completion(Lease lease, Outcome outcome) {

    public Completion {
        Objects.requireNonNull(lease, "lease");
        Objects.requireNonNull(outcome, "outcome");
    }
}
