package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.InForce;
import io.lockstep.scheduler.lock.LockProvider;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Map;

/**
 * What a worker queues when it starts: each job's next slot and, from the last slot the cluster
 * decided for the job (and the periods the job was out of force, {@link InForce}), the slots it
 * passed while no worker was running, caught up or reported by the job's {@link CatchUp} policy
 * ({@link CatchUpPlan}); those beyond {@link CatchUpPlan#MAX_CATCH_UP_SLOTS} are only counted
 * ({@code slots_missed}), those it passed out of force are not owed ({@code slots_not_owed}). Then
 * every job's runs in flight are looked at once: other workers may have runs going already.
 *
 * <p>Apart from the {@link Scheduler} because this is the catch-up decision, not the starting of a
 * worker; and it comes in two steps for the Scheduler's sake: {@link #read} asks the store
 * everything first and changes nothing, so that a start that fails there may be retried whole;
 * {@link #queue} then changes this worker's own state only. Immutable once read.
 */
final class FirstSlots {

    private final List<ScheduledJob> jobs;
    /** Per job, the latest slot the cluster decided (absent: none, the job is new to the store). */
    private final Map<String, Instant> lastSlots;
    /** Per job, the periods it was out of force (absent: never stamped). */
    private final Map<String, InForce> inForce;

    private FirstSlots(List<ScheduledJob> jobs, Map<String, Instant> lastSlots, Map<String, InForce> inForce) {
        this.jobs = jobs;
        this.lastSlots = lastSlots;
        this.inForce = inForce;
    }

    /**
     * Measures the offset to the store's clock and reads what the store knows of {@code jobs}.
     *
     * @throws io.lockstep.scheduler.lock.LockException when the lock store does not answer
     */
    static FirstSlots read(LockProvider provider, ClusterClock clock, JobSet jobs) {
        clock.sync(provider);
        List<ScheduledJob> all = List.copyOf(jobs.all());
        List<String> names = all.stream().map(ScheduledJob::name).toList();
        return new FirstSlots(all, provider.lastSlots(names), provider.inForce(names));
    }

    /**
     * Queues each job's first slots as of {@code now} (reporting what is missed or not owed) and a
     * look at every job's runs in flight.
     *
     * @return the jobs read, in order
     */
    List<ScheduledJob> queue(SlotQueue queue, Events events, Instant now) {
        List<DueSlot> due = new ArrayList<>();
        for (ScheduledJob job : jobs) {
            Instant last = lastSlots.get(job.name());
            if (last != null && !job.here() && job.definition().catchUp() == CatchUp.NONE) {
                // A job this worker may not run: it watches the slots that passed while it started, as the ones to
                // come, so that none is silent when no worker with the labels is alive. (With catchUp latest or all,
                // a worker with the labels may still run them: it is left to those.)
                Instant windowStart = now.minus(job.definition().catchUpWindow());
                Optional<Instant> s = job.definition().schedule().next(last.isAfter(windowStart) ? last : windowStart);
                for (int n = 0; s.isPresent() && !s.get().isAfter(now) && n < CatchUpPlan.MAX_CATCH_UP_SLOTS; n++) {
                    due.add(DueSlot.unrunnable(job, s.get(), now));
                    s = job.definition().schedule().next(s.get());
                }
            }
            if (last != null && job.here()) { // a job this worker may not run is caught up by those that may
                CatchUpPlan plan = CatchUpPlan.since(job, last, inForce.get(job.name()), now, CatchUpPlan.MAX_CATCH_UP_SLOTS, events);
                due.addAll(plan.slots());
                if (plan.catchesUp()) {
                    queue.catchingUp(List.of(job.name()));
                }
                if (plan.dropped() > 0) {
                    events.warn("slots_missed").addKeyValue("job", job.name()).addKeyValue("count", plan.dropped())
                            .addKeyValue("from", plan.droppedFrom().toString()).addKeyValue("to", plan.droppedTo().toString())
                            .addKeyValue("reason", "no worker was running; more than " + CatchUpPlan.MAX_CATCH_UP_SLOTS
                                    + " slots were missed and only the newest are caught up or reported one by one")
                            .log("missed slots only counted");
                    events.metrics().missed(job.name(), "cluster_down", plan.dropped());
                }
                if (plan.notOwed() > 0) {
                    events.info("slots_not_owed").addKeyValue("job", job.name()).addKeyValue("count", plan.notOwed())
                            .addKeyValue("from", plan.notOwedFrom().toString()).addKeyValue("to", plan.notOwedTo().toString())
                            .log("slots not caught up: they passed while the cluster ran without the job (disabled or removed); "
                                    + "re-enabled, it starts at its next slot, as after a reload");
                }
            }
            job.definition().schedule().next(now).ifPresent(slot -> due.add(DueSlot.next(job, slot, queue.lead().current())));
        }
        queue.addAll(due);
        // Runs of other workers may be in flight already: look at every job once.
        queue.looks().lookAt(jobs.stream().map(ScheduledJob::name).toList(), now);
        return jobs;
    }
}
