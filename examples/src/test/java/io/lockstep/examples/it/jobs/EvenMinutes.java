package io.lockstep.examples.it.jobs;

import io.lockstep.scheduler.JobCalendar;
import java.time.Instant;

/**
 * An application's calendar, registered with ServiceLoader in the ITs' class path: the even minutes
 * of every hour. The fault campaign's {@code vocab} job skips on it, so half of its slots are
 * recorded skipped (reason calendar) under the campaign's faults, and {@code audit}'s calendar check
 * judges each of them.
 */
public final class EvenMinutes implements JobCalendar {

    @Override
    public String name() {
        return "even-minutes";
    }

    @Override
    public boolean contains(Instant instant) {
        return (instant.getEpochSecond() / 60) % 2 == 0;
    }
}
