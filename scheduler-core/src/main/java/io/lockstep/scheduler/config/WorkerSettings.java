package io.lockstep.scheduler.config;

import io.lockstep.scheduler.Scheduler;
import java.time.Duration;
import java.util.Objects;

/**
 * The {@code worker} section.
 *
 * @param id this worker's id in every event; empty means {@code <hostname>-<pid>}
 * @param threads how many jobs this worker runs at once
 * @param shutdownTimeout how long a stopping worker lets running jobs finish before it interrupts them
 */
public record WorkerSettings(String id, int threads, Duration shutdownTimeout) {

    public static final int DEFAULT_THREADS = Scheduler.DEFAULT_THREADS;
    public static final Duration DEFAULT_SHUTDOWN_TIMEOUT = Scheduler.DEFAULT_SHUTDOWN_TIMEOUT;

    public WorkerSettings {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(shutdownTimeout, "shutdownTimeout");
    }

    /** Every setting at its default. */
    public static WorkerSettings defaults() {
        return new WorkerSettings("", DEFAULT_THREADS, DEFAULT_SHUTDOWN_TIMEOUT);
    }
}
