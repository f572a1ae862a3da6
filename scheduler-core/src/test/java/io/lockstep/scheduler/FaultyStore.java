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
        check();
        return store.claim(requests);
    }

    @Override
    public List<Boolean> renew(List<Lease> leases) {
        check();
        return refuseRenewals ? Collections.nCopies(leases.size(), false) : store.renew(leases);
    }

    @Override
    public List<Boolean> complete(List<Completion> completions) {
        check();
        return store.complete(completions);
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
