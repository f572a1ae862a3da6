package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.Completion;
import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.LockProvider;
import io.lockstep.scheduler.lock.Outcome;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Writes outcomes into slot records and gives leases back, on its own thread
 * ({@code lockstep-complete}), in one batch per round trip: the runs that ended within
 * {@link #GATHER_NANOS} of the first one waiting, and whatever ended while the last batch was on
 * the wire, go together. A job thread hands its run over and is free at once.
 *
 * <p>A run's lease stays watched, and renewed, until its outcome is confirmed: when a write fails
 * the batch is sent again with backoff (the write is retry-safe: a completion repeated after its
 * reply was lost answers "ours" again), so a run that finished is never rerun or reported abandoned
 * because writing its outcome failed once (guarantee 11). Only at shutdown, after
 * {@link #GIVE_UP_AFTER_STOP} more failed rounds, is an outcome given up, with an error event.
 * Thread-safe.
 */
final class Completer {

    /** At most this many completions per round trip. */
    private static final int MAX_BATCH = 1_000;
    private static final long FIRST_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    private static final long MAX_BACKOFF_NANOS = TimeUnit.SECONDS.toNanos(2);
    /** Failed rounds after {@link #close()} before the outcomes still unwritten are given up. */
    static final int GIVE_UP_AFTER_STOP = 3;

    private record Pending(SlotRun run, Outcome outcome, long endedNanos) {}

    /**
     * How long the outcomes of runs that end together are gathered before they are written: the
     * runs of one instant end within a few milliseconds of each other, and their outcome writes
     * (encoding, a round trip) would otherwise compete for the CPU with the runs of that instant
     * still starting. An outcome is not urgent: the run's lease stays held and renewed until it is
     * written.
     */
    static final long GATHER_NANOS = TimeUnit.MILLISECONDS.toNanos(20);
    private static final Pending STOP = new Pending(null, null, 0);

    private final LockProvider provider;
    private final Events events;
    private final Outage outage;
    private final LinkedBlockingQueue<Pending> queue = new LinkedBlockingQueue<>();
    /** job@slot-millis of every run whose outcome is not written yet. */
    private final java.util.Set<String> unwritten = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private final Thread thread;

    /** Told the job of each slot handed over (a peer, or this worker, looks at its runs now). */
    private final java.util.function.Consumer<String> handedOver;

    Completer(LockProvider provider, Events events, Outage outage, java.util.function.Consumer<String> handedOver) {
        this.handedOver = handedOver;
        this.provider = provider;
        this.events = events;
        this.outage = outage;
        this.thread = new Thread(this::loop, "lockstep-complete");
        this.thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    /** Queues a run's outcome; it is written with the next batch. */
    void submit(SlotRun run, Outcome outcome) {
        unwritten.add(key(run.definition.name(), run.scheduledTime()));
        queue.add(new Pending(run, outcome, System.nanoTime()));
    }

    /**
     * Whether this worker still has to write the outcome of the job's run of {@code slot}: then
     * its lease may have run out while the store was unreachable, but the run is not dead, and this
     * worker must not recover or abandon its own finished run before the write lands.
     */
    boolean writing(String job, java.time.Instant slot) {
        return unwritten.contains(key(job, slot));
    }

    static String key(String job, java.time.Instant slot) {
        return job + "@" + slot.toEpochMilli();
    }

    /** Writes what is queued (retrying a few rounds more if the store fails), then stops the thread. */
    void close() {
        queue.add(STOP);
        try {
            thread.join(30_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void loop() {
        List<Pending> batch = new ArrayList<>();
        List<Pending> retry = new ArrayList<>();
        long retryAt = 0;
        long backoff = FIRST_BACKOFF_NANOS;
        boolean stopping = false;
        int failedSinceStop = 0;
        while (true) {
            batch.clear();
            try {
                Pending first = retry.isEmpty() ? queue.take()
                        : queue.poll(Math.max(0, retryAt - System.nanoTime()), TimeUnit.NANOSECONDS);
                if (first != null) {
                    batch.add(first);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            if (!batch.isEmpty() && batch.get(0) != STOP && !stopping && queue.size() < MAX_BATCH - 1) {
                java.util.concurrent.locks.LockSupport.parkNanos(GATHER_NANOS);
            }
            queue.drainTo(batch, MAX_BATCH - 1);
            stopping |= batch.remove(STOP);
            if (!retry.isEmpty() && (stopping || System.nanoTime() - retryAt >= 0)) {
                batch.addAll(retry);
                retry.clear();
            }
            if (!batch.isEmpty()) {
                if (send(batch)) {
                    backoff = FIRST_BACKOFF_NANOS;
                } else if (stopping && ++failedSinceStop >= GIVE_UP_AFTER_STOP) {
                    giveUp(batch);
                } else {
                    retry.addAll(batch);
                    retryAt = System.nanoTime() + backoff;
                    backoff = Math.min(MAX_BACKOFF_NANOS, backoff * 2);
                }
            }
            if (stopping && retry.isEmpty() && queue.isEmpty()) {
                return;
            }
        }
    }

    /** @return false when the store could not be reached (the batch is to be sent again) */
    private boolean send(List<Pending> batch) {
        List<Completion> completions = new ArrayList<>(batch.size());
        for (Pending p : batch) {
            completions.add(completion(p));
        }
        long sent = System.nanoTime();
        List<Boolean> owned;
        try {
            owned = provider.complete(completions);
            outage.succeeded();
        } catch (io.lockstep.scheduler.lock.PartiallyConfirmed e) {
            // Some shards confirmed their outcomes: settle those now; only the rest (this list, from
            // now on) is written again.
            outage.failed("complete", e);
            List<Pending> confirmed = new ArrayList<>();
            List<Boolean> answers = new ArrayList<>();
            List<Pending> again = new ArrayList<>();
            for (int i = 0; i < batch.size(); i++) {
                if (e.answers().get(i) == null) {
                    again.add(batch.get(i));
                } else {
                    confirmed.add(batch.get(i));
                    answers.add(e.answers().get(i));
                }
            }
            settle(confirmed, answers, (System.nanoTime() - sent) / 1_000_000);
            batch.clear();
            batch.addAll(again);
            return false;
        } catch (LockException e) {
            outage.failed("complete", e);
            return false;
        } catch (RuntimeException e) {
            events.error("tick_failed").addKeyValue("error", Events.describe(e)).setCause(e)
                    .log("unexpected failure writing outcomes; retrying");
            return false;
        }
        settle(batch, owned, (System.nanoTime() - sent) / 1_000_000);
        return true;
    }

    private static Completion completion(Pending p) {
        SlotRun run = p.run();
        long ran = run.firstStartNanos == 0 ? 0 : (p.endedNanos() - run.firstStartNanos) / 1_000_000;
        return new Completion(run.lease, p.outcome(), run.attempt(), ran, run.lastError, handOver(run, p.outcome()), run.fencingToken());
    }

    /**
     * Runs that ended after their slot was no longer theirs (their lease ran out and a peer
     * recovered or abandoned it, or a newer run replaced it): their outcomes go to the slots'
     * histories marked late, so the record never says a run was lost that finished. Best effort:
     * what cannot be written now is said so, and not retried.
     */
    private void recordLate(List<Pending> late) {
        List<Boolean> recorded;
        try {
            recorded = provider.recordLate(late.get(0).run().workerId(), late.stream().map(Completer::completion).toList());
        } catch (RuntimeException e) { // the store unreachable (LockException), or a bug: said so below
            recorded = late.stream().map(p -> false).toList();
        }
        for (int i = 0; i < late.size(); i++) {
            SlotRun run = late.get(i).run();
            Outcome outcome = late.get(i).outcome();
            events.metrics().late(run.definition.name(), outcome);
            events.warn("outcome_late").addKeyValue("job", run.definition.name()).addKeyValue("slot", run.scheduledTime().toString())
                    .addKeyValue("fencing_token", run.fencingToken()).addKeyValue("outcome", outcome.label())
                    .addKeyValue("recorded", recorded.get(i))
                    .log(recorded.get(i) ? "the run ended after its slot was no longer its own; its outcome is in the slot's history, marked late"
                            : "the run ended after its slot was no longer its own; its outcome could not be added to the slot's history");
        }
    }

    /** Outcomes the store confirmed: the leases are no longer watched, each is reported once. */
    private void settle(List<Pending> written, List<Boolean> owned, long durationMs) {
        List<Pending> late = new ArrayList<>();
        for (int i = 0; i < written.size(); i++) {
            Pending p = written.get(i);
            SlotRun run = p.run();
            run.watch().stop();
            unwritten.remove(key(run.definition.name(), run.scheduledTime()));
            boolean ours = owned.get(i);
            boolean handedBack = handOver(run, p.outcome()) || p.outcome() == Outcome.NOT_STARTED;
            events.info("slot_released").addKeyValue("job", run.definition.name())
                    .addKeyValue("slot", run.scheduledTime().toString()).addKeyValue("lock_name", run.lockName)
                    .addKeyValue("action", "release").addKeyValue("identifier", run.lease.token())
                    .addKeyValue("duration_ms", durationMs).addKeyValue("success", ours)
                    .addKeyValue("fencing_token", run.fencingToken()).addKeyValue("outcome", p.outcome().label())
                    .log(!ours ? "slot no longer ours (its lease ran out, or a newer run replaced it)"
                            : handedBack ? "slot handed back: it is run again (on a peer, or here)"
                            : p.outcome() == Outcome.MISSED ? "slot closed without a run (missed: " + ("limit".equals(run.missCode)
                                    ? "no permit of a limit it uses within its grace" : "it could not begin in order") + ")" : "slot released");
            if (ours && p.outcome() == Outcome.MISSED) {
                // Only now, once the store closed the claim: reported before, a claim whose closing never
                // landed (a crash, a partition) would read as the store's decision, and a peer may yet
                // rerun it once its lease ends.
                events.metrics().missed(run.definition.name(), run.missCode, 1);
                events.warn("slot_missed").addKeyValue("job", run.definition.name()).addKeyValue("slot", run.scheduledTime().toString())
                        .addKeyValue("lateness_ms", run.storeNowMillis(p.endedNanos(), () -> 0L) - run.scheduledTime().toEpochMilli())
                        .addKeyValue("reason", run.lastError).addKeyValue("code", run.missCode).addKeyValue("lock_name", run.lockName)
                        .log("slot missed");
            }
            if (!ours && p.outcome() != Outcome.NOT_STARTED && p.outcome() != Outcome.MISSED) {
                late.add(p);
            }
            if (ours) {
                events.metrics().leaseHeld(run.definition.name(), System.nanoTime() - run.claimSentNanos);
                if (handedBack) {
                    handedOver.accept(run.definition.name());
                }
            }
        }
        if (!late.isEmpty()) {
            recordLate(late);
        }
    }

    /**
     * Whether the slot goes to a peer instead of being closed: the run lost its lease or was cut off
     * by the worker's stop, and the job says {@code recover: rerun} (a run that never started always
     * goes back, see {@link Outcome#NOT_STARTED}).
     */
    static boolean handOver(SlotRun run, Outcome outcome) {
        return (outcome == Outcome.LEASE_LOST || outcome == Outcome.INTERRUPTED) && run.definition.recover() == Recover.RERUN;
    }

    private void giveUp(List<Pending> batch) {
        for (Pending p : batch) {
            SlotRun run = p.run();
            run.watch().stop();
            unwritten.remove(key(run.definition.name(), run.scheduledTime()));
            events.error("outcome_unrecorded").addKeyValue("job", run.definition.name())
                    .addKeyValue("slot", run.scheduledTime().toString()).addKeyValue("lock_name", run.lockName)
                    .addKeyValue("identifier", run.lease.token()).addKeyValue("fencing_token", run.fencingToken())
                    .addKeyValue("outcome", p.outcome().label()).addKeyValue("reason", "lock store unreachable while the worker shut down")
                    .log("outcome could not be written before shutdown; the slot's lease runs out and its recover policy applies");
        }
    }
}
