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
import org.junit.jupiter.api.Test;

/**
 * The semaphore of the lock API ({@link RedisLocks#semaphore}) as a contract, run on one real
 * redis-server ({@link RedisSemaphoreTest}) and on Redlock over 3 real masters
 * ({@link RedlockSemaphoreTest}): never more holders than permits, a holder that stops renewing
 * loses its permit after its lease (and another gets it), release and extend are owner-checked,
 * fencing tokens increase per permit.
 */
abstract class SemaphoreContract {

    abstract RedisLocks locks();

    /**
     * The short lease these tests let run out: on Redlock each master's answer is awaited 5 % of the
     * lease, so a longer one there, or a loaded machine's slow answer would not count.
     */
    Duration shortLease() {
        return Duration.ofMillis(600);
    }

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
        RedisLock a = sem.tryAcquire(shortLease()).orElseThrow();
        RedisLock b = sem.tryAcquire(shortLease()).orElseThrow();
        assertThat(RedisSemaphore.permitOf(a)).isNotEqualTo(RedisSemaphore.permitOf(b));
        assertThat(sem.tryAcquire(Duration.ofSeconds(1))).as("both held").isEmpty();
        long start = System.nanoTime();
        // a and b's holders died: nobody renews them
        RedisLock c = await().atMost(Duration.ofSeconds(5)).until(() -> sem.tryAcquire(Duration.ofSeconds(1)), Optional::isPresent)
                .orElseThrow();
        assertThat(Duration.ofNanos(System.nanoTime() - start)).as("not before a lease ran out").isGreaterThan(shortLease().dividedBy(2));
        assertThat(a.extend() && b.extend()).as("one of them is c's now").isFalse();
        c.release();
    }

    @Test
    void releaseAndExtendAreOwnerCheckedAndFencingTokensIncreasePerPermit() {
        RedisSemaphore sem = locks().semaphore(RedisFixture.job(), 1);
        RedisLock first = sem.tryAcquire(shortLease().dividedBy(2)).orElseThrow();
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
        RedisLock permit = sem.tryAcquire(shortLease()).orElseThrow().autoRenew(p -> {});
        long start = System.nanoTime();
        await().atMost(shortLease().multipliedBy(3).plusSeconds(5)).until(() -> {
            assertThat(sem.tryAcquire(Duration.ofSeconds(1))).as("renewed: still held").isEmpty();
            return System.nanoTime() - start > shortLease().multipliedBy(3).toNanos(); // three leases
        });
        assertThat(permit.release()).isTrue();
        assertThat(sem.tryAcquire(Duration.ofSeconds(1))).isPresent();
    }
}
