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
}
