package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.ClaimResult;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.LockProvider;
import io.lockstep.scheduler.lock.Watchdog;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashSet;
import java.util.Set;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Races the other workers for due slots: one batch per round trip, no more slots than this worker
 * has free job threads, and the store's answer to each slot turned into its event (and, for a win,
 * a run handed to the {@link Runner}). Called only from the tick thread.
 *
 * <p>This class makes the decisions: which slots are asked for and with which threads, what is
 * started, asked again, or decided and forgotten. Each decision is one move of the slot's
 * {@link DueSlot.Stage} (a transition on {@link DueSlot}); the slots of a batch then go back to the
 * {@link SlotQueue} together, once ({@link SlotQueue#place}), which files each by its stage. The
 * events and metrics of each answer ({@code slot_claimed}, {@code slot_missed},
 * {@code lockstep.claims}, ...) are built by {@link ClaimEvents}.
 */
final class Claimer {

    /** How soon a claim that failed for want of the store, or of a free thread, is tried again. */
    static final Duration RETRY_DELAY = Duration.ofMillis(250);
    /**
     * The longest wait between asks of a slot answered {@code BUSY}: well within the turn a rerun
     * holds ({@link ClaimResult#TURN_HOLD}), so that a live rerun never loses it to a later slot.
     */
    static final Duration BUSY_RETRY_MAX = ClaimResult.TURN_HOLD.dividedBy(2).minusMillis(500);

    /** The wait before asking again after the {@code n}th {@code BUSY} answer in a row (from 0): 250 ms doubling to {@link #BUSY_RETRY_MAX}. */
    static Duration busyDelay(int n) {
        return n >= 4 ? BUSY_RETRY_MAX : Duration.ofMillis(Math.min(BUSY_RETRY_MAX.toMillis(), RETRY_DELAY.toMillis() << n));
    }
    /** At most this many claim round trips per tick when lost races free reserved threads. */
    private static final int MAX_CLAIM_ROUNDS = 4;
    private static final SecureRandom TOKENS = new SecureRandom();
    /** Redlock: a claim without a majority is asked again after a random wait between these. */
    static final Duration NO_QUORUM_RETRY_MIN = Duration.ofMillis(5);
    static final Duration NO_QUORUM_RETRY_MAX = Duration.ofMillis(60);

    private final LockProvider provider;
    private final String workerId;
    private final JobThreads threads;
    private final ClusterClock clock;
    private final Events events;
    /** The events and metrics of the store's answers. */
    private final ClaimEvents claimEvents;
    private final Outage outage;
    private final SlotQueue queue;
    private final Runner runner;
    private final Preference preference;
    private final Starter starter;

    Claimer(LockProvider provider, String workerId, JobThreads threads, ClusterClock clock, Events events,
            Outage outage, SlotQueue queue, Runner runner, Starter starter, Preference preference) {
        this.preference = preference;
        this.starter = starter;
        this.provider = provider;
        this.workerId = workerId;
        this.threads = threads;
        this.clock = clock;
        this.events = events;
        this.claimEvents = new ClaimEvents(events);
        this.outage = outage;
        this.queue = queue;
        this.runner = runner;
    }

    /**
     * Claims what is due; when lost races free threads that were reserved, claims again at once
     * for the slots that had to wait, so that no slot waits while some worker is free. What still
     * finds no thread waits for one, at the longest until its grace ends.
     */
    void claimInRounds(List<DueSlot> due) {
        List<DueSlot> deferred = claim(preference.sift(due, queue, clock.now()));
        for (int round = 1; round < MAX_CLAIM_ROUNDS && !deferred.isEmpty() && threads.anyFree(); round++) {
            deferred = claim(deferred);
        }
        queue.place(deferred, clock.now()); // each WAITING_THREAD
    }

    /**
     * Claims one batch: at most as many slots as there are free threads, the rest left to peers.
     * Slots go oldest first, and a job's newer slot never goes ahead of an older one that has to
     * wait (guarantee 10: a job's slots start, and take fencing tokens, in slot order).
     *
     * @return the slots that found no free thread and may still start before their deadline
     *     ({@link DueSlot.Stage#WAITING_THREAD}); the others go back to the queue here
     */
    private List<DueSlot> claim(List<DueSlot> due) {
        List<DueSlot> deferred = new ArrayList<>();
        if (due.isEmpty()) {
            return deferred;
        }
        Collections.shuffle(due); // of slots due at the same moment, which a busy worker takes is random
        due.sort(Comparator.comparing(d -> d.slot)); // stable: oldest first
        Instant now = clock.now();
        int free = threads.free();
        Set<String> held = new HashSet<>(); // jobs with an older slot waiting in this batch
        List<DueSlot> batch = new ArrayList<>(due.size());
        List<ClaimRequest> requests = new ArrayList<>(due.size());
        List<Boolean> reservations = new ArrayList<>(due.size());
        int reserved = 0;
        boolean allOwn = true;
        for (DueSlot d : due) {
            String job = d.definition().name();
            boolean reserves = false;
            if (d.mode() == ClaimRequest.Mode.CATCH_UP && !now.isBefore(d.startDeadline())) {
                // The store applies no grace to a catch-up: past its deadline only its miss is
                // recorded, whether or not a thread is free (DueSlot#startDeadline).
                d.missOnly("could not be caught up: no free job thread or the job's lease was held", "catch_up");
            }
            if (d.needsThread()) {
                boolean ordered = d.kind() != DueSlot.Kind.RECOVER && !d.manual;
                boolean behindOlder = ordered && (held.contains(job) || queue.waitingBefore(job, d.slot)
                        || (d.kind() != DueSlot.Kind.CATCH_UP && queue.catchingUp(job)));
                if (!behindOlder && reserved < free) {
                    reserved++;
                    reserves = true;
                } else if (now.isAfter(d.startDeadline())) {
                    // It cannot start any more: only make sure the miss is recorded.
                    d.missOnly(behindOlder ? "an older slot of the job had not started within misfireGrace"
                            : d.mode() == ClaimRequest.Mode.CATCH_UP ? "could not be caught up: no free job thread or the job's lease was held"
                            : "no free job thread on any worker within misfireGrace",
                            behindOlder ? "order" : d.mode() == ClaimRequest.Mode.CATCH_UP ? "catch_up" : "no_thread");
                } else {
                    // No thread to start it now (or an older slot of the job waits): peers may take it;
                    // try again when a thread frees up.
                    d.awaitThread();
                    deferred.add(d);
                    if (ordered) {
                        held.add(job);
                    }
                    continue;
                }
            }
            d.toStore();
            JobDefinition def = d.definition();
            Lease lease = new Lease(def.name(), d.slot, d.token(Claimer::newToken), def.lease(), def.exclusive());
            Duration ahead = d.ahead(); // only a slot shared out to us, on its way to start
            allOwn &= ahead.toMillis() > 0;
            requests.add(new ClaimRequest(lease, workerId, d.grace(), d.mode(), def.overlap() == Overlap.REPLACE, d.manual,
                    ahead, null, d.mode() == ClaimRequest.Mode.MISS_ONLY ? d.missCode() : null));
            reservations.add(reserves);
            batch.add(d);
        }
        if (requests.isEmpty()) {
            return deferred;
        }
        if (!allOwn) {
            spreadDelay(); // before reserving: the delay reflects how busy we were, not this batch
        }
        threads.take(reserved);
        long sent = System.nanoTime();
        batch.forEach(d -> d.asked(sent));
        List<ClaimResult> results;
        try {
            results = provider.claim(requests);
            outage.succeeded();
        } catch (RuntimeException e) {
            // A LockException, or anything else the store threw (a client bug): either way nobody
            // knows what happened, so nothing starts and every slot is asked again, never dropped.
            threads.release(reserved);
            LockException failure = outage.failedCall("claim", e);
            unanswered(batch, failure);
            queue.place(batch, clock.now());
            return deferred;
        }
        long received = System.nanoTime();
        long durationMs = (received - sent) / 1_000_000;
        int handled = 0;
        boolean holds = false; // whether the slot being handled holds a job thread
        try {
            for (; handled < batch.size(); handled++) {
                DueSlot d = batch.get(handled);
                ClaimRequest request = requests.get(handled);
                ClaimResult result = results.get(handled);
                boolean claimed = result.status() == ClaimResult.Status.CLAIMED;
                if (!claimed && reservations.get(handled)) {
                    threads.release(1);
                    // Its thread is free again without a run ending: without this, the slots still
                    // waiting for a thread would wait for the next run to end, or their deadline
                    // (a busy worker whose first waiting slot was stale, taken or skipped).
                    queue.threadFreed();
                } else if (claimed && !reservations.get(handled)) {
                    threads.take(1); // an earlier, ambiguous claim of ours had won after all
                }
                holds = claimed;
                try {
                    handle(d, request, result, sent, received, durationMs);
                } catch (RuntimeException e) {
                    // One answer we could not deal with (a bug, a misbehaving dependency) costs only
                    // its own slot a retry: the rest of the batch is handled as answered.
                    unhandled(d, claimed, e);
                }
                holds = false;
            }
        } finally {
            // Reached only short of the end by an Error: the slot it struck and every later one are
            // asked again, and the threads reserved for them freed, never left in CLAIMING for good.
            for (int i = handled; i < batch.size(); i++) {
                unhandled(batch.get(i), i == handled ? holds : reservations.get(i), null);
            }
            queue.place(batch, clock.now()); // each moved on by its answer (or its retry), filed once
        }
        return deferred;
    }

    /**
     * A slot whose answer was not dealt with ({@code e}: what went wrong; null when it was never
     * looked at): unless it already moved on (handed to a job thread, decided, queued), it is asked
     * again shortly with the same token, which gets the same answer (a claim we won is won again,
     * and runs once), and the job thread it held ({@code holdsThread}) is freed: a run is handed to
     * the {@link Runner} or the {@link Starter} only together with its move to STAGED or RUNNING,
     * and from then on they free its thread.
     */
    private void unhandled(DueSlot d, boolean holdsThread, RuntimeException e) {
        if (e != null) {
            events.error("tick_failed").addKeyValue("job", d.definition().name()).addKeyValue("slot", d.slot.toString())
                    .addKeyValue("error", Events.describe(e)).setCause(e)
                    .log("unexpected failure handling the store's answer to a claim; the slot is asked again");
        }
        DueSlot.Stage stage = d.stage();
        if (stage != DueSlot.Stage.CLAIMING && stage != DueSlot.Stage.MISS_ONLY && stage != DueSlot.Stage.REPORTED) {
            return; // moved on before the failure: filed where its stage says
        }
        if (holdsThread) {
            threads.release(1);
            queue.threadFreed();
        }
        d.retryAt(clock.now().plus(RETRY_DELAY));
    }

    /**
     * The store did not answer, so each request may or may not have been carried out (fail closed:
     * nothing starts). Each is asked again with the same token, which gets the same answer. A slot
     * that can no longer start is reported missed now and then disowned in the store, so that an
     * earlier claim of ours that won after all cannot leave a record that says otherwise.
     */
    private void unanswered(List<DueSlot> batch, LockException e) {
        Instant after = clock.now();
        for (DueSlot d : batch) {
            claimEvents.unanswered(d);
            if (d.mode() != ClaimRequest.Mode.MISS_ONLY && after.isBefore(d.startDeadline())) {
                d.retryAt(SlotQueue.earliest(after.plus(RETRY_DELAY), d.startDeadline()));
                continue;
            }
            if (d.stage() != DueSlot.Stage.REPORTED && !d.recovery()) {
                String unreachable = "lock store unreachable: " + e.getMessage();
                claimEvents.missed(d, Duration.between(d.slot, after).toMillis(),
                        d.missReason() == null ? unreachable : d.missReason() + "; " + unreachable, null,
                        d.missCode() == null ? "outage" : d.missCode());
                d.reported("lock store unreachable", "outage");
                queue.disowning(d);
            }
            if (after.isBefore(d.recordDeadline()) || d.recovery()) {
                d.retryAt(after.plus(RETRY_DELAY));
            } else {
                d.decided(); // the store never answered while it could still tell
            }
        }
    }

    private void handle(DueSlot d, ClaimRequest request, ClaimResult result, long sentNanos, long receivedNanos, long durationMs) {
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
            queue.noteRuns(def.name(), result.runningUntilMillis(), result.serverTimeMillis());
        }
        if (d.stage() == DueSlot.Stage.REPORTED && result.status() != ClaimResult.Status.EARLY
                && result.status() != ClaimResult.Status.BUSY && result.status() != ClaimResult.Status.NO_QUORUM
                && result.status() != ClaimResult.Status.UNANSWERED) {
            // Reported missed while the store was unreachable; this answer only settles the record.
            claimEvents.settled(d, result, lockName);
            d.decided();
            return;
        }
        claimEvents.answered(d, request, result, lockName, lateness, durationMs); // counted, and told when decided
        switch (result.status()) {
            case CLAIMED -> {
                SlotRun run = new SlotRun(def, d.job.job(), lease, lockName, result.fencingToken(), workerId, sentNanos, d.manual,
                        request.mode() == ClaimRequest.Mode.RECOVER || request.mode() == ClaimRequest.Mode.ABANDON,
                        d.kind() == DueSlot.Kind.CATCH_UP, provider);
                run.startAtNanos = receivedNanos + result.startDelayMillis(d.slot) * 1_000_000;
                run.storeClock(result.serverTimeMillis() * 1_000, sentNanos, receivedNanos, d.askedSinceNanos());
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
                d.undecided();
                // A catch-up takes no turn (only reruns do): it keeps asking every 250 ms to catch the gaps.
                d.retryAt(clock.now().plus(d.kind() == DueSlot.Kind.CATCH_UP ? RETRY_DELAY : busyDelay(d.busyAnswered())));
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
                d.undecided();
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
        d.newToken();
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
        if (d.mode() != ClaimRequest.Mode.MISS_ONLY && again.isBefore(d.startDeadline())) {
            d.retryAt(again);
            return;
        }
        if (d.stage() != DueSlot.Stage.REPORTED) {
            String reason = "no majority of the redlock masters agreed on the slot within misfireGrace";
            claimEvents.missed(d, lateness, d.missReason() == null ? reason : d.missReason() + "; " + reason, lockName,
                    d.missCode() == null ? "no_quorum" : d.missCode());
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
     * {@link #RETRY_DELAY} up to half of that time more, so that two recoverers that split once
     * drift apart.
     */
    private static Instant recoveryRetry(DueSlot d, Instant now) {
        long spent = Math.max(0, d.definition().lease().toMillis() - Duration.between(now, d.deadline()).toMillis());
        return now.plusMillis(RETRY_DELAY.toMillis() + ThreadLocalRandom.current().nextLong(RETRY_DELAY.toMillis() + spent / 2 + 1));
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
        queue.lookNoLaterThan(d.definition().name(), look);
        d.decided();
    }

    /** A few milliseconds, more when busier, so that wins spread over the free workers. */
    private void spreadDelay() {
        long micros = ThreadLocalRandom.current().nextLong(0, 2_000) + (long) (threads.load() * 4_000);
        Runner.pause(Duration.ofNanos(micros * 1_000));
    }

    private static String newToken() {
        byte[] bytes = new byte[16];
        TOKENS.nextBytes(bytes);
        return HexFormat.of().formatHex(bytes);
    }
}
