package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.LockProvider;
import io.lockstep.scheduler.lock.RunsInFlight;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * Finds runs whose lease ran out without an outcome (their worker died or was paused) and races
 * the other workers to rerun or abandon each, by the job's {@link Recover} policy. Needs no
 * polling: every claim answer says when the earliest lease among the job's runs in flight ends,
 * and the tick thread looks only then (plus {@link #LOOK_MARGIN}). Called only from the tick thread.
 */
final class Recovery {

    /**
     * How long after a run's lease end (by the store's clock) the tick thread looks whether it was
     * renewed: room for a renewal sent just before the end to land.
     */
    static final Duration LOOK_MARGIN = Duration.ofMillis(100);

    private final LockProvider provider;
    private final ClusterClock clock;
    private final Outage outage;
    private final SlotQueue queue;
    private final Claimer claimer;
    private final Runner runner;
    private final JobSet jobs;

    Recovery(LockProvider provider, ClusterClock clock, Outage outage, SlotQueue queue, Claimer claimer, Runner runner,
            JobSet jobs) {
        this.provider = provider;
        this.clock = clock;
        this.outage = outage;
        this.queue = queue;
        this.claimer = claimer;
        this.runner = runner;
        this.jobs = jobs;
    }

    /**
     * Asks the store about the runs in flight of every job whose look is due, and claims a
     * recovery (or abandonment) of each run that lost its lease.
     */
    void lookAtRuns() {
        Instant now = clock.now();
        List<String> names = queue.looks().looksDue(now);
        if (names.isEmpty()) {
            return;
        }
        List<RunsInFlight> found;
        try {
            found = provider.runsInFlight(names);
            outage.succeeded();
        } catch (LockException e) {
            outage.failed("runs", e);
            queue.looks().lookAt(names, now.plus(Claimer.RETRY_DELAY));
            return;
        }
        List<DueSlot> due = new ArrayList<>();
        for (RunsInFlight runs : found) {
            queue.looks().noteRuns(runs.job(), runs.nextLeaseEndMillis());
            ScheduledJob job = jobs.get(runs.job());
            if (job == null || !job.here()) {
                continue; // not a job of ours (any more), or one this worker may not run: those that run it recover it
            }
            for (Instant slot : runs.expired()) {
                if (runner.handling(runs.job(), slot)) {
                    continue; // our own run, still executing or its outcome not written yet: not dead to us
                }
                DueSlot d = DueSlot.recovery(job, slot, job.definition().recover(), now.plus(job.definition().lease()));
                if (queue.looks().startRecovery(d)) {
                    due.add(d);
                }
            }
        }
        claimer.claimInRounds(due);
    }
}
