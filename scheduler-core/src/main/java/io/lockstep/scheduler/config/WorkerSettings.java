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
 * @param httpPort the port of the worker's HTTP endpoints ({@code worker.http.port}); 0 = none
 * @param httpBind the address they listen on ({@code worker.http.bind}); loopback by default
 * @param watch {@code worker.reload: watch}: the worker reloads its config file when it changes (it
 *     always does on SIGHUP; {@code worker.reload: signal}, the default, is SIGHUP only)
 * @param labels {@code worker.labels}: what this worker offers to jobs with {@code runOn: {labels: [...]}}
 * @param httpUsers {@code worker.http.auth.users}: who may read the HTTP endpoints (and act, for
 *     operators) and how they prove it; empty: no authentication, and the page is read-only
 */
public record WorkerSettings(String id, int threads, Duration shutdownTimeout, int httpPort, String httpBind, boolean watch,
        java.util.Set<String> labels, java.util.List<HttpUser> httpUsers) {

    public static final String DEFAULT_HTTP_BIND = "127.0.0.1";

    public static final int DEFAULT_THREADS = Scheduler.DEFAULT_THREADS;
    public static final Duration DEFAULT_SHUTDOWN_TIMEOUT = Scheduler.DEFAULT_SHUTDOWN_TIMEOUT;

    public WorkerSettings {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(shutdownTimeout, "shutdownTimeout");
        Objects.requireNonNull(httpBind, "httpBind");
        labels = java.util.Set.copyOf(labels);
        httpUsers = java.util.List.copyOf(httpUsers);
    }

    /** Without authentication on the HTTP endpoints. */
    public WorkerSettings(String id, int threads, Duration shutdownTimeout, int httpPort, String httpBind, boolean watch,
            java.util.Set<String> labels) {
        this(id, threads, shutdownTimeout, httpPort, httpBind, watch, labels, java.util.List.of());
    }

    /** Without labels. */
    public WorkerSettings(String id, int threads, Duration shutdownTimeout, int httpPort, String httpBind, boolean watch) {
        this(id, threads, shutdownTimeout, httpPort, httpBind, watch, java.util.Set.of());
    }

    /** The same settings with {@code more} labels (the command line's {@code --label}). */
    public WorkerSettings withLabels(java.util.Collection<String> more) {
        java.util.Set<String> all = new java.util.TreeSet<>(labels);
        all.addAll(more);
        return new WorkerSettings(id, threads, shutdownTimeout, httpPort, httpBind, watch, all, httpUsers);
    }

    /** Without HTTP endpoints. */
    public WorkerSettings(String id, int threads, Duration shutdownTimeout) {
        this(id, threads, shutdownTimeout, 0, DEFAULT_HTTP_BIND, false);
    }

    /** Every setting at its default. */
    public static WorkerSettings defaults() {
        return new WorkerSettings("", DEFAULT_THREADS, DEFAULT_SHUTDOWN_TIMEOUT);
    }
}
