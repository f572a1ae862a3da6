package io.lockstep.redis;

import io.lockstep.scheduler.config.RedisSettings;
import io.lockstep.scheduler.lock.LockProvider;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The lock store contract against Redlock over three real redis-server masters, all up: a
 * majority's answers must be the single server's answers (its own failure paths, a master down or
 * split votes, are {@link RedlockStoreTest}'s).
 */
class RedlockLockProviderContractTest extends LockProviderContractTest {

    private static LocalRedlock nodes;
    private static RedisLockProvider provider;

    @BeforeAll
    static void start() {
        nodes = new LocalRedlock(3);
        provider = RedisLockProvider.builder().settings(new RedisSettings(new RedisSettings.Redlock(nodes.names(), Duration.ofMillis(500),
                Optional.of(Duration.ZERO)), RedisFixture.job(), Duration.ofSeconds(2), Optional.empty(), Optional.empty(), RedisSettings.Tls.OFF, 0,
                RedisSettings.DEFAULT_WAIT_TIMEOUT)).build();
    }

    @AfterAll
    static void stop() {
        provider.close();
        nodes.close();
    }

    @Override
    LockProvider store() {
        return provider;
    }

    @Override
    boolean keepsBackfills() {
        return false;
    }

    @Override
    void pause(String job) {
        RedisAdmin.of(provider).pause(job, "", Optional.empty(), "contract");
    }

    @Override
    void resume(String job) {
        RedisAdmin.of(provider).resume(job);
    }
}
