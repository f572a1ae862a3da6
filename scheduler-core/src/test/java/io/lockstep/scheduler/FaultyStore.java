package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.ClaimResult;
import io.lockstep.scheduler.lock.Completion;
import io.lockstep.scheduler.lock.InMemoryLockProvider;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.LockProvider;
import io.lockstep.scheduler.lock.Outcome;
import io.lockstep.scheduler.lock.RunsInFlight;
import java.time.Instant;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * The in-memory store with switches for faults: unreachable (every call throws, as a down Redis
 * makes the Redis provider do) and refusing renewals (as when another owner took the lease), all
 * of them or some tokens'; it counts renewals per token and notes when each completion arrived.
 */
final class FaultyStore implements LockProvider {

    final InMemoryLockProvider store;
    volatile boolean down;
    volatile boolean refuseRenewals;
    volatile int claimCalls;
    /** Completions fail before they reach the store. */
    volatile boolean failCompletes;
    /** Completions are carried out, then their reply is lost. */
    volatile boolean loseCompleteReplies;
    /** Claims throw something that is not a LockException, as a client bug would. */
    volatile boolean claimsThrowBug;
    /** Every claim takes this long, as a store that times out makes each tick take. */
    volatile long claimDelayMillis;
    volatile int completeCalls;
    /** When each completion call arrived (monotonic nanos), oldest first. */
    final List<Long> completeCallNanos = new java.util.concurrent.CopyOnWriteArrayList<>();
    /** Renewals of these tokens are refused (another owner took the lease); the rest go through. */
    final java.util.Set<String> refusedTokens = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /** How many times each token was sent for renewal, refused or not. */
    final Map<String, java.util.concurrent.atomic.AtomicInteger> renewalsByToken = new java.util.concurrent.ConcurrentHashMap<>();
    /** Every claim that carries a {@link io.lockstep.scheduler.lock.ClaimRequest.Mode#CATCH_UP} request takes this long. */
    volatile long catchUpClaimDelayMillis;
    /**
     * Redlock's split vote: the first this-many claims of each slot are answered
     * {@link ClaimResult.Status#NO_QUORUM} without touching the store (as Redlock gives back what it
     * took); {@link Integer#MAX_VALUE}: every one.
     */
    volatile int noQuorumAnswers;
    private final Map<String, Integer> noQuorumGiven = new java.util.concurrent.ConcurrentHashMap<>();
    /** The slots asked for while the store was down. */
    final java.util.Set<Instant> askedWhileDown = java.util.concurrent.ConcurrentHashMap.newKeySet();

    @Override
    public java.time.Duration startWindow() {
        return store.startWindow();
    }

    FaultyStore() {
        this(InMemoryLockProvider.create());
    }

    /** A faulty view of a store that other schedulers see as healthy. */
    FaultyStore(InMemoryLockProvider store) {
        this.store = store;
    }

    /**
     * The jobs whose master is down while the rest answer (one Redis Cluster shard failing): their
     * claims are answered UNANSWERED, their starts UNANSWERED, their renewals and outcomes left
     * unconfirmed (PartiallyConfirmed), none reaching the store; the others go through.
     */
    final java.util.Set<String> shardDown = java.util.concurrent.ConcurrentHashMap.newKeySet();

    @Override
    public List<ClaimResult> claim(List<ClaimRequest> requests) {
        if (!shardDown.isEmpty()) {
            ClaimResult[] answers = new ClaimResult[requests.size()];
            List<ClaimRequest> passed = new java.util.ArrayList<>();
            List<Integer> at = new java.util.ArrayList<>();
            for (int i = 0; i < requests.size(); i++) {
                if (shardDown.contains(requests.get(i).lease().job())) {
                    answers[i] = new ClaimResult(ClaimResult.Status.UNANSWERED, 0, 0);
                } else {
                    passed.add(requests.get(i));
                    at.add(i);
                }
            }
            List<ClaimResult> decided = claimThrough(passed);
            for (int k = 0; k < at.size(); k++) {
                answers[at.get(k)] = decided.get(k);
            }
            return List.of(answers);
        }
        return claimThrough(requests);
    }

