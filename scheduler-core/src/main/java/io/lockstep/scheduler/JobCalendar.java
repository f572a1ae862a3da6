package io.lockstep.scheduler;

import java.time.Instant;

/**
 * A named set of times (holidays, business days, a freeze window) that jobs refer to by name:
 * {@code skipOn: [holidays]} skips each slot the calendar contains, {@code onlyOn: [business-days]}
 * each slot it does not. A slot so excluded is decided once like any other, recorded
 * {@code skipped} with reason {@code calendar}, and reported ({@code slot_skipped}); it never runs.
 *
 * <p>The config's {@code calendars:} section defines calendars of dates, date ranges and weekly
 * windows. An application can decide from its own data instead: implement this interface and
 * register it with {@code ServiceLoader} ({@code META-INF/services/io.lockstep.scheduler.JobCalendar};
 * a public no-arg constructor) or, with the Spring Boot starter, declare it as a bean. Its
 * {@link #contains} is asked once per slot on every worker as the slot comes due (mostly on the tick
 * thread; at a start or a reload on theirs, concurrently), so it must be thread-safe and quick, and
 * answer the same on every worker for the same instant (read a table into memory, do not call a
 * service per slot): workers that disagree decide the slot by whichever asks the store first.
 * Operator commands and {@code audit} run without the jobs JAR: there its answer is unknown, and
 * audit does not judge a slot by it.
 */
public interface JobCalendar {

    /** The name jobs use in {@code skipOn} and {@code onlyOn}. */
    String name();

    /** Whether {@code instant} (a slot) falls in this calendar. */
    boolean contains(Instant instant);

    /**
     * What the calendar holds, as short text that changes when its contents do: workers publish it
     * with their config so that a rollout that changes it is seen ({@code config_drift}). The name by
     * default.
     */
    default String describe() {
        return name();
    }
}
