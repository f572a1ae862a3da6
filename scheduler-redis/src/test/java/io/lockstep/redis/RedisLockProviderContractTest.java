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
    String beginBackfill(String job, java.time.Instant from, java.time.Instant to) {
        return RedisAdmin.of(redis.provider()).backfill(job, from, to, 10, "contract").id();
    }

    @Override
    void cancelBackfill(String job) {
        RedisAdmin.of(redis.provider()).cancelBackfill(job);
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
