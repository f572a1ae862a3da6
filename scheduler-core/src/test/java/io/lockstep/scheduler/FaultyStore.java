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
 * makes the Redis provider do) and refusing renewals (as when another owner took the lease).
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
    /** Claims are carried out, then their reply is lost. */
    volatile boolean loseClaimReplies;
    /** Claims throw something that is not a LockException, as a client bug would. */
    volatile boolean claimsThrowBug;
    /** Every claim takes this long, as a store that times out makes each tick take. */
    volatile long claimDelayMillis;
    volatile int completeCalls;
    /**
     * Redlock's split vote: the first this-many claims of each slot are answered
     * {@link ClaimResult.Status#NO_QUORUM} without touching the store (as Redlock gives back what it
     * took); {@link Integer#MAX_VALUE}: every one.
     */
    volatile int noQuorumAnswers;
    private final Map<String, Integer> noQuorumGiven = new java.util.concurrent.ConcurrentHashMap<>();
    /** The slots asked for while the store was down. */
    final java.util.Set<Instant> askedWhileDown = java.util.concurrent.ConcurrentHashMap.newKeySet();

    FaultyStore() {
        this(InMemoryLockProvider.create());
    }

    /** A faulty view of a store that other schedulers see as healthy. */
    FaultyStore(InMemoryLockProvider store) {
        this.store = store;
    }

    @Override
    public List<ClaimResult> claim(List<ClaimRequest> requests) {
        claimCalls++;
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
        List<ClaimResult> results = store.claim(requests);
        if (loseClaimReplies) {
            throw new LockException("faulty in-memory", "reply lost", null);
        }
        return results;
    }

    @Override
    public List<Boolean> renew(List<Lease> leases) {
        check();
        return refuseRenewals ? Collections.nCopies(leases.size(), false) : store.renew(leases);
    }

    @Override
    public List<Boolean> complete(List<Completion> completions) {
        completeCalls++;
        check();
        if (failCompletes) {
            throw new LockException("faulty in-memory", "write failed", null);
        }
        List<Boolean> owned = store.complete(completions);
        if (loseCompleteReplies) {
            throw new LockException("faulty in-memory", "reply lost", null);
        }
        return owned;
    }

    @Override
    public List<RunsInFlight> runsInFlight(List<String> jobs) {
        check();
        return store.runsInFlight(jobs);
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
