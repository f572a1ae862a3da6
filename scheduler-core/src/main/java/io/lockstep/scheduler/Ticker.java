package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.LockProvider;
import java.time.Instant;
import java.util.List;

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
    private final Thread thread;
    private volatile boolean running = true;

    Ticker(LockProvider provider, ClusterClock clock, Events events, Outage outage, JobThreads threads,
            SlotQueue queue, Claimer claimer, Recovery recovery) {
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
        claimer.claimInRounds(due); // first: the claims are what is late; the next fire times can wait a moment
        Instant now = clock.now();
        for (DueSlot d : due) {
            if (!d.followerQueued) {
                d.followerQueued = true;
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

    /** Queues the slot after {@code fired}; a worker that was paused past the grace skips ahead to now. */
    private void queueFollowing(DueSlot fired, Instant now) {
        JobDefinition d = fired.definition();
        Instant from = fired.slot;
        Instant horizon = now.minus(d.misfireGrace());
        if (from.isBefore(horizon)) {
            from = horizon;
        }
        d.schedule().next(from).ifPresent(slot -> queue.add(new DueSlot(fired.job, slot)));
    }
}
