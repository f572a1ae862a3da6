package io.lockstep.scheduler;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.LoggerFactory;
import org.slf4j.event.KeyValuePair;

/**
 * Captures the events of {@link Events#LOGGER} in this JVM, as field maps, for assertions. Public:
 * the store modules' tests use it from scheduler-core's test-jar.
 */
public final class CapturedEvents implements AutoCloseable {

    private final Logger logger = (Logger) LoggerFactory.getLogger(Events.LOGGER);
    /** When each event was appended (monotonic nanos, on the logging thread), by its index in {@code appender.list}. */
    private final List<Long> appendedNanos = new java.util.ArrayList<>();
    private final ListAppender<ILoggingEvent> appender = new ListAppender<>() {
        @Override
        protected void append(ILoggingEvent e) {
            super.append(e); // called under the appender's lock, as all() reads
            appendedNanos.add(System.nanoTime());
        }
    };

    public CapturedEvents() {
        appender.start();
        logger.addAppender(appender);
        logger.setLevel(ch.qos.logback.classic.Level.DEBUG);
    }

    /** Every captured event, oldest first, as its key-value fields plus {@code level}. */
    public List<Map<String, Object>> all() {
        synchronized (appender) {
            return appender.list.stream().map(CapturedEvents::fields).toList();
        }
    }

    /** The events named {@code event}, oldest first. */
    public List<Map<String, Object>> named(String event) {
        return all().stream().filter(e -> event.equals(e.get("event"))).toList();
    }

    /** The events named {@code event} of {@code job}, oldest first. */
    public List<Map<String, Object>> named(String event, String job) {
        return named(event).stream().filter(e -> job.equals(e.get("job"))).toList();
    }

    /**
     * When each event of this name was logged, in {@link System#nanoTime()} taken on the logging
     * thread just after it was appended (so after everything the code did before logging it), oldest first.
     */
    List<Long> nanosOf(String event) {
        synchronized (appender) {
            List<Long> nanos = new java.util.ArrayList<>();
            for (int i = 0; i < appender.list.size(); i++) {
                if (event.equals(fields(appender.list.get(i)).get("event"))) {
                    nanos.add(appendedNanos.get(i));
                }
            }
            return nanos;
        }
    }

    /**
     * How many times each slot was handled, by {@link SlotCoverage#key job@slot}: started (first
     * attempts only; a retry within the claim is the same start), or reported missed or skipped. A
     * slot handled once has 1; a duplicate start or report shows as more.
     */
    Map<String, Long> handledPerSlot() {
        Map<String, Long> counts = new HashMap<>();
        for (Map<String, Object> e : all()) {
            Object name = e.get("event");
            boolean firstStart = "job_started".equals(name) && attemptOf(e) <= 1;
            if (firstStart || "slot_missed".equals(name) || "slot_skipped".equals(name)) {
                counts.merge(SlotCoverage.key((String) e.get("job"), e.get("slot")), 1L, Long::sum);
            }
        }
        return counts;
    }

    private static int attemptOf(Map<String, Object> e) {
        return e.get("attempt") instanceof Number n ? n.intValue() : 1;
    }

    private static Map<String, Object> fields(ILoggingEvent e) {
        Map<String, Object> map = new HashMap<>();
        if (e.getKeyValuePairs() != null) {
            for (KeyValuePair kv : e.getKeyValuePairs()) {
                map.put(kv.key, kv.value);
            }
        }
        map.put("level", e.getLevel().toString());
        map.put("logger", e.getLoggerName());
        return map;
    }

    @Override
    public void close() {
        logger.detachAppender(appender);
        logger.setLevel(null);
    }
}
