package io.lockstep.scheduler;

import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;
import org.slf4j.spi.LoggingEventBuilder;

/**
 * Writes the audit trail: one SLF4J event per step, with the fields of DESIGN.md as key-value
 * pairs ({@code event} and {@code worker} always), so any SLF4J 2 backend sees the same fields.
 * The logger is {@value #LOGGER} ({@value #CLAIMS_LOGGER} for the claim race's detail). It also carries the {@link SchedulerMetrics}, so that a stage
 * that reports a step counts it in the same place. Thread-safe.
 */
final class Events {

    static final String LOGGER = "io.lockstep.events";
    private static final Logger LOG = LoggerFactory.getLogger(LOGGER);

    /**
     * The logger of how each slot was decided among the workers ({@link #CLAIM_DETAIL}), a child of
     * {@value #LOGGER}: the quiet preset (config/logback.xml with {@code LOCKSTEP_LOG_DETAIL=WARN})
     * sets it to WARN, which keeps INFO to each run's start and outcome and to what went wrong.
     */
    static final String CLAIMS_LOGGER = LOGGER + ".claims";
    private static final Logger CLAIMS = LoggerFactory.getLogger(CLAIMS_LOGGER);

    /** The per-slot events of the claim race, logged on {@value #CLAIMS_LOGGER}. */
    static final Set<String> CLAIM_DETAIL = Set.of("slot_claimed", "slot_contended", "slot_released", "slot_handed_over",
            "slot_stepped_aside", "slot_settled");

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
        return (CLAIM_DETAIL.contains(event) ? CLAIMS : LOG).atLevel(level).addKeyValue("event", event).addKeyValue("worker", workerId);
    }

    /** {@code ExceptionClass: message}, the form of the {@code error} field. */
    static String describe(Throwable t) {
        String message = t.getMessage();
        return t.getClass().getName() + (message == null ? "" : ": " + message.replaceAll("\\s+", " ").trim());
    }
}
