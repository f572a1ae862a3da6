package io.lockstep.scheduler.lock;

import java.util.Objects;

/**
 * A run's end, to be written into its slot record and appended to the job's run history: the lease
 * it held, how it ended, and what the history shows of it.
 *
 * @param lease the run's lease
 * @param outcome how the run ended
 * @param attempt the attempts made (1 when the first succeeded)
 * @param durationMs from the first attempt's start to the end of the last; 0 if the job never started
 * @param error the last attempt's failure ({@code ExceptionClass: message}), or empty
 * @param handOver leave the slot to a peer instead of closing it: the run lost its lease or was cut
 *     off by its worker's stop, and the job says {@code recover: rerun} (see
 *     {@link LockProvider#complete}); always so for {@link Outcome#NOT_STARTED}
 * @param fencingToken the token the run had, for its history entry (0: the one its slot record
 *     holds; on Redlock a master that missed the token's raise holds its own, lower one)
 */
public record Completion(Lease lease, Outcome outcome, int attempt, long durationMs, String error, boolean handOver, long fencingToken) {
    public Completion {
        Objects.requireNonNull(lease, "lease");
        Objects.requireNonNull(outcome, "outcome");
        Objects.requireNonNull(error, "error");
    }

    /** A completion whose history entry carries the token its slot record holds. */
    public Completion(Lease lease, Outcome outcome, int attempt, long durationMs, String error, boolean handOver) {
        this(lease, outcome, attempt, durationMs, error, handOver, 0);
    }

    /** A completion that closes the slot (a hand-over only when the run never started). */
    public Completion(Lease lease, Outcome outcome, int attempt, long durationMs, String error) {
        this(lease, outcome, attempt, durationMs, error, false);
    }

    /** A completion with no history details (one attempt, no duration, no error). */
    public Completion(Lease lease, Outcome outcome) {
        this(lease, outcome, 1, 0, "");
    }

    /** What the store does with the slot: {@code ""} close it, {@code "rerun"} or {@code "unstarted"} hand it over. */
    public String handOverMode() {
        return outcome == Outcome.NOT_STARTED ? "unstarted" : handOver ? "rerun" : "";
    }
}
