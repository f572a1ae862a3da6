package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.Outcome;
import org.slf4j.spi.LoggingEventBuilder;

/**
 * The trace of one run ({@link RunTracer}): one span from the first attempt's start to the run's
 * outcome. {@link #NONE} when tracing is off. Thread-safe: the job thread starts and ends it, the
 * watchdog adds the lease-loss event.
 */
interface RunSpan {

    /** No trace: no ids in the events, nothing recorded. */
    RunSpan NONE = new RunSpan() {
    };

    /**
     * Makes the span the current context on this thread, so the job's own spans (JDBC, HTTP) nest
     * under it; the returned scope is closed on the same thread.
     */
    default Scope enter() {
        return () -> { };
    }

    /** A span made current on a thread, until closed there. */
    interface Scope extends AutoCloseable {
        @Override
        void close();
    }

    /** Adds {@code trace_id} and {@code span_id} to a run's event, when the span has them. */
    default LoggingEventBuilder tag(LoggingEventBuilder event) {
        return event;
    }

    /** The lease was declared lost ({@code lockstep.lease_lost}). */
    default void leaseLost(String reason) {
    }

    /** An attempt failed and the job runs again after {@code delayMillis} ({@code lockstep.retry}). */
    default void retry(int attempt, long delayMillis, Throwable failure) {
    }

    /** The attempt ran past the job's timeout and was interrupted ({@code lockstep.timed_out}). */
    default void timedOut(long timeoutMillis) {
    }

    /** Ends the span with the run's outcome, after {@code attempts} attempts; {@code failure} is the last one's, or null. */
    default void end(Outcome outcome, int attempts, Throwable failure) {
    }
}
