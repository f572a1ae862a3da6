package io.lockstep.scheduler;

import java.time.Instant;
import java.util.Optional;

/** Asks a job's calendars about one of its slots, reporting a calendar that fails ({@code calendar_failed}). */
final class SlotCalendars {

    private SlotCalendars() {}

    /** Why the job's calendars exclude {@code slot}, if they do. */
    static Optional<String> exclusion(ScheduledJob job, Instant slot, Events events) {
        JobDefinition d = job.definition();
        if (!d.calendars().any()) {
            return Optional.empty();
        }
        return d.calendars().excludes(slot, (calendar, e) -> events.error("calendar_failed").addKeyValue("job", d.name())
                .addKeyValue("slot", slot.toString()).addKeyValue("calendar", calendar.name()).addKeyValue("error", Events.describe(e))
                .log("a calendar failed; the slot is decided as if it did not exclude it"));
    }
}
