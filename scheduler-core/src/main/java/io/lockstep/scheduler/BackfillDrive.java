package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.Backfill;
import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.ClaimResult;
import io.lockstep.scheduler.lock.LockProvider;
import io.lockstep.scheduler.lock.WorkerInfo;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * One backfill driven here ({@link BackfillDriver} chooses the driver and starts and stops this): its
 * own thread hands the range's undecided slots to the claimer, oldest first, at most the backfill's
 * rate a second, each once the one before it was decided, and writes the backfill's progress.
 */
final class BackfillDrive implements Runnable {

    /** Slots asked about per view. */
    private static final int PER_VIEW = 500;
    /** How often a driver writes its progress, at most. */
    private static final Duration PROGRESS_EVERY = Duration.ofSeconds(1);

    private final BackfillDriver owner;
    private final LockProvider provider;
    private final String workerId;
    private final SlotQueue queue;
    private final ClusterClock clock;
    private final Events events;

    final Backfill b;
    final ScheduledJob job;
    final Thread thread;
    private volatile boolean stopped;
    /** Stopped because the backfill was cancelled: it ends here, saying so. */
    private volatile boolean cancelled;
    private long ran, decided, skipped;
    private Instant cursor;
    private long progressAt;
    /** What the latest heartbeat said of this backfill (its request and progress). */
    volatile Backfill.Entry latest;

    BackfillDrive(BackfillDriver owner, LockProvider provider, String workerId, SlotQueue queue, ClusterClock clock, Events events,
            Backfill b, ScheduledJob job, Backfill.Entry entry) {
        this.owner = owner;
        this.provider = provider;
        this.workerId = workerId;
        this.queue = queue;
        this.clock = clock;
        this.events = events;
        this.b = b;
        this.job = job;
        this.latest = entry;
        Backfill.Progress before = entry.progress();
        if (before != null && before.id().equals(b.id())) { // a driver before us wrote it: resume its counts
            ran = before.ran();
            decided = before.decided();
            skipped = before.skipped();
            cursor = before.cursor();
        }
        this.thread = new Thread(this, "lockstep-backfill-" + b.job());
        thread.setDaemon(true);
    }

    void stop(boolean cancel) {
        cancelled = cancel;
        stopped = true;
        thread.interrupt();
    }

    @Override
    public void run() {
        String state = "running";
        try {
            List<Instant> slots = job.definition().slots(b.from(), b.to());
            total = slots.size();
            events.info("backfill_driving").addKeyValue("job", b.job()).addKeyValue("backfill", b.id())
                    .addKeyValue("from", b.from().toString()).addKeyValue("to", b.to().toString()).addKeyValue("slots", slots.size())
                    .addKeyValue("per_second", b.perSecond()).addKeyValue("resumed_after", cursor == null ? null : cursor.toString())
                    .log("driving a backfill");
            state = drive(slots);
        } catch (InterruptedException e) {
            // stopped: cancelled, handed to another worker, or the worker stops (the thread ends here either way)
            if (!cancelled && !owner.closed()) {
                events.info("backfill_handed_on").addKeyValue("job", b.job()).addKeyValue("backfill", b.id())
                        .log("another worker is to drive the backfill now: it goes on from the store's cursor");
            }
        } catch (RuntimeException | Error e) {
            // The store did not answer (or refused), or this worker's schedule cannot list the range: a later
            // heartbeat starts the drive again, here or on another worker, from the store's cursor.
            events.warn("backfill_interrupted").addKeyValue("job", b.job()).addKeyValue("backfill", b.id())
                    .addKeyValue("error", Events.describe(e)).log("backfill paused: it goes on at a later heartbeat");
        }
        boolean over = false;
        try {
            if (cancelled) {
                state = "cancelled";
            }
            if (!state.equals("running")) {
                Thread.interrupted(); // a cancel's interrupt is spent: the last progress is still to be written
                over = end(state); // not written: a later heartbeat drives it again, here or elsewhere, and ends it then
                if (over) {
                    events.info("backfill_ended").addKeyValue("job", b.job()).addKeyValue("backfill", b.id()).addKeyValue("state", state)
                            .addKeyValue("ran", ran).addKeyValue("decided", decided).addKeyValue("skipped", skipped)
                            .log("backfill " + state);
                } else {
                    events.warn("backfill_interrupted").addKeyValue("job", b.job()).addKeyValue("backfill", b.id())
                            .addKeyValue("error", "its end (" + state + ") could not be written")
                            .log("backfill paused: it goes on at a later heartbeat");
                }
            } else if (!stopped) {
                write("running");
            }
        } catch (InterruptedException e) {
            // the worker stops while the end is being written: the next driver finds the mark gone and says why
        } finally {
            owner.finished(this, over);
        }
    }

    /**
     * The store no longer names this backfill as the job's (its mark is gone): cancelled (a cancel
     * removes the mark first, then flags the request: wait a few heartbeats to hear it), ended by
     * another driver (then say nothing), or lost (Redis lost the mark): {@code interrupted}.
     */
    private String markGone() throws InterruptedException {
        long until = System.nanoTime() + WorkerInfo.HEARTBEAT_INTERVAL.multipliedBy(3).toNanos();
        while (System.nanoTime() < until && !stopped) {
            Backfill.Entry e = latest;
            if (e.backfill().cancelled()) {
                return "cancelled";
            }
            if (e.progress() != null && e.progress().ended()) {
                stopped = true; // another driver ended it: nothing more to say here
                return "running";
            }
            TimeUnit.MILLISECONDS.sleep(250);
        }
        return stopped ? "running" : "interrupted";
    }

