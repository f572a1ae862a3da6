package io.lockstep.scheduler;

import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Puts a new set of job definitions in force on a running scheduler ({@link Scheduler#update}):
 * <ul>
 *   <li>a job whose definition is unchanged keeps its instance and its queued slots;
 *   <li>a new (or newly enabled) job and a changed one get a new instance from the job factory
 *       and their next slot after the update's instant: a change never fires a run by itself;
 *   <li>a removed (or disabled) job claims nothing new; its runs in flight finish and their
 *       outcomes are written; its instance (and a changed job's old one) is closed at the stop;
 *   <li>slots that fell due before the update, and a slot claimed ahead before it (at most
 *       {@link Preference#AHEAD} before its time), are still decided and run under the definition
 *       they fell due or were claimed under ({@link JobSet}); pause and trigger state live in the
 *       store and are untouched.
 * </ul>
 * All or nothing: when the factory fails for one job, nothing changes and it throws. Called under
 * the scheduler's lifecycle lock.
 */
final class Reload {

    private final JobSet jobs;
    private final CreatedJobs created;
    private final JobFactory factory;
    private final SchedulerMetrics metrics;
    private final ClusterClock clock;
    private final SlotQueue queue;
    private final Membership membership;
    private final Events events;

    Reload(JobSet jobs, CreatedJobs created, JobFactory factory, SchedulerMetrics metrics, ClusterClock clock, SlotQueue queue,
            Membership membership, Events events) {
        this.jobs = jobs;
        this.created = created;
        this.factory = factory;
        this.metrics = metrics;
        this.clock = clock;
        this.queue = queue;
        this.membership = membership;
        this.events = events;
    }

    /**
     * @param running whether the scheduler has started (before, only the set is replaced: the start queues it)
     * @throws IllegalArgumentException when two definitions share a name
     * @throws LockstepException when a job cannot be created (nothing changed)
     */
    ScheduleUpdate apply(List<JobDefinition> definitions, boolean running) {
        JobSet.requireUniqueNames(definitions);
        List<JobDefinition> make = new ArrayList<>();
        List<String> added = new ArrayList<>();
        List<String> changed = new ArrayList<>();
        for (JobDefinition d : definitions) {
            ScheduledJob now = jobs.get(created.nameHere(d));
            if (!d.enabled() || now != null && Fingerprints.describe(now.definition()).equals(Fingerprints.describe(d))) {
                continue;
            }
            make.add(d);
            (now == null ? added : changed).add(d.name());
        }
        List<ScheduledJob> made = created.more(make, factory); // throws before anything changed
        java.util.Map<String, ScheduledJob> byName = new java.util.HashMap<>();
        made.forEach(j -> byName.put(j.name(), j));
        List<ScheduledJob> next = new ArrayList<>();
        for (JobDefinition d : definitions) {
            if (d.enabled()) {
                String here = created.nameHere(d);
                next.add(byName.containsKey(here) ? byName.get(here) : jobs.get(here));
            }
        }
        Set<String> inForce = new HashSet<>();
        next.forEach(j -> inForce.add(j.name()));
        List<String> removed = jobs.names().stream().filter(n -> !inForce.contains(n)).toList();
        Instant at = running ? clock.now() : Instant.now();
        jobs.replace(next, at); // the definitions' hash (disabled jobs included) goes to the heartbeat below
        metrics.registerJobs(made.stream().map(ScheduledJob::name).toList());
        membership.update(definitions);
        if (running) {
            List<DueSlot> due = new ArrayList<>();
            for (ScheduledJob j : made) {
                j.definition().schedule().next(at).ifPresent(slot -> due.add(DueSlot.next(j, slot, queue.lead().current())));
            }
            queue.addAll(due);
            queue.looks().lookAt(made.stream().map(ScheduledJob::name).toList(), at); // runs of it other workers have in flight
        }
        ScheduleUpdate update = new ScheduleUpdate(added, changed, removed, membership.configHash());
        events.info("schedule_updated").addKeyValue("jobs", next.size()).addKeyValue("added", String.join(",", added))
                .addKeyValue("changed", String.join(",", changed)).addKeyValue("removed", String.join(",", removed))
                .addKeyValue("config_hash", update.configHash())
                // the instant (cluster time) that splits the two definitions: slots up to it are decided under
                // the old ones, slots after it under the new (the audit checks each slot against the right one)
                .addKeyValue("effective_at", at.toString())
                .log(update.changedAnything() ? "job definitions updated; new and changed jobs start at their next slot"
                        : "job definitions updated; no job changed");
        return update;
    }
}
