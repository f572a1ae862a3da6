package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.ClaimResult;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.LockProvider;
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
 * {@link SlotQueue} together, once ({@link SlotQueue#place}), which files each by its stage. What
 * each answer moves its slot on to (a run handed over, asked again, decided) is
 * {@link ClaimAnswers}; this class builds the batch, reserves its job threads, sends it, and frees
 * the threads of the slots that lost. The events and metrics of each answer
 * ({@code slot_claimed}, {@code slot_missed}, {@code lockstep.claims}, ...) are built by
 * {@link ClaimEvents}.
 */
final class Claimer {

    /** How soon a claim that failed for want of the store, or of a free thread, is tried again. */
    static final Duration RETRY_DELAY = Duration.ofMillis(250);
    /** At most this many claim round trips per tick when lost races free reserved threads. */
    private static final int MAX_CLAIM_ROUNDS = 4;
    private static final SecureRandom TOKENS = new SecureRandom();

    private final LockProvider provider;
    private final String workerId;
    private final JobThreads threads;
    private final ClusterClock clock;
    private final Events events;
    private final Outage outage;
    private final SlotQueue queue;
    private final Preference preference;
    /** What each of the store's answers moves its slot on to. */
    private final ClaimAnswers answers;

    Claimer(LockProvider provider, String workerId, JobThreads threads, ClusterClock clock, Events events,
            Outage outage, SlotQueue queue, Runner runner, Starter starter, Preference preference) {
        this.preference = preference;
        this.provider = provider;
        this.workerId = workerId;
        this.threads = threads;
        this.clock = clock;
        this.events = events;
        this.outage = outage;
        this.queue = queue;
        this.answers = new ClaimAnswers(provider, workerId, clock, events, queue, runner, starter);
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
     * Whether {@code d} may be claimed beyond the threads ({@link JobThreads#canQueue}): a slot of ours
     * claimed ahead of its instant, not yet due, and not of an {@code overlap: replace} job (a newer
     * slot could revoke it while it waits, and its worker hears of it only at the next renewal). Slots
     * waiting for a thread here do not stop it: the queue it adds to drains within 250 ms by the
     * estimate, and stopping it would leave every later instant waiting behind them too.
     */
    private boolean queueable(DueSlot d, Instant now) {
        return d.ahead().toMillis() > 0 && now.isBefore(d.slot) && d.definition().overlap() != Overlap.REPLACE;
    }

    /**
     * Claims one batch: at most as many slots as there are free threads, and of the slots claimed
     * ahead of their instant also those that can start within their grace once a thread frees up
     * ({@link JobThreads#canQueue}); the rest is left to peers.
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
        int backlog = threads.backlog(); // runs already waiting beyond the threads
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
                boolean ordered = d.kind() != DueSlot.Kind.RECOVER && !d.manual && d.backfill == null;
                boolean behindOlder = ordered && (held.contains(job) || queue.waitingBefore(job, d.slot)
                        || (d.kind() != DueSlot.Kind.CATCH_UP && queue.catchingUp(job)));
                if (!behindOlder && (reserved < free
                        // Claimed ahead and startable within its grace once a thread frees up (JobThreads#canQueue):
                        // claimed now, in this round trip, rather than one round trip after each run ends.
                        || queueable(d, now) && threads.canQueue(job, backlog + reserved - free, d.grace()))) {
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
            Lease lease = new Lease(def.name(), d.slot, d.asks.token(Claimer::newToken), def.lease(), def.exclusive());
            Duration ahead = d.ahead(); // only a slot shared out to us, on its way to start
            allOwn &= ahead.toMillis() > 0;
            requests.add(new ClaimRequest(lease, workerId, d.grace(), d.mode(), def.overlap() == Overlap.REPLACE, d.manual,
                    ahead, null, d.recordOnly() ? d.missCode() : null, d.recordOnly() ? null : d.backfill));
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
        batch.forEach(d -> d.asks.asked(sent));
        List<ClaimResult> results;
        try {
            results = provider.claim(requests);
            outage.succeeded();
        } catch (RuntimeException e) {
            // A LockException, or anything else the store threw (a client bug): either way nobody
            // knows what happened, so nothing starts and every slot is asked again, never dropped.
            threads.release(reserved);
            LockException failure = outage.failedCall("claim", e);
            answers.unanswered(batch, failure);
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
                    answers.handle(d, request, result, sent, received, durationMs);
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