    /** Runs the backfill until it is done ({@code done}), cancelled ({@code cancelled}) or this driver stops ({@code running}). */
    private String drive(List<Instant> slots) throws InterruptedException {
        JobDefinition def = job.definition();
        Duration recordTtl = ClaimRequest.recordTtl(def.lease(), def.misfireGrace());
        long gapNanos = (long) (1e9 / b.perSecond());
        long nextAt = System.nanoTime();
        int i = cursor == null ? 0 : firstAfter(slots, cursor);
        boolean refused = false; // a claim was answered stale: the next view says whether the backfill still runs
        while (i < slots.size() || refused) {
            if (i >= slots.size()) {
                Backfill.View last = provider.backfillView(b.job(), b.id(), List.of(), recordTtl);
                return b.id().equals(last.activeId()) ? "done" : markGone();
            }
            refused = false;
            List<Instant> part = slots.subList(i, Math.min(i + PER_VIEW, slots.size()));
            Backfill.View view = provider.backfillView(b.job(), b.id(), part, recordTtl);
            if (!b.id().equals(view.activeId())) {
                return markGone(); // the store claims nothing more for it
            }
            for (Instant slot : part) {
                if (stopped) {
                    return "running";
                }
                i++;
                if (view.cursor() != null && !slot.isAfter(view.cursor())) {
                    decided++; // claimed by a driver before us after its last progress
                } else if (view.decided().contains(slot)) {
                    decided++;
                } else if (SlotCalendars.exclusion(job, slot, events).isPresent()) {
                    skipped++;
                } else {
                    long wait = nextAt - System.nanoTime();
                    if (wait > 0) {
                        TimeUnit.NANOSECONDS.sleep(wait);
                    }
                    nextAt = Math.max(nextAt, System.nanoTime() - gapNanos) + gapNanos;
                    ClaimResult.Status status = claim(slot);
                    if (status == ClaimResult.Status.CLAIMED) {
                        ran++;
                    } else if (status == ClaimResult.Status.STALE) {
                        cursor = slot;
                        decided++;
                        refused = true;
                        break; // cancelled, or another driver passed it: the next view tells
                    } else {
                        decided++; // decided otherwise (taken: decided before the backfill's mark; or given up unanswered)
                    }
                }
                cursor = slot;
                if (System.nanoTime() - progressAt > PROGRESS_EVERY.toNanos()) {
                    write("running");
                }
            }
        }
        return "done";
    }

    /** Hands the slot to the claimer and waits until the store decided it (or this driver stops). */
    private ClaimResult.Status claim(Instant slot) throws InterruptedException {
        DueSlot d = DueSlot.backfill(job, slot, b.id(), clock.now());
        queue.addAll(List.of(d));
        while (true) {
            try {
                return d.settled.get(1, TimeUnit.SECONDS);
            } catch (java.util.concurrent.TimeoutException e) {
                if (System.nanoTime() - progressAt > PROGRESS_EVERY.toNanos()) {
                    write("running"); // still waiting (the job's lease is held, or it is paused): say so
                }
            } catch (java.util.concurrent.ExecutionException e) {
                return ClaimResult.Status.UNANSWERED;
            }
            // Stopping does not abandon the slot: it is in the claimer's hands and settles on its own;
            // the store's cursor tells the next driver whether it was claimed.
            if (stopped) {
                throw new InterruptedException("backfill driver stopped");
            }
        }
    }

    private int total;

    /**
     * Writes the last progress, {@code state}, which also removes the job's backfill mark; tried again
     * for up to a minute while the store fails (a progress left running would be driven again, and
     * find its mark gone).
     */
    private boolean end(String state) throws InterruptedException {
        for (int attempt = 0; attempt < 60 && !owner.closed(); attempt++) {
            progressAt = System.nanoTime();
            try {
                provider.backfillProgress(b, new Backfill.Progress(b.id(), workerId, total, ran, decided, skipped, cursor,
                        state, clock.now()));
                return true;
            } catch (RuntimeException e) {
                events.debug("backfill_progress_unwritten").addKeyValue("job", b.job()).addKeyValue("error", Events.describe(e))
                        .log("the backfill's end not written yet; tried again in a second");
            }
            TimeUnit.SECONDS.sleep(1);
        }
        return false;
    }

    private void write(String state) {
        progressAt = System.nanoTime();
        try {
            provider.backfillProgress(b, new Backfill.Progress(b.id(), workerId, total, ran, decided, skipped, cursor,
                    state, clock.now()));
        } catch (RuntimeException e) {
            events.debug("backfill_progress_unwritten").addKeyValue("job", b.job()).addKeyValue("error", Events.describe(e))
                    .log("progress not written; written again with the next");
        }
    }

    /** The index of the first slot after {@code cursor}. */
    private static int firstAfter(List<Instant> slots, Instant cursor) {
        int i = 0;
        while (i < slots.size() && !slots.get(i).isAfter(cursor)) {
            i++;
        }
        return i;
    }
}
