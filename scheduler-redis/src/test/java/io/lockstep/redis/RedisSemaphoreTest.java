package io.lockstep.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The semaphore of the lock API ({@link RedisLocks#semaphore}) as a contract, on one real
 * redis-server and on Redlock over 3 real masters: never more holders than permits, a holder that
 * stops renewing loses its permit after its lease (and another gets it), release and extend are
 * owner-checked, fencing tokens increase per permit; and on one server, waiters get permits in the
 * order they first asked, which a plain try never jumps.
 */
class RedisSemaphoreTest {

    abstract static class Contract {

        abstract RedisLocks locks();

        @Test
        void neverMoreHoldersThanPermitsWhileSixThreadsContend() throws Exception {
            RedisSemaphore sem = locks().semaphore(RedisFixture.job(), 2);
            AtomicInteger inside = new AtomicInteger();
            AtomicInteger most = new AtomicInteger();
            AtomicInteger taken = new AtomicInteger();
            ExecutorService pool = Executors.newFixedThreadPool(6);
            try {
                List<Future<?>> all = new ArrayList<>();
                for (int t = 0; t < 6; t++) {
                    all.add(pool.submit(() -> {
                        for (int i = 0; i < 15; i++) {
                            try (RedisLock permit = sem.acquire(Duration.ofSeconds(2), Duration.ofSeconds(20)).orElseThrow()) {
                                most.accumulateAndGet(inside.incrementAndGet(), Math::max);
                                taken.incrementAndGet();
                                TimeUnit.MILLISECONDS.sleep(5); // the work the permit guards
                                inside.decrementAndGet();
                            }
                        }
                        return null;
                    }));
                }
                for (Future<?> f : all) {
                    f.get(60, TimeUnit.SECONDS);
                }
            } finally {
                pool.shutdownNow();
            }
            assertThat(taken).hasValue(90);
            assertThat(most.get()).as("holders at once").isBetween(1, 2);
        }

        @Test
        void aHolderThatStopsRenewingLosesItsPermitAfterItsLeaseAndAnotherGetsIt() {
            RedisSemaphore sem = locks().semaphore(RedisFixture.job(), 2);
            RedisLock a = sem.tryAcquire(Duration.ofMillis(600)).orElseThrow();
            RedisLock b = sem.tryAcquire(Duration.ofMillis(600)).orElseThrow();
            assertThat(RedisSemaphore.permitOf(a)).isNotEqualTo(RedisSemaphore.permitOf(b));
            assertThat(sem.tryAcquire(Duration.ofSeconds(1))).as("both held").isEmpty();
            long start = System.nanoTime();
            // a and b's holders died: nobody renews them
            RedisLock c = await().atMost(Duration.ofSeconds(5)).until(() -> sem.tryAcquire(Duration.ofSeconds(1)), Optional::isPresent)
                    .orElseThrow();
            assertThat(Duration.ofNanos(System.nanoTime() - start)).as("not before a lease ran out").isGreaterThan(Duration.ofMillis(300));
            assertThat(a.extend() && b.extend()).as("one of them is c's now").isFalse();
            c.release();
        }

        @Test
        void releaseAndExtendAreOwnerCheckedAndFencingTokensIncreasePerPermit() {
            RedisSemaphore sem = locks().semaphore(RedisFixture.job(), 1);
            RedisLock first = sem.tryAcquire(Duration.ofMillis(300)).orElseThrow();
            RedisLock second = await().atMost(Duration.ofSeconds(5)).until(() -> sem.tryAcquire(Duration.ofSeconds(2)), Optional::isPresent)
                    .orElseThrow();
            assertThat(second.fencingToken()).isGreaterThan(first.fencingToken());
            assertThat(second.name()).isEqualTo(first.name()).endsWith("#0");
            assertThat(first.extend()).as("expired, and another holder has it").isFalse();
            assertThat(first.release()).isFalse();
            assertThat(second.isHeld()).isTrue();
            assertThat(sem.tryAcquire(Duration.ofSeconds(1))).as("the late release took nothing from the holder").isEmpty();
            assertThat(second.release()).isTrue();
            assertThat(sem.tryAcquire(Duration.ofSeconds(1))).isPresent();
        }

        @Test
        void aRenewedPermitOutlivesItsLeaseUntilReleased() {
            RedisSemaphore sem = locks().semaphore(RedisFixture.job(), 1);
            RedisLock permit = sem.tryAcquire(Duration.ofMillis(500)).orElseThrow().autoRenew(p -> {});
            long start = System.nanoTime();
            await().atMost(Duration.ofSeconds(5)).until(() -> {
                assertThat(sem.tryAcquire(Duration.ofSeconds(1))).as("renewed: still held").isEmpty();
                return System.nanoTime() - start > TimeUnit.MILLISECONDS.toNanos(1_500); // three leases
            });
            assertThat(permit.release()).isTrue();
            assertThat(sem.tryAcquire(Duration.ofSeconds(1))).isPresent();
        }
    }

    @Nested
    @TestInstance(TestInstance.Lifecycle.PER_CLASS)
    class OnOneServer extends Contract {
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

    @Nested
    @TestInstance(TestInstance.Lifecycle.PER_CLASS)
    class OnRedlock extends Contract {
        private static final Duration MAX_LEASE = Duration.ofSeconds(2);
        private LocalRedlock nodes;
        private RedisLocks locks;

        @BeforeAll
        void start() {
            nodes = new LocalRedlock(3);
            locks = RedisLocks.redlockBuilder(nodes.clients).nodeNames(nodes.names()).maxLease(MAX_LEASE).build();
            nodes.awaitUptime(MAX_LEASE); // past the restart quarantine of a fresh master
        }

        @AfterAll
        void stop() {
            locks.close();
            nodes.close();
        }

        @Override
        RedisLocks locks() {
            return locks;
        }
    }
}
