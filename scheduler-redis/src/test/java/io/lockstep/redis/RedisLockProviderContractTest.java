package io.lockstep.redis;

import io.lockstep.scheduler.lock.LockProvider;
import java.util.Optional;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The lock store contract against the Lua scripts on a real redis-server. */
class RedisLockProviderContractTest extends LockProviderContractTest {

    @RegisterExtension
    static final RedisFixture redis = RedisFixture.of(b -> b);

    @Override
    LockProvider store() {
        return redis.provider();
    }

    @Override
    void pause(String job) {
        RedisAdmin.of(redis.provider()).pause(job, "", Optional.empty(), "contract");
    }

    @Override
    void resume(String job) {
        RedisAdmin.of(redis.provider()).resume(job);
    }
}
