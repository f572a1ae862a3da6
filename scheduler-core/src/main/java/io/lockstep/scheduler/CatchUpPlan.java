package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.InForce;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Optional;

/**
 * What a worker does at start with the slots of a job that passed since the cluster last decided
 * one: those still within their grace are claimed as usual; older ones, within the catch-up window,
 * passed while no worker was running and are caught up or reported missed by the job's
 * {@link CatchUp} policy. At most {@link #MAX_CATCH_UP_SLOTS} of them, the newest; the older ones
 * are counted and reported in one event. Slots that passed while the cluster ran without the job
 * (disabled or removed, then re-enabled by this restart: {@link InForce}) are not owed: neither run
 * nor reported missed, only counted, as a reload that re-enables a job does not catch them up either.
 * Immutable.
 *
 * @param slots the slots to claim, catch up or report, oldest first ({@code catchUp: all} chains
 *     its runs: each waits for the one before it to be decided)
 * @param dropped how many missed slots, older than those kept, are only counted
 * @param droppedFrom the oldest of them (null when none)
 * @param droppedTo the newest of them (null when none)
 * @param notOwed how many slots passed while the job was out of force, and are not owed
 * @param notOwedFrom the oldest of them (null when none)
 * @param notOwedTo the newest of them (null when none)
 */
record CatchUpPlan(List<DueSlot> slots, long dropped, Instant droppedFrom, Instant droppedTo, long notOwed,
        Instant notOwedFrom, Instant notOwedTo) {

    /** At most this many missed slots per job are caught up or reported one by one at start. */
    static final int MAX_CATCH_UP_SLOTS = 10_000;

    /**
     * The slots of a job after {@code last} (the latest slot the cluster decided) up to {@code now}.
     */
    static CatchUpPlan since(ScheduledJob job, Instant last, Instant now) {
        return since(job, last, null, now, MAX_CATCH_UP_SLOTS);
    }

    /**
     * The same, leaving out the slots that passed while the job was out of force ({@code inForce};
     * null when the store kept no stamp of the job).
     */
    static CatchUpPlan since(ScheduledJob job, Instant last, InForce inForce, Instant now) {
        return since(job, last, inForce, now, MAX_CATCH_UP_SLOTS);
    }

    static CatchUpPlan since(ScheduledJob job, Instant last, InForce inForce, Instant now, int max) {
        return since(job, last, inForce, now, max, null);
    }

    /**
     * The same; a slot the job's calendars exclude is recorded skipped (reason calendar), neither
     * caught up nor counted missed; a calendar that fails is reported to {@code events} (when given).
     */
    static CatchUpPlan since(ScheduledJob job, Instant last, InForce inForce, Instant now, int max, Events events) {
        JobDefinition d = job.definition();
        Instant windowStart = now.minus(d.catchUpWindow());
        Instant from = last.isAfter(windowStart) ? last : windowStart;
        List<DueSlot> recent = new ArrayList<>();
        Deque<Instant> missed = new ArrayDeque<>();
        long dropped = 0;
        Instant droppedFrom = null;
        Instant droppedTo = null;
        long notOwed = 0;
        Instant notOwedFrom = null;
        Instant notOwedTo = null;
        Optional<Instant> slot = d.schedule().next(from);
        Deque<DueSlot> excluded = new ArrayDeque<>();
        long excludedUnrecorded = 0;
        while (slot.isPresent() && !slot.get().isAfter(now)) {
            Instant at = slot.get();
            Optional<String> why = events != null ? SlotCalendars.exclusion(job, at, events) : d.calendars().excludes(at, (c, e) -> { });
            if (why.isPresent() && !(inForce != null && inForce.outOfForce(at))) {
                excluded.addLast(DueSlot.excluded(job, at, why.get(), now));
                if (excluded.size() > max) {
                    excluded.removeFirst(); // keep the newest, as for the missed ones
                    excludedUnrecorded++;
                }
            } else if (inForce != null && inForce.outOfForce(slot.get())) {
                notOwed++;
                notOwedFrom = notOwedFrom == null ? slot.get() : notOwedFrom;
                notOwedTo = slot.get();
            } else if (now.isAfter(slot.get().plus(d.misfireGrace()))) {
                missed.addLast(slot.get());
                if (missed.size() > max) {
                    droppedTo = missed.removeFirst(); // keep the newest
                    droppedFrom = droppedFrom == null ? droppedTo : droppedFrom;
                    dropped++;
                }
            } else {
                recent.add(DueSlot.claim(job, slot.get())); // the regular chain starts at next(now)
            }
            slot = d.schedule().next(slot.get());
        }
        List<DueSlot> result = new ArrayList<>();
        DueSlot previous = null;
        int i = 0;
        for (Instant m : missed) {
            boolean run = d.catchUp() == CatchUp.ALL || (d.catchUp() == CatchUp.LATEST && i == missed.size() - 1);
            i++;
            if (!run) {
                result.add(DueSlot.missed(job, m, d.catchUp() == CatchUp.LATEST
                        ? "no worker was running; catchUp: latest runs only the latest missed slot"
                        : "no worker was running (catchUp: none)", "cluster_down", now));
                continue;
            }
            DueSlot due = DueSlot.catchUp(job, m, now.plus(ClaimRequest.recordTtl(d.lease(), d.misfireGrace())), now);
            if (previous != null) {
                previous.then(due); // oldest first: each waits for the one before it to be decided
            } else {
                result.add(due);
            }
            previous = due;
        }
        // A calendar's skip moves the job's 'decided' mark like any decision: one newer than a slot still to catch up
        // would make that slot's claim stale. Those are left unrecorded (they passed while no worker ran, and are not
        // run): only the ones older than the first slot caught up are recorded skipped.
        Instant firstCaughtUp = result.stream().filter(x -> x.kind() == DueSlot.Kind.CATCH_UP).map(x -> x.slot).min(Instant::compareTo)
                .orElse(null);
        for (DueSlot x : excluded) {
            if (firstCaughtUp == null || x.slot.isBefore(firstCaughtUp)) {
                result.add(x);
            } else {
                excludedUnrecorded++;
            }
        }
        if (excludedUnrecorded > 0 && events != null) {
            events.info("slots_skipped").addKeyValue("job", d.name()).addKeyValue("count", excludedUnrecorded).addKeyValue("code", DueSlot.CALENDAR)
                    .addKeyValue("reason", "its calendars exclude them; they passed while no worker ran and are neither run nor recorded one by one")
                    .log("slots excluded by the job's calendars, not caught up");
        }
        result.addAll(recent);
        return new CatchUpPlan(List.copyOf(result), dropped, droppedFrom, droppedTo, notOwed, notOwedFrom, notOwedTo);
    }

    /** Whether the plan holds a slot to catch up (run), so that the job's newer slots wait for it. */
    boolean catchesUp() {
        return slots.stream().anyMatch(s -> s.kind() == DueSlot.Kind.CATCH_UP);
    }
}
