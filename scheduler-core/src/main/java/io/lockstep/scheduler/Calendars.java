package io.lockstep.scheduler;

import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * The calendars a job's slots are checked against: a slot that any {@code skipOn} calendar contains,
 * or that some {@code onlyOn} calendar does not, is excluded (skipped, reason {@code calendar}).
 * Several {@code onlyOn} calendars must all contain a slot for it to run ("business days" and
 * "office hours"). Immutable.
 */
public record Calendars(List<JobCalendar> skipOn, List<JobCalendar> onlyOn) {

    /** No calendar: every slot runs. */
    public static final Calendars NONE = new Calendars(List.of(), List.of());

    public Calendars {
        skipOn = List.copyOf(skipOn);
        onlyOn = List.copyOf(onlyOn);
    }

    /** Whether the job has any calendar. */
    public boolean any() {
        return !skipOn.isEmpty() || !onlyOn.isEmpty();
    }

    /**
     * Why {@code slot} is excluded ({@code "skipOn holidays"}, {@code "onlyOn business-days"}), or
     * empty when it runs. A calendar that throws excludes nothing and is named in {@code failure},
     * so that one bad application calendar cannot stop a job silently nor run it against its rule
     * without a word.
     */
    public Optional<String> excludes(Instant slot, java.util.function.BiConsumer<JobCalendar, Throwable> failure) {
        for (JobCalendar c : skipOn) {
            if (ask(c, slot, false, failure)) {
                return Optional.of("skipOn " + c.name());
            }
        }
        for (JobCalendar c : onlyOn) {
            if (!ask(c, slot, true, failure)) {
                return Optional.of("onlyOn " + c.name());
            }
        }
        return Optional.empty();
    }

    private static boolean ask(JobCalendar c, Instant slot, boolean otherwise, java.util.function.BiConsumer<JobCalendar, Throwable> failure) {
        try {
            return c.contains(slot);
        } catch (RuntimeException | LinkageError | AssertionError e) { // an application's code: a class it lacks too
            failure.accept(c, e);
            return otherwise; // as if the calendar did not exclude it
        }
    }
}