    /** When (monotonic nanos) each slot (job@slot) was asked for, and in which mode, oldest first. */
    final Map<String, List<Long>> requestNanos = new java.util.concurrent.ConcurrentHashMap<>();
    final Map<String, List<ClaimRequest.Mode>> requestModes = new java.util.concurrent.ConcurrentHashMap<>();

    private List<ClaimResult> claimThrough(List<ClaimRequest> requests) {
        claimCalls++;
        long askedAt = System.nanoTime();
        for (ClaimRequest r : requests) {
            String key = r.lease().job() + "@" + r.lease().slot();
            requestNanos.computeIfAbsent(key, k -> new java.util.concurrent.CopyOnWriteArrayList<>()).add(askedAt);
            requestModes.computeIfAbsent(key, k -> new java.util.concurrent.CopyOnWriteArrayList<>()).add(r.mode());
        }
        if (down) {
            requests.forEach(r -> askedWhileDown.add(r.lease().slot()));
        }
        check();
        if (claimsThrowBug) {
            throw new NullPointerException("connection is null (a client bug)");
        }
        if (claimDelayMillis > 0) {
            java.util.concurrent.locks.LockSupport.parkNanos(claimDelayMillis * 1_000_000);
        }
        if (catchUpClaimDelayMillis > 0 && requests.stream().anyMatch(r -> r.mode() == ClaimRequest.Mode.CATCH_UP)) {
            java.util.concurrent.locks.LockSupport.parkNanos(catchUpClaimDelayMillis * 1_000_000);
        }
        if (noQuorumAnswers > 0) {
            ClaimResult[] answers = new ClaimResult[requests.size()];
            List<ClaimRequest> passed = new java.util.ArrayList<>();
            List<Integer> at = new java.util.ArrayList<>();
            for (int i = 0; i < requests.size(); i++) {
                Lease l = requests.get(i).lease();
                int given = noQuorumGiven.merge(l.job() + "@" + l.slot(), 1, Integer::sum);
                if (given <= noQuorumAnswers) {
                    answers[i] = new ClaimResult(ClaimResult.Status.NO_QUORUM, 0, store.serverTimeMillis());
                } else {
                    passed.add(requests.get(i));
                    at.add(i);
                }
            }
            List<ClaimResult> decided = store.claim(passed);
            for (int k = 0; k < at.size(); k++) {
                answers[at.get(k)] = decided.get(k);
            }
            return List.of(answers);
        }
        List<ClaimResult> answers = store.claim(requests);
        if (claimTimeSpreadMillis > 0 && answers.size() > 1) {
            // As a pipeline of several script calls answers: the store read its clock earlier for
            // the first answers than for the last, all of which arrive together.
            List<ClaimResult> spread = new java.util.ArrayList<>(answers.size());
            for (int i = 0; i < answers.size(); i++) {
                ClaimResult a = answers.get(i);
                long earlier = claimTimeSpreadMillis * (answers.size() - 1 - i) / (answers.size() - 1);
                spread.add(new ClaimResult(a.status(), a.fencingToken(), a.serverTimeMillis() - earlier, a.runningUntilMillis(), a.why(),
                        a.started()));
            }
            return spread;
        }
        return answers;
    }

    /**
     * The answers of one claim batch carry store times this far apart, the first the earliest (a
     * pipeline of several script calls, each reading the clock as it runs).
     */
    volatile long claimTimeSpreadMillis;
    /** How many outcomes each call to {@link #complete} carried, in order. */
    final List<Integer> completeBatchSizes = new java.util.concurrent.CopyOnWriteArrayList<>();
    /** How many starts each call to {@link #start} carried, in order. */
    final List<Integer> startBatchSizes = new java.util.concurrent.CopyOnWriteArrayList<>();

    /** Starts of runs claimed ahead are refused (as when the claim's short lease ran out and a peer took it). */
    volatile boolean loseStarts;
    /** Every start reaches the store this much later (a worker that stalled between its claim and its start). */
    volatile long startDelayMillis;
    /** These jobs are paused just before a start of theirs reaches the store (an operator's pause between the claim and the start). */
    final java.util.Set<String> pauseBeforeStart = java.util.concurrent.ConcurrentHashMap.newKeySet();

