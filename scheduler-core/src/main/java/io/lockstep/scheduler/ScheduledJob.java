package io.lockstep.scheduler;

/**
 * A job definition with the one instance that runs it on this worker. Immutable.
 *
 * @param here whether this worker may run it ({@link RunOn}: it has the job's labels); a worker that
 *     may not only reports the slots nobody decided ({@code no_worker})
 */
record ScheduledJob(JobDefinition definition, Job job, boolean here) {

    /** A job this worker may run. */
    ScheduledJob(JobDefinition definition, Job job) {
        this(definition, job, true);
    }

    String name() {
        return definition.name();
    }
}
