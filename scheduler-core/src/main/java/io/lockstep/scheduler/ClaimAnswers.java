package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.ClaimResult;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.LockProvider;
import io.lockstep.scheduler.lock.Watchdog;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The store's answer to each slot of a claim batch, for {@link Claimer}: what it moves the slot on
 * to ({@link DueSlot}'s transitions) and what else it sets going. A win becomes a {@link SlotRun}
 * handed to the {@link Runner} or, claimed ahead, to the {@link Starter}; a busy, early or split
 * answer asks again later; no answer at all (an outage, or one Redlock master) asks again with the
 * same token while the slot can still start, and reports it missed once it cannot; any other answer
 * decides the slot. The events and metrics of each answer are built by {@link ClaimEvents}.
 *
 * <p>Apart from the Claimer because that class decides what goes into a batch (which slots, with
 * which job threads) and sends it; this one only reads what came back, one slot at a time. The job
 * thread a slot reserved is the Claimer's business too, settled before an answer comes here.
 * Called only from the tick thread.
 */
final class ClaimAnswers {

    /**
     * The longest wait between asks of a slot answered {@code BUSY}: well within the turn a rerun
     * holds ({@link ClaimResult#TURN_HOLD}), so that a live rerun never loses it to a later slot.
     */
    static final Duration BUSY_RETRY_MAX = ClaimResult.TURN_HOLD.dividedBy(2).minusMillis(500);

    /** The wait before asking again after the {@code n}th {@code BUSY} answer in a row (from 0): 250 ms doubling to {@link #BUSY_RETRY_MAX}. */
    static Duration busyDelay(int n) {
        return n >= 4 ? BUSY_RETRY_MAX : Duration.ofMillis(Math.min(BUSY_RETRY_MAX.toMillis(), Claimer.RETRY_DELAY.toMillis() << n));
    }

    /**
     * A backfill's slot refused busy (its job's lease held, or the job paused), or a scheduled slot
     * refused busy because a backfill's run holds the lease, asks again this soon: a backfill's runs
     * are mostly short, and a scheduled slot waits for one only within its grace.
     */
    static final Duration BACKFILL_BUSY_DELAY = Duration.ofMillis(50);
    /**
     * A backfill's slot asks again after a random wait in the upper half of 50 ms doubling to 1 s: a
     * fixed wait would lock in step with a per-second job's own runs and find the lease held every time.
     */
    static Duration backfillBusyDelay(int n) {
        long cap = Math.min(1_000, BACKFILL_BUSY_DELAY.toMillis() << Math.min(n, 5));
        return Duration.ofMillis(cap / 2 + ThreadLocalRandom.current().nextLong(cap / 2 + 1));
    }

    /** Redlock: a claim without a majority is asked again after a random wait between these. */
    static final Duration NO_QUORUM_RETRY_MIN = Duration.ofMillis(5);
    static final Duration NO_QUORUM_RETRY_MAX = Duration.ofMillis(60);

    private final LockProvider provider;
    private final String workerId;
    private final ClusterClock clock;
    private final Events events;
    /** The events and metrics of the store's answers. */
    private final ClaimEvents claimEvents;
    private final SlotQueue queue;
    private final Runner runner;
    private final Starter starter;

    ClaimAnswers(LockProvider provider, String workerId, ClusterClock clock, Events events, SlotQueue queue, Runner runner,
            Starter starter) {
        this.provider = provider;
        this.workerId = workerId;
        this.clock = clock;
        this.events = events;
        this.claimEvents = new ClaimEvents(events);
        this.queue = queue;
        this.runner = runner;
        this.starter = starter;
    }

    /**
     * The store did not answer, so each request may or may not have been carried out (fail closed:
     * nothing starts). Each is asked again with the same token, which gets the same answer. A slot
     * that can no longer start is reported missed now and then disowned in the store, so that an
     * earlier claim of ours that won after all cannot leave a record that says otherwise.
     */
    void unanswered(List<DueSlot> batch, LockException e) {
        Instant after = clock.now();
        for (DueSlot d : batch) {
            claimEvents.unanswered(d);
            if (!d.recordOnly() && after.isBefore(d.startDeadline())) {
                d.retryAt(SlotQueue.earliest(after.plus(Claimer.RETRY_DELAY), d.startDeadline()));
                continue;
            }
            if ((d.skip() || d.watch()) && d.stage() != DueSlot.Stage.REPORTED && after.isBefore(d.recordDeadline())) {
                // A calendar's skip (every worker sends it) or a watch of a job another worker runs: nothing starts or
                // is owed now, so ask again while the store can still tell, and report only if it never answers.
                d.retryAt(after.plus(Claimer.RETRY_DELAY));
                continue;
            }
            if (d.stage() != DueSlot.Stage.REPORTED && !d.recovery()) {
                String unreachable = "lock store unreachable: " + e.getMessage();
                if (d.skip()) {
                    claimEvents.excluded(d, null, unreachable + "; decided by this worker alone");
                } else if (d.watch()) {
                    claimEvents.missed(d, Duration.between(d.slot, after).toMillis(), "could not learn whether a worker with the job's "
                            + "labels decided it: " + unreachable, null, "outage");
                } else {
                    claimEvents.missed(d, Duration.between(d.slot, after).toMillis(),
                            d.missReason() == null ? unreachable : d.missReason() + "; " + unreachable, null,
                            d.missCode() == null ? "outage" : d.missCode());
                }
                d.reported("lock store unreachable", "outage");
                queue.looks().disowning(d);
            }
            if (after.isBefore(d.recordDeadline()) || d.recovery()) {
                d.retryAt(after.plus(Claimer.RETRY_DELAY));
            } else {
                d.decided(); // the store never answered while it could still tell
            }
        }
    }

    /**
     * The store's answer {@code result} to {@code request}, the claim of {@code d} sent at
     * {@code sentNanos} and answered at {@code receivedNanos}: the slot moves on, its event is
     * logged, and a win is handed to the Runner or the Starter.
     */
    void handle(DueSlot d, ClaimRequest request, ClaimResult result, long sentNanos, long receivedNanos, long durationMs) {
        JobDefinition def = d.definition();
        Lease lease = request.lease();
        String lockName = provider.lockName(lease);
        long lateness = result.serverTimeMillis() - d.slot.toEpochMilli();
        if (request.staged() && d.kind() == DueSlot.Kind.CLAIM && result.status() != ClaimResult.Status.EARLY
                && result.status() != ClaimResult.Status.UNANSWERED && result.status() != ClaimResult.Status.NO_QUORUM) {
            // How much time our claims ahead left before their slot, once this worker had their answers in
            // hand (the reply's way back and its handling count: a run cannot start before both).
            long spare = d.slot.toEpochMilli() - result.serverTimeMillis() - (System.nanoTime() - receivedNanos) / 1_000_000;
            queue.lead().observe(d.slot.toEpochMilli(), spare);
        }
        // A staged claim we just won is itself the job's earliest lease end (its short lease, past the
        // slot): no look at it is needed, its start or its hand-back settles it. Any other answer tells
        // us when to look for a run that died.
        // (A claim ahead that is the run's start holds the run's full lease: a look then, as after a claim at the slot.)
        boolean ownStaged = result.status() == ClaimResult.Status.CLAIMED && request.staged() && !result.started()
                && result.runningUntilMillis() >= d.slot.toEpochMilli();
        if (result.status() != ClaimResult.Status.EARLY && result.status() != ClaimResult.Status.UNANSWERED && !ownStaged) {
            queue.looks().noteRuns(def.name(), result.runningUntilMillis(), result.serverTimeMillis());
        }
        if (d.stage() == DueSlot.Stage.REPORTED && result.status() != ClaimResult.Status.EARLY
                && result.status() != ClaimResult.Status.BUSY && result.status() != ClaimResult.Status.NO_QUORUM
                && result.status() != ClaimResult.Status.UNANSWERED) {
            // Reported missed while the store was unreachable; this answer only settles the record.
            claimEvents.settled(d, result, lockName);
            d.decided();
            return;
        }
        d.answered(result.status());
        claimEvents.answered(d, request, result, lockName, lateness, durationMs); // counted, and told when decided
        switch (result.status()) {
            case CLAIMED -> {
                SlotRun run = new SlotRun(def, d.job.job(), lease, lockName, result.fencingToken(), workerId, sentNanos, d.manual,
                        request.mode() == ClaimRequest.Mode.RECOVER || request.mode() == ClaimRequest.Mode.ABANDON,
                        d.kind() == DueSlot.Kind.CATCH_UP, provider);
                run.backfill = d.backfill;
                run.startAtNanos = receivedNanos + result.startDelayMillis(d.slot) * 1_000_000;
                run.storeClock(result.serverTimeMillis() * 1_000, sentNanos, receivedNanos, d.asks.askedSinceNanos());
                // Moved on before the hand-off: should anything below throw, unhandled() must not free the
                // thread the run now owns nor ask the store again (the same token wins again: a second run).
                d.won(request.staged());
                if (request.staged()) {
                    // Made ahead: the Starter hands it to the pool at its slot. The grace's end counted from
                    // our send against the store's time at the reply, so never later than it is (the store's
                    // clock read at most serverTime when we sent).
                    run.graceEndsNanos = sentNanos + (d.slot.toEpochMilli() + d.grace().toMillis() - result.serverTimeMillis()) * 1_000_000;
                    runner.staged(run);
                    if (result.started()) {
                        starter.submitStarted(run, sentNanos); // decided within the start window: the run's start
                    } else {
                        // Staged: a short lease, until the slot plus STAGED_MARGIN by the store's clock, counted
                        // the same way; the Starter asks the store to start it just before the slot.
                        long leaseMillis = d.slot.toEpochMilli() + ClaimRequest.STAGED_MARGIN.toMillis() - result.serverTimeMillis();
                        starter.submit(run, sentNanos + Watchdog.validity(Duration.ofMillis(Math.max(0, leaseMillis))).toNanos());
                    }
                } else {
                    runner.start(run, sentNanos);
                }
            }
            case BUSY -> {
                // Another run of the job holds its exclusive lease. A rerun so answered holds the job's
                // next turn in the store (ClaimResult.TURN_HOLD), so later slots yield to it once the
                // lease is free: it can back off without missing the gap between back-to-back runs.
                d.asks.undecided();
                // A catch-up takes no turn (only reruns do): it keeps asking every 250 ms to catch the gaps.
                // A backfill's slot: 50 ms doubling to 1 s (a long run, or a pause, is not polled 20 times a second).
                d.retryAt(clock.now().plus(d.kind() == DueSlot.Kind.BACKFILL ? backfillBusyDelay(d.asks.busyAnswered())
                        : d.kind() == DueSlot.Kind.CLAIM ? BACKFILL_BUSY_DELAY
                        : d.kind() == DueSlot.Kind.CATCH_UP ? Claimer.RETRY_DELAY : busyDelay(d.asks.busyAnswered())));
                return;
            }
            case UNANSWERED -> {
                // Its master alone failed (the others answered): as an outage, for this slot only.
                unanswered(List.of(d), new LockException(provider.describe(), "the master that holds job " + def.name()
                        + "'s keys did not answer", null));
                return;
            }
            case NO_QUORUM -> {
                noQuorum(d, lateness, lockName);
                return;
            }
            case EARLY -> {
                d.asks.undecided();
                // Our clock runs ahead of the store's, or a claim ahead found the job paused or its
                // lease held: come back when the store's clock reaches the moment it can be decided.
                long at = d.slot.toEpochMilli() - request.ahead().toMillis();
                if (result.serverTimeMillis() >= at) {
                    at = d.slot.toEpochMilli(); // it could be claimed ahead but not won outright: decide it at the slot
                }
                d.retryAt(clock.now().plusMillis(Math.max(1, at - result.serverTimeMillis())));
                return;
            }
            default -> { } // taken, skipped, paused, missed, superseded, unconfirmed, stale, abandoned: told above
        }
        if (result.status() != ClaimResult.Status.CLAIMED) {
            d.decided(); // (a claim won moved on above, before its hand-off)
        }
    }

    /**
     * Redlock's masters did not agree on the slot (what we took was given back on all of them): ask
     * again after a random delay, so that racing workers do not split the vote again, while the
     * slot can still start. Past that it is reported missed here and now (as during an outage: every
     * worker in the same position reports it, none stays silent), and only the miss is recorded,
     * by a majority like any decision, while the slot's record could still tell.
     */
    private void noQuorum(DueSlot d, long lateness, String lockName) {
        d.asks.newToken();
        Instant now = clock.now();
        Instant again = d.recovery() ? recoveryRetry(d, now) : now.plusMillis(ThreadLocalRandom.current().nextLong(NO_QUORUM_RETRY_MIN.toMillis(),
                NO_QUORUM_RETRY_MAX.toMillis() + 1));
        events.debug("slot_no_quorum").addKeyValue("job", d.definition().name()).addKeyValue("slot", d.slot.toString())
                .addKeyValue("lock_name", lockName).addKeyValue("retry_at", again.toString())
                .log("no majority of the redlock masters agreed; released everywhere, asking again");
        if (d.recovery()) {
            if (again.isBefore(d.deadline())) {
                d.retryAt(again);
            } else {
                recoveryDeferred(d, now);
            }
            return;
        }
        if (!d.recordOnly() && again.isBefore(d.startDeadline())) {
            d.retryAt(again);
            return;
        }
        if ((d.skip() || d.watch()) && d.stage() != DueSlot.Stage.REPORTED && again.isBefore(d.recordDeadline())) {
            d.retryAt(again); // as for an unanswered one: nothing is owed now; ask again while the masters can tell
            return;
        }
        if (d.stage() != DueSlot.Stage.REPORTED) {
            String reason = "no majority of the redlock masters agreed on the slot within misfireGrace";
            if (d.skip()) {
                claimEvents.excluded(d, lockName, reason + "; decided by this worker alone");
            } else {
                claimEvents.missed(d, lateness, d.missReason() == null ? reason : d.missReason() + "; " + reason, lockName,
                        d.missCode() == null ? "no_quorum" : d.missCode());
            }
            d.reported(reason, "no_quorum");
        }
        if (again.isBefore(d.recordDeadline())) {
            d.retryAt(again); // settle the record: a majority records the miss
        } else {
            d.decided();
        }
    }

    /**
     * When to ask again for a recovery the masters split on (each recoverer gave back what it wrote,
     * so the dead run is as it was): after a random wait that grows with the time spent on it, from
     * {@link Claimer#RETRY_DELAY} up to half of that time more, so that two recoverers that split once
     * drift apart.
     */
    private static Instant recoveryRetry(DueSlot d, Instant now) {
        long spent = Math.max(0, d.definition().lease().toMillis() - Duration.between(now, d.deadline()).toMillis());
        return now.plusMillis(Claimer.RETRY_DELAY.toMillis() + ThreadLocalRandom.current().nextLong(Claimer.RETRY_DELAY.toMillis() + spent / 2 + 1));
    }

    /**
     * A recovery still split at its deadline (a lease after the look that found the dead run): it
     * ends here, and the job's runs are looked at again a lease later, when a new recovery races
     * for the dead run (a master that was down may be back by then).
     */
    private void recoveryDeferred(DueSlot d, Instant now) {
        Instant look = now.plus(d.definition().lease());
        events.warn("slot_recovery_deferred").addKeyValue("job", d.definition().name()).addKeyValue("slot", d.slot.toString())
                .addKeyValue("look_at", look.toString())
                .log("no majority of the redlock masters agreed on the recovery of a run that lost its lease within a lease;"
                        + " what it wrote was given back, looking again then");
        queue.looks().lookNoLaterThan(d.definition().name(), look);
        d.decided();
    }
}