    @Override
    public List<io.lockstep.scheduler.lock.StartReply> start(List<io.lockstep.scheduler.lock.StartRequest> requests) {
        startBatchSizes.add(requests.size());
        check();
        if (startDelayMillis > 0) {
            java.util.concurrent.locks.LockSupport.parkNanos(startDelayMillis * 1_000_000);
        }
        requests.stream().map(r -> r.lease().job()).filter(pauseBeforeStart::contains).forEach(store::pause);
        if (loseStarts) {
            return Collections.nCopies(requests.size(), new io.lockstep.scheduler.lock.StartReply(io.lockstep.scheduler.lock.StartAnswer.LOST, 0));
        }
        List<io.lockstep.scheduler.lock.StartRequest> passed = requests.stream().filter(r -> !shardDown.contains(r.lease().job())).toList();
        java.util.Iterator<io.lockstep.scheduler.lock.StartReply> answered = store.start(passed).iterator();
        return requests.stream().map(r -> shardDown.contains(r.lease().job())
                ? new io.lockstep.scheduler.lock.StartReply(io.lockstep.scheduler.lock.StartAnswer.UNANSWERED, 0) : answered.next()).toList();
    }

    @Override
    public List<Boolean> renew(List<Lease> leases) {
        leases.forEach(l -> renewalsByToken.computeIfAbsent(l.token(), t -> new java.util.concurrent.atomic.AtomicInteger()).incrementAndGet());
        check();
        if (refuseRenewals) {
            return Collections.nCopies(leases.size(), false);
        }
        // A refused token is not renewed in the store either: as if another owner held the lease.
        List<Lease> passed = leases.stream().filter(l -> !refusedTokens.contains(l.token())).toList();
        java.util.Iterator<Boolean> renewed = store.renew(passed).iterator();
        List<Boolean> answers = new java.util.ArrayList<>(leases.size());
        for (Lease l : leases) {
            answers.add(!refusedTokens.contains(l.token()) && renewed.next());
        }
        return answers;
    }

    /** How many times {@code token} was sent for renewal. */
    int renewals(String token) {
        java.util.concurrent.atomic.AtomicInteger n = renewalsByToken.get(token);
        return n == null ? 0 : n.get();
    }

    @Override
    public List<Boolean> complete(List<Completion> completions) {
        completeCallNanos.add(System.nanoTime());
        completeBatchSizes.add(completions.size());
        completeCalls++;
        check();
        if (failCompletes) {
            throw new LockException("faulty in-memory", "write failed", null);
        }
        if (!shardDown.isEmpty() && completions.stream().anyMatch(c -> shardDown.contains(c.lease().job()))) {
            java.util.Iterator<Boolean> written = store.complete(completions.stream()
                    .filter(c -> !shardDown.contains(c.lease().job())).toList()).iterator();
            List<Boolean> answers = new java.util.ArrayList<>();
            completions.forEach(c -> answers.add(shardDown.contains(c.lease().job()) ? null : written.next()));
            throw new io.lockstep.scheduler.lock.PartiallyConfirmed("faulty in-memory", "a shard is down", answers);
        }
        List<Boolean> owned = store.complete(completions);
        if (loseCompleteReplies) {
            throw new LockException("faulty in-memory", "reply lost", null);
        }
        return owned;
    }

    /**
     * The next lock name asked for a lease of this slot (the first of them: the claimer asks it
     * first of all when it handles a claim's answer) throws something that is not a
     * LockException, once: an answer the worker cannot deal with, as a bug would make it.
     */
    final java.util.concurrent.atomic.AtomicReference<Instant> lockNameThrowsOnceAt = new java.util.concurrent.atomic.AtomicReference<>();
    /** Reads of slot records throw something that is not a LockException, as a client bug would. */
    volatile boolean slotStatesThrowBug;
    /** How many reads of slot records arrived. */
    final java.util.concurrent.atomic.AtomicInteger slotStatesCalls = new java.util.concurrent.atomic.AtomicInteger();

    @Override
    public String lockName(Lease lease) {
        Instant armed = lockNameThrowsOnceAt.get();
        if (lease.slot().equals(armed) && lockNameThrowsOnceAt.compareAndSet(armed, null)) {
            throw new IllegalStateException("an answer the worker cannot deal with (a bug), for " + lease.job() + "@" + lease.slot());
        }
        return store.lockName(lease);
    }

