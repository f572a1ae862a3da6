package io.lockstep.redis;

import io.lockstep.scheduler.lock.InMemoryLockProvider;
import io.lockstep.scheduler.lock.LockProvider;

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

}
