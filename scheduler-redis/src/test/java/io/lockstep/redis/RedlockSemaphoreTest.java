package io.lockstep.redis;


import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;

/** {@link SemaphoreContract} on Redlock over 3 real redis-server masters. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RedlockSemaphoreTest extends SemaphoreContract {
    private static final Duration MAX_LEASE = Duration.ofSeconds(5);
    private LocalRedlock nodes;
    private RedisLocks locks;

    @BeforeAll
    void start() {
        nodes = new LocalRedlock(3);
        locks = RedisLocks.redlockBuilder(nodes.clients).nodeNames(nodes.names()).maxLease(MAX_LEASE).build();
        nodes.awaitUptime(MAX_LEASE); // past the restart quarantine of a fresh master
        locks.tryAcquire("warm-up", MAX_LEASE).orElseThrow().release(); // connections made, scripts loaded
    }

    @AfterAll
    void stop() {
        locks.close();
        nodes.close();
    }

    @Override
    Duration shortLease() {
        return Duration.ofMillis(2_000); // each master's answer awaited 100 ms
    }

    @Override
    RedisLocks locks() {
        return locks;
    }
}
