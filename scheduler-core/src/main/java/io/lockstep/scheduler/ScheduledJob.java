package io.lockstep.scheduler;

/** A job definition with the one instance that runs it on this worker. Immutable. */
record ScheduledJob(JobDefinition definition, Job job) {

    String name() {
        return definition.name();
    }
}
