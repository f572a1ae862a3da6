package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.Backfill;
import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.LockProvider;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;

/**
 * A backfill checked against the store before it is asked for ({@code lockstep backfill}, with or
 * without {@code --dry-run}; {@code RedisAdmin.backfill}): the job's slots in the range, which of
 * them were already decided, and which its calendars exclude. Every refusal is one line naming the
 * option at fault:
 * <ul>
 *   <li>{@code --to} before {@code --from}, or in the future by the store's clock;</li>
 *   <li>{@code --from} older than what the store can still tell of the job's slots
 *       ({@link Backfill.View#knownFrom}): a slot before that may have run, and would run again;</li>
 *   <li>no slot in the range, or more than {@link Backfill#MAX_SLOTS};</li>
 *   <li>a job that runs on every worker (each worker's slots are its own: there is no one slot to backfill).</li>
 * </ul>
 * The slots of the last {@code misfireGrace} (and a second) are left to the schedule, which may still
 * claim them: a backfill takes only slots no scheduled claim can start any more, so that from the
 * moment it is asked for, it alone decides its range (see claim.lua's backfill mark).
 *
 * @param job the job
 * @param from the range's first instant, as asked
 * @param to the range's last instant, after leaving the schedule its recent slots
 * @param slots the job's slots in [from, to], oldest first
 * @param decided those of them already decided
 * @param excluded how many of the undecided ones the job's calendars exclude (left alone)
 * @param leftToSchedule how many slots of the asked range were too recent and are left to the schedule
 */
public record BackfillPlan(JobDefinition job, Instant from, Instant to, List<Instant> slots, Set<Instant> decided, int excluded,
        int leftToSchedule) {

    public BackfillPlan {
        slots = List.copyOf(slots);
        decided = Set.copyOf(decided);
    }

    /** How long before the store's clock a slot must be for a backfill to take it: the job's grace and a second. */
    static Duration scheduleKeeps(JobDefinition def) {
        return def.misfireGrace().plusSeconds(1);
    }

    /**
     * Checks a backfill of {@code def} over [{@code from}, {@code to}] against {@code store}.
     *
     * @throws IllegalArgumentException with one line for the operator when it cannot be done
     * @throws UnsupportedOperationException when the store keeps no backfills
     */
    public static BackfillPlan of(JobDefinition def, Instant from, Instant to, LockProvider store) {
        if (def.runOn().everyWorker()) {
            throw new IllegalArgumentException(def.name() + " runs on every worker (runOn: every-worker): each worker's slots are "
                    + "its own, so there is no one slot to backfill");
        }
        if (to.isBefore(from)) {
            throw new IllegalArgumentException("--to " + to + " is before --from " + from);
        }
        Instant now = Instant.ofEpochMilli(store.serverTimeMillis());
        if (to.isAfter(now)) {
            throw new IllegalArgumentException("--to " + to + " is in the future (the store's clock says " + now
                    + "): a backfill runs slots that have passed; the schedule runs the rest");
        }
        List<Instant> asked = def.slots(from, to);
        Instant latest = now.minus(scheduleKeeps(def));
        List<Instant> slots = asked.stream().filter(s -> !s.isAfter(latest)).toList();
        if (slots.isEmpty()) {
            throw new IllegalArgumentException(def.name() + " (" + String.join(" | ", def.schedule().expressions()) + ") has no slot from "
                    + from + " to " + to + (asked.isEmpty() ? "" : " older than its misfireGrace (" + asked.size()
                    + " newer ones are the schedule's to decide)"));
        }
        Backfill.View view = store.backfillView(def.name(), null, slots, ClaimRequest.recordTtl(def.lease(), def.misfireGrace()));
        if (slots.get(0).isBefore(view.knownFrom())) {
            throw new IllegalArgumentException("--from " + from + " is older than what the store can tell of " + def.name()
                    + "'s slots (its records and history reach back to " + view.knownFrom() + "): a slot before that may have run, "
                    + "and would run again; backfill from " + view.knownFrom() + " or later (a longer history.keep reaches further back)");
        }
        int excluded = 0;
        for (Instant s : slots) {
            if (!view.decided().contains(s) && excludedByCalendars(def, s)) {
                excluded++;
            }
        }
        return new BackfillPlan(def, from, slots.get(slots.size() - 1), slots, view.decided(), excluded, asked.size() - slots.size());
    }

    /** Slots it would run: neither decided nor excluded. */
    public int toRun() {
        return slots.size() - decided.size() - excluded;
    }

    /**
     * Asks the store for this backfill; every worker hears of it with its next heartbeat.
     *
     * @throws IllegalStateException when the job has a backfill running
     */
    public Backfill request(LockProvider store, double perSecond, String by) {
        return store.requestBackfill(job.name(), from, to, perSecond, by, decided);
    }

    /** Whether the job's calendars exclude {@code slot}; a calendar that cannot answer here (not loaded) excludes nothing. */
    private static boolean excludedByCalendars(JobDefinition def, Instant slot) {
        try {
            return def.calendars().any() && def.calendars().excludes(slot, (calendar, e) -> {}).isPresent();
        } catch (RuntimeException e) {
            return false;
        }
    }
}
