package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.Backfill;
import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.LockProvider;
import io.lockstep.scheduler.lock.WorkerInfo;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;

/**
 * Drives the backfills ({@link Backfill}) this worker is chosen for. Each heartbeat brings the
 * backfills the store keeps ({@link #heard}); of each running one, the worker that drives it is the
 * live worker (not draining, with the job's labels) that ranks first by a rendezvous hash of its id
 * and the backfill's id, so every worker agrees without a word, and when the driver dies or
 * drains, the next one by the same hash takes over at the next heartbeat.
 *
 * <p>A driver is one thread. It lists the range's slots from the job's schedule, asks the store
 * what it knows of them ({@link LockProvider#backfillView}: the slots decided when the backfill was
 * asked for, which the store keeps for it, and any record) and, oldest first, leaves alone each slot
 * that was decided (counted) or that the job's calendars exclude (counted skipped); each other slot
 * it hands to the claimer as a {@link DueSlot.Kind#BACKFILL} slot, at
 * most the backfill's rate a second, and waits until the store decided it before the next. The
 * store keeps each slot once and in order whoever sends it: the claim names the backfill and
 * moves its cursor ({@link ClaimRequest#backfill}), so two drivers for a moment (a driver stalled
 * past its heartbeat's life, then woken) cannot run a slot twice or out of order, and a cancelled
 * backfill claims nothing more. It writes its progress at least once a second and when it ends.
 *
 * <p>From the moment the backfill is asked for, nobody else decides a slot of its range (the store
 * answers every other request for one stale: {@link ClaimRequest#backfill}), so what was decided
 * then, and the backfill's own cursor, are all a driver needs: not the job's history, which the
 * backfill's own runs may push out.
 */
final class BackfillDriver {

    private final LockProvider provider;
    private final String workerId;
    private final JobSet jobs;
    private final SlotQueue queue;
    private final ClusterClock clock;
    private final Events events;
    private final Supplier<List<WorkerInfo>> live;
    /** The drivers running here, by backfill id. */
    private final Map<String, BackfillDrive> drives = new HashMap<>();
    /** Backfills this worker saw end here, so that a late heartbeat does not start them again. */
    private final Set<String> ended = new HashSet<>();
    private volatile boolean closed;

    /** Whether this worker stopped driving backfills (it stops). */
    boolean closed() {
        return closed;
    }

    BackfillDriver(LockProvider provider, String workerId, JobSet jobs, SlotQueue queue, ClusterClock clock, Events events,
            Supplier<List<WorkerInfo>> live) {
        this.provider = provider;
        this.workerId = workerId;
        this.jobs = jobs;
        this.queue = queue;
        this.clock = clock;
        this.events = events;
        this.live = live;
    }

    /** A heartbeat's backfills: starts a driver for each this worker is to drive, stops the rest. */
    synchronized void heard(List<Backfill.Entry> entries) {
        if (closed) {
            return;
        }
        Set<String> keep = new HashSet<>();
        for (Backfill.Entry e : entries) {
            Backfill b = e.backfill();
            ScheduledJob job = jobs.get(b.job());
            if (!e.running() || ended.contains(b.id()) || job == null || !job.here() || job.definition().runOn().everyWorker()
                    || !workerId.equals(driver(b, job.definition().runOn()))) {
                continue;
            }
            keep.add(b.id());
            BackfillDrive running = drives.get(b.id());
            if (running != null) {
                running.latest = e;
            } else {
                BackfillDrive d = new BackfillDrive(this, provider, workerId, queue, clock, events, b, job, e);
                drives.put(b.id(), d);
                d.thread.start();
            }
        }
        Set<String> cancelled = new HashSet<>();
        entries.stream().filter(e -> e.backfill().cancelled()).forEach(e -> cancelled.add(e.backfill().id()));
        entries.forEach(e -> {
            BackfillDrive d = drives.get(e.backfill().id());
            if (d != null) {
                d.latest = e; // what the store says of it now, for a driver that finds its mark gone
            }
        });
        drives.entrySet().removeIf(d -> {
            if (!keep.contains(d.getKey())) {
                // Cancelled (it says so), ended, or another worker is to drive it now (it goes on from the store's cursor).
                d.getValue().stop(cancelled.contains(d.getKey()));
                return true;
            }
            return false;
        });
    }

    /** Stops every driver here (the worker stops); the next worker by the hash takes over. */
    synchronized void close() {
        closed = true;
        drives.values().forEach(d -> d.stop(false));
        drives.clear();
    }

    /**
     * The worker that drives {@code b}: of the live workers that run this worker's config (so the job,
     * as defined here) and may run the job ({@link RunOn}), the first by a rendezvous hash. During a
     * rollout each config's workers choose one of theirs: two drivers for a while, which the store's
     * cursor keeps apart.
     */
    private String driver(Backfill b, RunOn runOn) {
        String best = null;
        long bestScore = Long.MIN_VALUE;
        List<WorkerInfo> workers = new ArrayList<>(live.get());
        WorkerInfo self = workers.stream().filter(w -> w.id().equals(workerId)).findFirst().orElse(null);
        if (self == null) {
            return workerId; // before the first heartbeat's answer: nobody else is known
        }
        for (WorkerInfo w : workers) {
            if (w.draining() || !runOn.allows(w.labels()) || !w.configHash().equals(self.configHash())) {
                continue;
            }
            long score = Preference.mix(Preference.hash(w.id()) ^ Preference.hash(b.id()));
            if (best == null || score > bestScore) {
                best = w.id();
                bestScore = score;
            }
        }
        return best;
    }

    /** {@code d}'s thread ends; {@code over}: the backfill ended (done, cancelled, interrupted), never to be driven again. */
    synchronized void finished(BackfillDrive d, boolean over) {
        if (over) {
            ended.add(d.b.id());
        }
        drives.remove(d.b.id(), d); // not a drive started since for the same backfill
    }
}
