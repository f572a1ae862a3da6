package io.lockstep.scheduler.config;

import io.lockstep.scheduler.JobDefinition;
import java.util.List;
import java.util.Objects;

/**
 * A whole configuration file, loaded and checked by {@link ConfigLoader}. Immutable.
 *
 * @param source the file it came from, as given
 * @param redis the {@code redis} section
 * @param worker the {@code worker} section
 * @param jobs every job, enabled or not, in file order
 * @param historyKeep how many runs each job's history keeps ({@code history.keep})
 * @param alerts where the verdicts of the jobs' expectations go ({@code alerts})
 */
public record LockstepConfig(String source, RedisSettings redis, WorkerSettings worker, List<JobDefinition> jobs, int historyKeep,
        io.lockstep.scheduler.Alerts alerts) {

    public static final int DEFAULT_HISTORY_KEEP = 100;

    public LockstepConfig {
        Objects.requireNonNull(source, "source");
        Objects.requireNonNull(redis, "redis");
        Objects.requireNonNull(worker, "worker");
        jobs = List.copyOf(jobs);
        Objects.requireNonNull(alerts, "alerts");
    }

    /** A configuration without alerts. */
    public LockstepConfig(String source, RedisSettings redis, WorkerSettings worker, List<JobDefinition> jobs, int historyKeep) {
        this(source, redis, worker, jobs, historyKeep, io.lockstep.scheduler.Alerts.NONE);
    }
}
