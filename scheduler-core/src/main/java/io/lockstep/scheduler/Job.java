package io.lockstep.scheduler;

/**
 * A unit of work that Lockstep runs at the fire times of its cron schedule, once per slot across
 * the whole cluster.
 *
 * <p>A job class has a public no-argument constructor. Lockstep creates one instance per job
 * definition and reuses it for every run of that definition, so an instance may be called again
 * while a previous run is still going (with {@code overlap: allow}); keep per-run state in local
 * variables, not in fields.
 *
 * <p>A long job should look at {@link JobContext#checkLease()} between steps: when the lease is
 * lost another worker may be entitled to the slot, and the thread is interrupted as well.
 */
@FunctionalInterface
public interface Job {

    /**
     * Runs one slot of this job.
     *
     * @param context the slot, its fencing token, parameters and lease state
     * @throws Exception any failure; it is recorded as {@code job_failed} and the schedule goes on
     */
    void execute(JobContext context) throws Exception;

    /**
     * The type this job's {@code params} bind to ({@link JobContext#params(Class)}), or {@code null}
     * (the default) for none. When a job declares one, {@code validate} and {@code run} bind each
     * definition's params before anything starts, so a typo ({@code lable:} for {@code label:}) or a
     * value of the wrong type is a config error with its file and line, not a failure at every slot.
     */
    default Class<?> paramsType() {
        return null;
    }
}
