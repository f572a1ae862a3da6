package io.lockstep.scheduler;

import java.time.Instant;
import java.util.Map;

/**
 * What a running {@link Job} knows about the slot it runs: which slot, under which fencing token,
 * on which worker, with which parameters, and whether it still holds the lease.
 *
 * <p>Instances are created per run and are safe to read from any thread.
 */
public interface JobContext {

    /** The job's name as written in the configuration. */
    String jobName();

    /** The scheduled time of the slot this run belongs to (not the time it started). */
    Instant scheduledTime();

    /**
     * The fencing token of this run's claim: strictly increasing per job across the cluster. Pass it
     * to every resource the job writes so that a late writer with an older token can be refused.
     */
    long fencingToken();

    /** The id of the worker running this slot. */
    String workerId();

    /** The attempt number within this slot, starting at 1. */
    int attempt();

    /** The job's {@code params} from the YAML, as read (maps, lists, strings, numbers, booleans). */
    Map<String, Object> params();

    /**
     * The job's {@code params} bound to a type (a record or bean) with Jackson.
     *
     * @throws LockstepException when the parameters do not fit the type
     */
    <T> T params(Class<T> type);

    /** Whether the lease on this slot has been lost (renewal refused or its deadline passed). */
    boolean isLeaseLost();

    /**
     * Throws when the lease on this slot is gone; call it between steps of a long job.
     *
     * @throws LeaseLostException when {@link #isLeaseLost()} is true
     */
    void checkLease();

    /**
     * Saves how far this run got ({@code value}, in the job's own encoding: a step number, an offset,
     * JSON; at most 64 KiB), with the slot's record in the lock store, so that a rerun of the slot
     * (its worker killed, stalled past its lease, or handed the run over at shutdown under
     * {@code recover: rerun}) resumes from it: {@link #lastCheckpoint()}. Fenced by the run's claim:
     * a run that lost its slot saves nothing. One round trip to the store.
     *
     * @throws LeaseLostException when this run no longer holds its slot (nothing was saved)
     * @throws LockstepException when the store cannot be reached or keeps no checkpoints
     */
    default void checkpoint(String value) {
        throw new UnsupportedOperationException("checkpoints are kept by the scheduler's runs");
    }

    /**
     * The checkpoint saved last for this slot, by this run or an earlier run of it (a rerun); empty
     * for a first run that saved none. Read from the store at the first call of a run, then kept.
     *
     * @throws LockstepException when the store cannot be reached or keeps no checkpoints
     */
    default java.util.Optional<String> lastCheckpoint() {
        throw new UnsupportedOperationException("checkpoints are kept by the scheduler's runs");
    }

    /**
     * The fencing token of the permit this run holds of the limit {@code limit} ({@code uses:}),
     * strictly increasing per permit of the limit; with {@link #permitOf}, what a resource the limit
     * guards fences by (it keeps the highest token per permit and refuses a lower one).
     *
     * @throws IllegalArgumentException when the job does not use that limit
     */
    default long permitToken(String limit) {
        throw new IllegalArgumentException("this run holds no permit of " + limit);
    }

    /**
     * Which permit (0-based) of the limit {@code limit} this run holds.
     *
     * @throws IllegalArgumentException when the job does not use that limit
     */
    default int permitOf(String limit) {
        throw new IllegalArgumentException("this run holds no permit of " + limit);
    }
}
