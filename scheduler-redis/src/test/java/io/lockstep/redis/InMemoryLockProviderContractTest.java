package io.lockstep.redis;

import io.lockstep.scheduler.lock.InMemoryLockProvider;
import io.lockstep.scheduler.lock.LockProvider;
import java.time.Instant;

/** The lock store contract against the in-memory store the scheduler's own tests run on. */
class InMemoryLockProviderContractTest extends LockProviderContractTest {

    private final InMemoryLockProvider store = InMemoryLockProvider.create();

    @Override
    LockProvider store() {
        return store;
    }

    @Override
    void pause(String job) {
        store.pause(job);
    }

    @Override
    void resume(String job) {
        store.resume(job);
    }

    @Override
    String beginBackfill(String job, Instant from, Instant to) {
        return store.requestBackfill(job, from, to, 10, "contract").id();
    }

    @Override
    void cancelBackfill(String job) {
        store.cancelBackfill(job);
    }
}
