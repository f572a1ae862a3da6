package io.lockstep.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * {@link SemaphoreContract} on one real redis-server, and what only one server does: waiters get
 * permits in the order they first asked, which a plain try never jumps; a try repeated after a
 * lost reply gets the permit it took; a waiter that stopped asking loses its place.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RedisSemaphoreTest extends SemaphoreContract {
    private LocalRedisServer server;
    private redis.clients.jedis.RedisClient client;
    private RedisLocks locks;

    @BeforeAll
    void start() {
        server = LocalRedisServer.start();
        client = LocalRedlock.client(server);
        locks = RedisLocks.on(client);
    }

    @AfterAll
    void stop() {
        locks.close();
        client.close();
        server.close();
    }

    @Override
    RedisLocks locks() {
        return locks;
    }

    @Test
    void waitersGetPermitsInTheOrderTheyFirstAskedAndAPlainTryNeverJumpsThem() {
        RedisSemaphore sem = locks.semaphore(RedisFixture.job(), 1);
        Duration lease = Duration.ofSeconds(10);
        Duration ttl = Duration.ofSeconds(10);
        RedisLock holder = sem.tryAcquire(lease).orElseThrow();
        assertThat(sem.tryAcquire(lease, "late", 300, ttl, "")).isEmpty(); // they ask while it is held, in this order
        assertThat(sem.tryAcquire(lease, "early", 100, ttl, "")).isEmpty();
        assertThat(sem.tryAcquire(lease, "middle", 200, ttl, "")).isEmpty();
        assertThat(sem.waiters()).extracting(RedisSemaphore.Waiter::id).containsExactly("early", "middle", "late");
        holder.release();

        assertThat(sem.tryAcquire(lease)).as("a plain try comes after every waiter").isEmpty();
        assertThat(sem.tryAcquire(lease, "late", 300, ttl, "")).isEmpty();
        assertThat(sem.tryAcquire(lease, "middle", 200, ttl, "")).isEmpty();
        RedisLock early = sem.tryAcquire(lease, "early", 100, ttl, "").orElseThrow();
        assertThat(sem.holders()).singleElement().satisfies(h -> assertThat(h.permit()).isZero());
        early.release();
        assertThat(sem.tryAcquire(lease, "late", 300, ttl, "")).isEmpty();
        sem.tryAcquire(lease, "middle", 200, ttl, "").orElseThrow().release();
        sem.tryAcquire(lease, "late", 300, ttl, "").orElseThrow().release();
        assertThat(sem.waiters()).isEmpty();
    }

    @Test
    void aTryRepeatedAfterALostReplyGetsThePermitItTookNotASecond() {
        RedisSemaphore sem = locks.semaphore(RedisFixture.job(), 2);
        RedisLock first = sem.tryAcquire(Duration.ofSeconds(10), "run-1", 5, Duration.ofSeconds(2), "job@slot on w1").orElseThrow();
        // its reply was lost: the same caller asks again
        RedisLock again = sem.tryAcquire(Duration.ofSeconds(10), "run-1", 5, Duration.ofSeconds(2), "job@slot on w1").orElseThrow();
        assertThat(again.key()).isEqualTo(first.key());
        assertThat(again.fencingToken()).isEqualTo(first.fencingToken());
        assertThat(sem.holders()).singleElement().satisfies(h -> assertThat(h.holder()).isEqualTo("job@slot on w1"));
        assertThat(sem.tryAcquire(Duration.ofSeconds(10))).as("the other permit is still free").isPresent();
    }

    @Test
    void aWaiterThatStoppedAskingLosesItsPlace() {
        RedisSemaphore sem = locks.semaphore(RedisFixture.job(), 1);
        RedisLock holder = sem.tryAcquire(Duration.ofSeconds(10)).orElseThrow();
        assertThat(sem.tryAcquire(Duration.ofSeconds(10), "gone", 1, Duration.ofMillis(300), "")).isEmpty(); // then it died
        holder.release();
        await().atMost(Duration.ofSeconds(5)).until(() -> sem.tryAcquire(Duration.ofSeconds(10), "next", 2, Duration.ofSeconds(1), ""),
                Optional::isPresent);
        assertThat(sem.waiters()).isEmpty();
    }
}
