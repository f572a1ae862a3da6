package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.LockProvider;
import io.lockstep.scheduler.lock.StartRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Starts the runs claimed ahead at their slot, from one timer thread ({@code lockstep-start}), so
 * that no job thread waits for a slot: a claim made ahead only reserves a job thread
 * ({@link JobThreads}), and the run goes to the pool at its start instant.
 *
 * <p>A claim the store decided within {@link io.lockstep.scheduler.lock.ClaimRequest#START_WINDOW}
 * of its slot is the run's start ({@link #submitStarted}): it only waits here for its instant, with
 * no call to the store, and goes to the pool as a started run does below (a worker stalled past the
 * grace hands it back unstarted). The preferred claimer's claims are sent inside that window
 * ({@link ClaimLead}), so this is the common path: two calls a slot.
 *
 * <p>A claim made ahead earlier than that is staged in the store (a short lease, the record "claimed", see
 * {@link StartRequest}). {@link #LEAD} before its start instant this thread asks the store to
 * start it, many runs to a round trip ({@link StagedStarts}: the round trip, and what each answer
 * leads to); the store checks by its own clock that the claim is still ours, that the slot's grace
 * has not passed and that the job is not paused, then records the run as started under the job's
 * full lease. Only a run the store started is handed to the pool, at its start instant: counted on
 * the monotonic clock from the claim's reply, then from the start's (the store's clock read last,
 * just before the slot), so never before the slot by the store's clock and within a fraction of a
 * millisecond of it. The runs due at one instant go to the pool together ({@link Runner#startAll});
 * runs already started are handed over before the next start round trip, never after it. Every
 * other end is reported once and the job thread freed: late, paused, split, lost or unconfirmed
 * at the start ({@link StagedStarts} lists them); a worker stalled past the grace after the
 * store's start: handed back unstarted ({@link #ready}); the worker stopping before the start:
 * handed back unstarted at once ({@code slot_handed_over}).
 * A crash of the worker before the start leaves the staged claim to run out (at most the slot
 * plus {@link io.lockstep.scheduler.lock.ClaimRequest#STAGED_MARGIN}), after which a peer runs it.
 * Between the store's start and the run's start (at most {@link #LEAD} plus {@link #JOIN_NANOS} plus
 * a round trip) a crash costs the slot as a crash mid-run does: the recover policy applies.
 * Thread-safe.
 */
final class Starter {

    /**
     * How long before its start instant a staged run's start is sent: room for the round trip
     * (one batch for every run of the same instant), short enough that a crash between the store's
     * start and the run's is unlikely.
     */
    static final Duration LEAD = Duration.ofMillis(40);
    /**
     * Starts due within this much after the first one due go with it, in the same round trip: the
     * claims of one instant made in several script calls carry store times some milliseconds apart.
     */
    private static final long JOIN_NANOS = TimeUnit.MILLISECONDS.toNanos(25);

    private final Runner runner;
    private final Events events;
    private final StartEvents startEvents;
    /** The start round trip of the staged runs due, and what each answer leads to. */
    private final StagedStarts stagedStarts;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition wake = lock.newCondition();
    private final PriorityQueue<Staged> queue = new PriorityQueue<>((a, b) -> Long.compare(a.atNanos, b.atNanos));
    private final Thread thread;
    private boolean closing;

    Starter(LockProvider provider, Runner runner, Events events, Outage outage) {
        this.runner = runner;
        this.events = events;
        this.startEvents = new StartEvents(events);
        this.stagedStarts = new StagedStarts(provider, runner, startEvents, outage, this::requeue);
        this.thread = new Thread(this::loop, "lockstep-start");
        this.thread.setDaemon(true);
    }

    void open() {
        thread.start();
    }

    /**
     * A claim made ahead won: start it at {@link SlotRun#startAtNanos}. Its job thread is reserved.
     *
     * @param leaseEndsNanos until when its short lease is ours for certain (monotonic nanos)
     */
    void submit(SlotRun run, long leaseEndsNanos) {
        lock.lock();
        try {
            if (closing) {
                handOver(run); // the tick stopped before this claim's answer was handled
                return;
            }
            queue.add(new Staged(run, leaseEndsNanos));
            wake.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /**
     * A claim made ahead that the store recorded as the run's start
     * ({@link io.lockstep.scheduler.lock.ClaimResult#started}): handed to the pool at
     * {@link SlotRun#startAtNanos} with no call to the store, its lease sent by the claim at
     * {@code claimSentNanos}. Its job thread is reserved.
     */
    void submitStarted(SlotRun run, long claimSentNanos) {
        Staged s = new Staged(run, Long.MAX_VALUE);
        s.started = true;
        s.startSentNanos = claimSentNanos;
        s.atNanos = run.startAtNanos;
        lock.lock();
        try {
            if (closing) {
                handOver(run); // the tick stopped before this claim's answer was handled: it never ran, a peer runs it
                return;
            }
            queue.add(s);
            wake.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** How many runs wait for their start. */
    int waiting() {
        lock.lock();
        try {
            return queue.size();
        } finally {
            lock.unlock();
        }
    }

    /**
     * The worker stops: runs the store has not started are handed back at once (a peer runs them),
     * those it started go to the pool at their start instant; returns when none is left.
     */
    void close() {
        lock.lock();
        try {
            closing = true;
            wake.signalAll();
        } finally {
            lock.unlock();
        }
        try {
            thread.join(TimeUnit.SECONDS.toMillis(30));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void loop() {
        while (true) {
            List<Staged> due;
            try {
                due = awaitDue();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            if (due == null) {
                return;
            }
            try {
                act(due);
            } catch (RuntimeException | Error e) {
                // Only what act() had not dealt with yet (not requeued either) goes back, each once.
                events.error("tick_failed").addKeyValue("error", Events.describe(e)).setCause(e)
                        .log("unexpected failure starting runs claimed ahead; handing the rest back unstarted");
                for (Staged s : due) {
                    if (!s.done && !queued(s)) {
                        s.done = true;
                        guarded(() -> notStarted(s.run, true));
                    }
                }
            }
        }
    }

    /** Sleeps until a run is due (or the worker stops); null once stopped with nothing left. */
    private List<Staged> awaitDue() throws InterruptedException {
        lock.lock();
        try {
            while (true) {
                long now = System.nanoTime();
                if (closing) {
                    // Stopping: every run the store has not started goes back now; started ones at their instant.
                    List<Staged> due = new ArrayList<>();
                    queue.removeIf(s -> {
                        boolean go = !s.started || s.atNanos - now <= 0;
                        if (go) {
                            due.add(s);
                        }
                        return go;
                    });
                    if (!due.isEmpty()) {
                        return due;
                    }
                    if (queue.isEmpty()) {
                        return null;
                    }
                    wake.awaitNanos(queue.peek().atNanos - now);
                    continue;
                }
                Staged head = queue.peek();
                if (head == null) {
                    wake.await();
                } else if (head.atNanos - now <= 0) {
                    List<Staged> due = new ArrayList<>();
                    while (!queue.isEmpty() && queue.peek().atNanos - now <= 0) {
                        due.add(queue.poll());
                    }
                    // The starts of the same instant go in one round trip: claims made in several
                    // rounds would otherwise be started in as many, one after the other, the last
                    // of them landing after the slot. A start sent a little early only records it
                    // sooner; its run still begins at its own instant.
                    queue.removeIf(s -> {
                        boolean join = !s.started && !s.tried && s.atNanos - now <= JOIN_NANOS;
                        if (join) {
                            due.add(s);
                        }
                        return join;
                    });
                    return due;
                } else {
                    wake.awaitNanos(head.atNanos - now);
                }
            }
        } finally {
            lock.unlock();
        }
    }

    private void act(List<Staged> due) {
        List<Staged> ready = new ArrayList<>();
        try {
            actOn(due, ready);
        } finally {
            handToPool(ready); // even when act failed part way
        }
    }

    /** Hands the runs found ready to the pool together, and forgets them. */
    private void handToPool(List<Staged> ready) {
        if (ready.isEmpty()) {
            return;
        }
        long[] sent = new long[ready.size()];
        for (int i = 0; i < sent.length; i++) {
            sent[i] = ready.get(i).startSentNanos;
        }
        List<SlotRun> runs = ready.stream().map(s -> s.run).toList();
        ready.clear();
        runner.startAll(runs, sent);
    }

    /** Acts on the runs due; those to hand to the pool now go to {@code ready}. */
    private void actOn(List<Staged> due, List<Staged> ready) {
        List<Staged> toStart = new ArrayList<>();
        for (Staged s : due) {
            if (s.started) {
                ready(s, ready);
            } else if (closingNow()) {
                s.done = true;
                handOver(s.run);
            } else {
                toStart.add(s);
            }
        }
        if (toStart.isEmpty()) {
            return;
        }
        handToPool(ready); // the runs due now do not wait for the start round trip of others
        stagedStarts.send(toStart, s -> ready(s, ready));
    }

    /**
     * A run the store started is ready for the pool ({@code ready}), unless this worker stalled (GC,
     * a pause) past the slot's grace since the store's answer: then it goes back unstarted, and the
     * recovery that finds it (a peer's, or ours) records and reports the slot as missed, once.
     * Called for the runs started before (claimed within the start window, or requeued for their
     * instant) and by {@link StagedStarts} for those its round trip just started.
     */
    private void ready(Staged s, List<Staged> ready) {
        s.done = true;
        SlotRun run = s.run;
        if (System.nanoTime() - run.graceEndsNanos > 0) {
            events.debug("slot_start_refused").addKeyValue("job", run.definition.name())
                    .addKeyValue("slot", run.scheduledTime().toString()).addKeyValue("lock_name", run.lockName)
                    .log("past the slot's misfireGrace before the run could start; handed back unstarted (reported missed by its recovery)");
            notStarted(run, true);
            return;
        }
        ready.add(s);
    }

    /** Whether {@code s} waits in the queue again (requeued for its start instant or a retry). */
    private boolean queued(Staged s) {
        lock.lock();
        try {
            return queue.contains(s);
        } finally {
            lock.unlock();
        }
    }

    private void guarded(Runnable action) {
        try {
            action.run();
        } catch (RuntimeException | Error e) {
            events.error("tick_failed").addKeyValue("error", Events.describe(e)).setCause(e)
                    .log("unexpected failure handing a run claimed ahead back");
        }
    }

    private boolean closingNow() {
        lock.lock();
        try {
            return closing;
        } finally {
            lock.unlock();
        }
    }

    private void requeue(Staged s, long atNanos) {
        lock.lock();
        try {
            s.atNanos = atNanos;
            queue.add(s);
            wake.signalAll();
        } finally {
            lock.unlock();
        }
    }

    private void handOver(SlotRun run) {
        startEvents.handedOver(run);
        notStarted(run, true);
    }

    /** Frees the run's job thread; {@code handBack}: the store is told it never started (a peer runs it). */
    private void notStarted(SlotRun run, boolean handBack) {
        runner.notStarted(run, handBack);
    }
}