    @Override
    public List<io.lockstep.scheduler.lock.SlotState> slotStates(List<io.lockstep.scheduler.lock.SlotState.Ref> slots) {
        slotStatesCalls.incrementAndGet();
        check();
        if (slotStatesThrowBug) {
            throw new NullPointerException("connection is null (a client bug)");
        }
        return store.slotStates(slots);
    }

    /** How many runsInFlight calls arrived (the recovery looks). */
    final java.util.concurrent.atomic.AtomicInteger runsCalls = new java.util.concurrent.atomic.AtomicInteger();

    @Override
    public List<RunsInFlight> runsInFlight(List<String> jobs) {
        runsCalls.incrementAndGet();
        check();
        return store.runsInFlight(jobs);
    }

    @Override
    public void stampInForce(java.util.Collection<String> enabled, java.util.Collection<String> disabled, boolean fresh) {
        check();
        store.stampInForce(enabled, disabled, fresh);
    }

    @Override
    public Map<String, io.lockstep.scheduler.lock.InForce> inForce(List<String> jobs) {
        check();
        return store.inForce(jobs);
    }

    @Override
    public Map<String, Instant> lastSlots(List<String> jobs) {
        check();
        return store.lastSlots(jobs);
    }

    @Override
    public long serverTimeMillis() {
        check();
        return store.serverTimeMillis();
    }

    /**
     * Heartbeats carry the store's clock, as on a single Redis: a worker's cluster clock follows a
     * step of the store's clock within a heartbeat, not only at its next read every 30 s.
     */
    volatile boolean heartbeatCarriesTime;

    /** Other live workers every heartbeat lists (the in-memory store keeps no heartbeats of its own). */
    final List<io.lockstep.scheduler.lock.WorkerInfo> peers = new java.util.concurrent.CopyOnWriteArrayList<>();

    /** Heartbeats fail while the store is down, as the Redis provider's do. */
    @Override
    public io.lockstep.scheduler.lock.Heartbeat heartbeat(io.lockstep.scheduler.lock.WorkerInfo self, java.time.Duration ttl) {
        check();
        lastSelf = self;
        io.lockstep.scheduler.lock.Heartbeat beat = store.heartbeat(self, ttl);
        if (!peers.isEmpty()) {
            List<io.lockstep.scheduler.lock.WorkerInfo> all = new java.util.ArrayList<>(beat.workers());
            all.addAll(peers);
            beat = new io.lockstep.scheduler.lock.Heartbeat(all, beat.triggers(), beat.serverTimeMillis(), beat.configPublished());
        }
        java.time.Duration drain = drainAsked.getAndSet(null);
        return new io.lockstep.scheduler.lock.Heartbeat(beat.workers(), beat.triggers(),
                heartbeatCarriesTime ? store.serverTimeMillis() : beat.serverTimeMillis(), beat.configPublished(), drain, store.backfills());
    }

    /** The worker of the latest heartbeat (to make {@link #peers} that look like it). */
    volatile io.lockstep.scheduler.lock.WorkerInfo lastSelf;

    /** Backfill views that fail (as a Redis call does) before they go through again. */
    final java.util.concurrent.atomic.AtomicInteger backfillViewFailures = new java.util.concurrent.atomic.AtomicInteger();

    @Override
    public io.lockstep.scheduler.lock.Backfill.View backfillView(String job, String backfill, List<Instant> slots, java.time.Duration recordTtl) {
        check();
        if (backfillViewFailures.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
            throw new LockException("faulty in-memory", "backfill view failed", null);
        }
        return store.backfillView(job, backfill, slots, recordTtl);
    }

    @Override
    public void backfillProgress(io.lockstep.scheduler.lock.Backfill backfill, io.lockstep.scheduler.lock.Backfill.Progress progress) {
        check();
        store.backfillProgress(backfill, progress);
    }

    /** An operator's drain request ({@code lockstep drain}) the next heartbeat carries, once; null: none. */
    final java.util.concurrent.atomic.AtomicReference<java.time.Duration> drainAsked = new java.util.concurrent.atomic.AtomicReference<>();

    @Override
    public String describe() {
        return "faulty in-memory";
    }

    private void check() {
        if (down) {
            throw new LockException("faulty in-memory", "store is down", null);
        }
    }
}
