package io.lockstep.scheduler;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;
import org.slf4j.spi.LoggingEventBuilder;

/**
 * Writes the audit trail: one SLF4J event per step, with the fields of DESIGN.md as key-value
 * pairs ({@code event} and {@code worker} always), so any SLF4J 2 backend sees the same fields.
 * The logger is {@value #LOGGER}. It also carries the {@link SchedulerMetrics}, so that a stage
 * that reports a step counts it in the same place. Thread-safe.
 */
final class Events {

    static final String LOGGER = "io.lockstep.events";
    private static final Logger LOG = LoggerFactory.getLogger(LOGGER);

    private final String workerId;
    private final SchedulerMetrics metrics;

    Events(String workerId) {
        this(workerId, SchedulerMetrics.none());
    }

    /** Events whose steps are also counted in {@code metrics} (every stage reports both through here). */
    Events(String workerId, SchedulerMetrics metrics) {
        this.workerId = workerId;
        this.metrics = metrics;
    }

    SchedulerMetrics metrics() {
        return metrics;
    }

    LoggingEventBuilder info(String event) {
        return at(Level.INFO, event);
    }

    LoggingEventBuilder warn(String event) {
        return at(Level.WARN, event);
    }

    LoggingEventBuilder error(String event) {
        return at(Level.ERROR, event);
    }

    LoggingEventBuilder debug(String event) {
        return at(Level.DEBUG, event);
    }

    LoggingEventBuilder at(Level level, String event) {
        return LOG.atLevel(level).addKeyValue("event", event).addKeyValue("worker", workerId);
    }

    /** {@code ExceptionClass: message}, the form of the {@code error} field. */
    static String describe(Throwable t) {
        String message = t.getMessage();
        return t.getClass().getName() + (message == null ? "" : ": " + message.replaceAll("\\s+", " ").trim());
    }
}
