package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.LockProvider;
import io.lockstep.scheduler.lock.StartReply;
import io.lockstep.scheduler.lock.StartRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The start round trip of staged claims, for {@link Starter}: asks the store to start the runs
 * claimed ahead whose start is due ({@link Starter#LEAD} before their instant), all of them in one
 * call, and acts on each answer. Apart from the Starter because that is a conversation of its own
 * with the store, with its own ends; the Starter only decides when it is due and hands what the
 * store started to the pool at its instant.
 *
 * <p>The store checks by its own clock that the claim is still ours, that the slot's grace has not
 * passed and that the job is not paused, then records the run as started under the job's full
 * lease. A run it started goes back to the Starter: to the pool now if its instant has come, else
 * queued for it. A start that could not reach the store (or whose master did not answer) is sent
 * again while the short lease lasts, asking the same question. Every other end is reported once
 * and the job thread freed:
 * <ul>
 *   <li>late (the worker stalled past the grace): {@code slot_missed}, recorded by the store;</li>
 *   <li>paused since the claim: {@code slot_skipped}, recorded by the store;</li>
 *   <li>split (Redlock's masters answered with no majority, say paused on one and started on
 *       another): {@code slot_missed} (code {@code no_quorum}), recorded missed by the store wherever
 *       the claim was ours: nobody else would report it;</li>
 *   <li>lost (a peer took the slot), unconfirmed (fewer replicas than {@code waitReplicas}
 *       acknowledged the start), or the store unreachable until the short lease ran out:
 *       {@code lease_lost}, and the claim is handed back unstarted, so that a peer runs it within
 *       its grace whatever the recover policy.</li>
 * </ul>
 * Called only from the Starter's thread ({@code lockstep-start}); the runs it is handed are that
 * thread's until they are requeued or done.
 */
final class StagedStarts {

    /** How soon a start that could not reach the store is sent again (while the short lease lasts). */
    private static final long RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(25);

    /** Puts a run back in the Starter's queue, due at {@code atNanos} (monotonic): its start instant, or a retry. */
    @FunctionalInterface
    interface Requeue {
        void at(Staged s, long atNanos);
    }

    private final LockProvider provider;
    private final Runner runner;
    private final StartEvents startEvents;
    private final Outage outage;
    private final Requeue requeue;

    StagedStarts(LockProvider provider, Runner runner, StartEvents startEvents, Outage outage, Requeue requeue) {
        this.provider = provider;
        this.runner = runner;
        this.startEvents = startEvents;
        this.outage = outage;
        this.requeue = requeue;
    }

    /**
     * Sends the starts of {@code toStart} in one round trip and acts on each answer; a run the store
     * started whose instant has come goes to {@code ready} (the Starter's check before the pool),
     * one whose instant is still ahead is requeued for it.
     */
    void send(List<Staged> toStart, Consumer<Staged> ready) {
        List<StartRequest> requests = new ArrayList<>(toStart.size());
        for (Staged s : toStart) {
            s.tried = true;
            requests.add(new StartRequest(s.run.lease, s.run.definition.misfireGrace()));
        }
        long sent = System.nanoTime();
        List<StartReply> answers;
        try {
            answers = provider.start(requests);
            outage.succeeded();
        } catch (RuntimeException e) {
            LockException failure = outage.failedCall("start", e);
            long retryAt = System.nanoTime() + RETRY_NANOS;
            for (Staged s : toStart) {
                retryOrGiveUp(s, retryAt, failure.getMessage());
            }
            return;
        }
        long now = System.nanoTime();
        for (int i = 0; i < toStart.size(); i++) {
            Staged s = toStart.get(i);
            SlotRun run = s.run;
            StartReply reply = answers.get(i);
            switch (reply.answer()) {
                case STARTED -> {
                    s.started = true;
                    s.startSentNanos = sent;
                    // The start's reply is the latest reading of the store's clock (read last, just
                    // before the slot): the run begins by it, which ends at or after the slot by that
                    // clock, and within a fraction of a millisecond of it. Not the earlier of it and
                    // the claim's: a clock stepped back since the claim would make the claim's early.
                    long delay = reply.startDelayNanos(run.scheduledTime());
                    if (delay != Long.MAX_VALUE) {
                        run.startAtNanos = now + delay;
                        run.storeClock(reply.serverTimeMicros(), sent, now, sent);
                    }
                    if (run.startAtNanos - now <= 0) {
                        ready.accept(s);
                    } else {
                        requeue.at(s, run.startAtNanos);
                    }
                }
                case UNANSWERED -> retryOrGiveUp(s, now + RETRY_NANOS, "the master that holds the claim did not answer");
                case LATE -> {
                    s.done = true;
                    startEvents.late(run);
                    runner.notStarted(run, false);
                }
                case PAUSED -> {
                    s.done = true;
                    startEvents.paused(run);
                    runner.notStarted(run, false);
                }
                case SPLIT -> {
                    s.done = true;
                    startEvents.split(run);
                    runner.notStarted(run, false); // recorded missed by the store where it was ours: nothing to hand back
                }
                case LOST -> {
                    s.done = true;
                    leaseLost(run, "the claim made ahead was no longer this worker's at its start (a peer took the slot over)");
                }
                case UNCONFIRMED -> {
                    s.done = true;
                    leaseLost(run, "fewer replicas than redis.waitReplicas acknowledged its start in time (a failover could lose it)");
                }
            }
        }
    }

    /** Sends the start again at {@code retryAtNanos} while the short lease lasts; past it, the claim is lost. */
    private void retryOrGiveUp(Staged s, long retryAtNanos, String why) {
        if (retryAtNanos - s.leaseEndsNanos < 0) {
            requeue.at(s, retryAtNanos); // the start may or may not have landed: asking again gets the same answer
        } else {
            s.done = true;
            leaseLost(s.run, "the claim's short lease ran out before its start could be recorded (" + why + ")");
        }
    }

    /** Reported {@code lease_lost}, and handed back unstarted: the store is told it never started (a peer runs it). */
    private void leaseLost(SlotRun run, String reason) {
        startEvents.leaseLost(run, reason);
        runner.notStarted(run, true);
    }
}
