package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.ClaimRequest;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * What a worker does at start with the slots of a job that passed since the cluster last decided
 * one: those still within their grace are claimed as usual; older ones, within the catch-up window,
 * passed while no worker was running and are caught up or reported missed by the job's
 * {@link CatchUp} policy. Stateless.
 */
final class CatchUpPlan {

    /** At most this many missed slots per job are caught up or reported at start. */
    static final int MAX_CATCH_UP_SLOTS = 10_000;

    private CatchUpPlan() {}

    /**
     * The slots of a job after {@code last} (the latest slot the cluster decided) up to {@code now}.
     */
    static List<DueSlot> slotsSince(ScheduledJob job, Instant last, Instant now) {
        JobDefinition d = job.definition();
        Instant windowStart = now.minus(d.catchUpWindow());
        Instant from = last.isAfter(windowStart) ? last : windowStart;
        List<DueSlot> recent = new ArrayList<>();
        List<Instant> missed = new ArrayList<>();
        Optional<Instant> slot = d.schedule().next(from);
        while (slot.isPresent() && !slot.get().isAfter(now) && missed.size() < MAX_CATCH_UP_SLOTS) {
            if (now.isAfter(slot.get().plus(d.misfireGrace()))) {
                missed.add(slot.get());
            } else {
                DueSlot due = new DueSlot(job, slot.get());
                due.followerQueued = true; // the regular chain starts at next(now)
                recent.add(due);
            }
            slot = d.schedule().next(slot.get());
        }
        List<DueSlot> result = new ArrayList<>(recent);
        DueSlot previous = null;
        for (int i = 0; i < missed.size(); i++) {
            boolean run = d.catchUp() == CatchUp.ALL || (d.catchUp() == CatchUp.LATEST && i == missed.size() - 1);
            DueSlot due = new DueSlot(job, missed.get(i), run ? ClaimRequest.Mode.CATCH_UP : ClaimRequest.Mode.MISS_ONLY);
            due.retryAt = now;
            due.followerQueued = true;
            if (!run) {
                due.missReason = d.catchUp() == CatchUp.LATEST
                        ? "no worker was running; catchUp: latest runs only the latest missed slot"
                        : "no worker was running (catchUp: none)";
                result.add(due);
            } else if (d.catchUp() == CatchUp.ALL && previous != null) {
                previous.next = due; // oldest first: each waits for the one before it to be decided
            } else {
                result.add(due);
            }
            if (run) {
                previous = due;
            }
        }
        return result;
    }
}
