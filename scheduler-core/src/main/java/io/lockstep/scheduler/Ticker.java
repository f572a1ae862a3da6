package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.LockProvider;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The tick thread ({@code lockstep-tick}): sleeps until something is due in the {@link SlotQueue},
 * claims it, queues each claimed slot's follower, looks at runs in flight, and re-measures the
 * cluster clock when due. Each round runs inside a guard: an unexpected failure is logged and the
 * loop goes on. Thread-safe.
 */
final class Ticker {

    private final LockProvider provider;
    private final ClusterClock clock;
    private final Events events;
    private final Outage outage;
    private final JobThreads threads;
    private final SlotQueue queue;
    private final Claimer claimer;
    private final Recovery recovery;
    private final JobSet jobs;
    private final Thread thread;
    private volatile boolean running = true;

    Ticker(LockProvider provider, ClusterClock clock, Events events, Outage outage, JobThreads threads,
            SlotQueue queue, Claimer claimer, Recovery recovery, JobSet jobs) {
        this.jobs = jobs;
        this.provider = provider;
        this.clock = clock;
        this.events = events;
        this.outage = outage;
        this.threads = threads;
        this.queue = queue;
        this.claimer = claimer;
        this.recovery = recovery;
        this.thread = new Thread(this::loop, "lockstep-tick");
    }

    void start() {
        thread.start();
    }

    /** Stops ticking and waits for the current round to end. */
    boolean alive() {
        return thread.isAlive();
    }

    void stop() {
        running = false;
        queue.close();
        if (!thread.isAlive() || thread == Thread.currentThread()) {
            return;
        }
        try {
            thread.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void loop() {
        while (running) {
            try {
                tickOnce();
            } catch (RuntimeException | Error e) {
                events.error("tick_failed").addKeyValue("error", Events.describe(e)).setCause(e)
                        .log("unexpected failure in the tick loop; continuing");
                Runner.pause(Claimer.RETRY_DELAY);
            }
        }
    }

    /** Waits for the next due slot (or a freed thread for a waiting one), then claims what is due. */
    private void tickOnce() {
        List<DueSlot> due;
        try {
            due = queue.awaitDue(clock, threads);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            running = false;
            return;
        }
        if (due == null) {
            running = false;
            return;
        }
        retire(due);
        List<DueSlot> leading = new ArrayList<>(); // due for the first time: the job's next slot follows them
        for (DueSlot d : due) {
            if (d.leadsSchedule() && jobs.current(d.job)) { // read before the claims move the slots on; a retired version has no next
                leading.add(d);
                d.led();
            }
        }
        for (DueSlot d : due) {
            if (d.calendarsPending()) { // asked as the slot comes due, so an application's calendar answers for now
                d.calendarsAsked();
                SlotCalendars.exclusion(d.job, d.slot, events).ifPresent(d::exclude);
            }
        }
        try {
            claimer.claimInRounds(due); // first: the claims are what is late; the next fire times can wait a moment
        } finally {
            // Even when the claims threw: every job's next slot is queued, or the job would stop here.
            Instant now = clock.now();
            for (DueSlot d : leading) {
                queueFollowing(d, now);
            }
        }
        recovery.lookAtRuns();
        if (clock.syncDue()) {
            try {
                clock.sync(provider);
                outage.succeeded();
            } catch (LockException e) {
                outage.failed("time", e);
            }
        }
    }

    /**
     * Drops from {@code due} the slots of job versions a reload retired that fell due after it
     * ({@link JobSet#claimable}): the version in force queued its own next slot.
     */
    private void retire(List<DueSlot> due) {
        List<DueSlot> dropped = new ArrayList<>();
        due.removeIf(d -> {
            if (jobs.claimable(d)) {
                return false;
            }
            d.retired();
            dropped.add(d);
            return true;
        });
        queue.place(dropped, clock.now()); // forgotten: a recovery mark or a catch-up's order goes with them
    }

    /**
     * Queues the slot after {@code fired}. When this worker fell behind (slow ticks, a pause), the
     * slots whose grace already passed are still each decided, as misses (the store records each
     * once, or answers that a peer decided it), and the next one within its grace is claimed as
     * usual: every slot is queued or reported. Slots so old that their records may have expired
     * are reported together in one event.
     */
    private void queueFollowing(DueSlot fired, Instant now) {
        JobDefinition d = fired.definition();
        Instant horizon = now.minus(d.misfireGrace());
        Instant knowable = now.minus(ClaimRequest.recordTtl(d.lease(), d.misfireGrace()));
        List<DueSlot> behind = new ArrayList<>();
        Optional<Instant> next = d.schedule().next(fired.slot);
        if (next.isPresent() && next.get().isBefore(knowable)) {
            events.warn("slots_missed").addKeyValue("job", d.name()).addKeyValue("from", next.get().toString())
                    .addKeyValue("to", knowable.toString())
                    .addKeyValue("reason", "this worker fell behind its schedule by longer than slot records live; "
                            + "slots in this range were decided by other workers, or missed")
                    .log("worker fell far behind its schedule");
            next = d.schedule().next(knowable);
        }
        while (next.isPresent() && !next.get().isAfter(horizon) && behind.size() < CatchUpPlan.MAX_CATCH_UP_SLOTS) {
            Instant slot = next.get();
            behind.add(SlotCalendars.exclusion(fired.job, slot, events).map(why -> DueSlot.excluded(fired.job, slot, why, now))
                    .orElseGet(() -> !fired.job.here() ? DueSlot.unrunnable(fired.job, slot, now)
                            : DueSlot.missed(fired.job, slot, "this worker fell behind its schedule", "fell_behind", now)));
            next = d.schedule().next(slot);
        }
        next.ifPresent(slot -> behind.add(DueSlot.next(fired.job, slot, queue.lead().current())));
        queue.addAll(behind);
    }
}
