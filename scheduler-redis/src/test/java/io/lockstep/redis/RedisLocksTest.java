package io.lockstep.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.lockstep.scheduler.lock.LockException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import redis.clients.jedis.RedisClient;

/** The standalone lock API against a real redis-server. */
class RedisLocksTest {

    private static LocalRedisServer server;
    private static RedisClient jedis;
    private static RedisLocks locks;

    @BeforeAll
    static void startRedis() {
        server = LocalRedisServer.start();
        jedis = RedisClient.create(server.host(), server.port());
        locks = RedisLocks.builder(jedis).backoff(Duration.ofMillis(1), Duration.ofMillis(20)).build();
    }

    @AfterAll
    static void stopRedis() {
        locks.close();
        jedis.close();
        server.close();
    }

    @Test
    void eightThreadsTimesTenThousandCyclesNeverSeeTwoHolders() throws Exception {
        String name = RedisFixture.job();
        int threads = 8;
        int cycles = 10_000;
        AtomicInteger holders = new AtomicInteger();
        AtomicInteger overlaps = new AtomicInteger();
        int[] counter = {0}; // deliberately unsynchronized: only the lock protects it
        java.util.Set<Long> tokens = java.util.concurrent.ConcurrentHashMap.newKeySet();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Future<Long>> results = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            results.add(pool.submit(() -> {
                long lastFence = 0;
                for (int i = 0; i < cycles; i++) {
                    Optional<RedisLock> acquired = locks.acquire(name, Duration.ofSeconds(30), Duration.ofSeconds(60));
                    assertThat(acquired).as("acquire within the wait").isPresent();
                    try (RedisLock lock = acquired.get()) {
                        if (holders.incrementAndGet() != 1) {
                            overlaps.incrementAndGet();
                        }
                        int seen = counter[0];
                        Thread.onSpinWait();
                        counter[0] = seen + 1;
                        assertThat(lock.fencingToken()).isGreaterThan(lastFence);
                        lastFence = lock.fencingToken();
                        tokens.add(lastFence);
                        holders.decrementAndGet();
                    }
                }
                return lastFence;
            }));
        }
        long highestFence = 0;
        for (Future<Long> f : results) {
            highestFence = Math.max(highestFence, f.get());
        }
        pool.shutdown();
        assertThat(overlaps).hasValue(0);
        assertThat(counter[0]).isEqualTo(threads * cycles);
        assertThat(tokens).as("one fencing token per acquisition, never repeated").hasSize(threads * cycles);
        assertThat(highestFence).isEqualTo(java.util.Collections.max(tokens));
        assertThat(jedis.exists(locks.lockKey(name))).isFalse();
    }

    @Test
    void tryAcquireFailsWhileHeldAndFencingTokensIncrease() {
        String name = RedisFixture.job();
        try (RedisLock first = locks.tryAcquire(name, Duration.ofSeconds(10)).orElseThrow()) {
            assertThat(first.isHeld()).isTrue();
            assertThat(first.name()).isEqualTo(name);
            assertThat(first.token()).hasSize(32);
            assertThat(jedis.get(first.key())).isEqualTo(first.token());
            assertThat(jedis.pttl(first.key())).isBetween(9_000L, 10_000L);
            assertThat(first.remaining()).isBetween(Duration.ofSeconds(9), Duration.ofSeconds(10));
            assertThat(locks.tryAcquire(name, Duration.ofSeconds(10))).isEmpty();
            assertThat(first.release()).isTrue();
            assertThat(first.isHeld()).isFalse();
            assertThat(first.remaining()).isZero();
            try (RedisLock second = locks.tryAcquire(name, Duration.ofSeconds(10)).orElseThrow()) {
                assertThat(second.fencingToken()).isGreaterThan(first.fencingToken());
            }
        }
        assertThat(jedis.exists(locks.lockKey(name))).isFalse();
    }

    @Test
    void aForeignTokenCanNeitherReleaseNorExtendAndLeavesKeyAndTtlUntouched() {
        String name = RedisFixture.job();
        RedisLock mine = locks.tryAcquire(name, Duration.ofMillis(300)).orElseThrow();
        await().atMost(Duration.ofSeconds(5)).until(() -> !jedis.exists(mine.key()));
        RedisLock theirs = locks.tryAcquire(name, Duration.ofSeconds(20)).orElseThrow();
        jedis.pexpire(theirs.key(), 15_000);

        assertThat(mine.extend()).isFalse();
        assertThat(mine.release()).isFalse();

        assertThat(jedis.get(theirs.key())).isEqualTo(theirs.token());
        assertThat(jedis.pttl(theirs.key())).isBetween(1L, 15_000L);
        assertThat(theirs.extend()).isTrue();
        assertThat(jedis.pttl(theirs.key())).isGreaterThan(15_000L);
        assertThat(theirs.release()).isTrue();
    }

    @Test
    void aLockWhoseLeaseRanOutIsNotHeldBeforeAnotherHolderCanTakeIt() throws Exception {
        String name = RedisFixture.job();
        RedisLock mine = locks.tryAcquire(name, Duration.ofMillis(400)).orElseThrow();
        RedisLocks others = RedisLocks.on(jedis);
        // Another client spins on the lock; the moment it wins, ours must already say "not held".
        RedisLock theirs = null;
        boolean heldWhenTheyWon = true;
        Duration before = mine.remaining();
        while (theirs == null) {
            Optional<RedisLock> attempt = others.tryAcquire(name, Duration.ofSeconds(10));
            if (attempt.isPresent()) {
                theirs = attempt.get();
                heldWhenTheyWon = mine.isHeld();
            } else {
                // While ours, what is left runs down with every round trip (it is not the lease read back).
                // Read once: the lease may run out between two reads, so only a positive reading is compared.
                Duration left = mine.remaining();
                if (!left.isZero() && !left.isNegative()) {
                    assertThat(left).isLessThan(before);
                    before = left;
                }
            }
        }
        assertThat(heldWhenTheyWon).isFalse();
        assertThat(mine.remaining()).isZero();
        assertThat(theirs.fencingToken()).isGreaterThan(mine.fencingToken());
        theirs.release();
        others.close();
    }

    @Test
    void acquireWaitsForARelease() throws Exception {
        String name = RedisFixture.job();
        RedisLock holder = locks.tryAcquire(name, Duration.ofSeconds(10)).orElseThrow();
        AtomicReference<Optional<RedisLock>> waited = new AtomicReference<>();
        Thread waiter = new Thread(() -> {
            try {
                waited.set(locks.acquire(name, Duration.ofSeconds(10), Duration.ofSeconds(10)));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        waiter.start();
        await().during(Duration.ofMillis(200)).atMost(Duration.ofSeconds(2)).until(() -> waited.get() == null);
        holder.release();
        waiter.join(10_000);
        assertThat(waited.get()).isPresent();
        assertThat(waited.get().get().fencingToken()).isGreaterThan(holder.fencingToken());
        waited.get().get().release();
    }

    @Test
    void acquireGivesUpAfterItsWait() throws Exception {
        String name = RedisFixture.job();
        try (RedisLock holder = locks.tryAcquire(name, Duration.ofSeconds(10)).orElseThrow()) {
            long start = System.nanoTime();
            assertThat(locks.acquire(name, Duration.ofSeconds(1), Duration.ofMillis(300))).isEmpty();
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofMillis(300));
            assertThat(holder.isHeld()).isTrue();
        }
    }

    @Test
    void autoRenewKeepsTheLockPastItsLeaseAndReportsALoss() {
        String name = RedisFixture.job();
        AtomicReference<RedisLock> lost = new AtomicReference<>();
        // A 3 s lease renewed every second: only a stall of the renewals of well over a second could lose it.
        Duration lease = Duration.ofSeconds(3);
        RedisLock lock = locks.tryAcquire(name, lease).orElseThrow().autoRenew(lost::set);
        long fence = lock.fencingToken();
        // For three leases it stays ours without a break, in Redis and locally.
        await().during(lease.multipliedBy(3)).atMost(lease.multipliedBy(3).plusSeconds(5))
                .until(() -> lock.isHeld() && lock.token().equals(jedis.get(lock.key())) && lost.get() == null);

        jedis.set(lock.key(), "someone-else"); // the lock was taken over (say, after a failover)
        await().atMost(Duration.ofSeconds(5)).until(() -> lost.get() == lock);
        assertThat(lock.isHeld()).isFalse();
        assertThat(lock.release()).isFalse();
        assertThat(jedis.get(lock.key())).isEqualTo("someone-else");
        assertThat(lock.fencingToken()).isEqualTo(fence);
        jedis.del(lock.key());
    }

    @Test
    void aReleasedLockIsNoLongerRenewed() {
        String name = RedisFixture.job();
        RedisLock lock = locks.tryAcquire(name, Duration.ofMillis(300)).orElseThrow().autoRenew(l -> {});
        assertThat(lock.release()).isTrue();
        assertThat(locks.watchdog.size()).isZero();
        assertThat(jedis.exists(lock.key())).isFalse();
    }

    @Test
    void anUnreachableServerFailsWithTheHostInOneLine() {
        try (LocalRedisServer own = LocalRedisServer.start();
             RedisLockProvider provider = RedisLockProvider.builder().uri(own.uri()).timeout(Duration.ofMillis(500)).build();
             RedisClient client = RedisClient.builder().hostAndPort(own.host(), own.port())
                     .clientConfig(redis.clients.jedis.DefaultJedisClientConfig.builder().timeoutMillis(500).build()).build();
             RedisLocks down = RedisLocks.builder(client).description("redis 127.0.0.1:" + own.port()).build()) {
            own.kill();
            assertThatThrownBy(() -> down.tryAcquire(RedisFixture.job(), Duration.ofSeconds(1)))
                    .isInstanceOf(LockException.class)
                    .hasMessageContaining("127.0.0.1:" + own.port())
                    .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
        }
    }

    @Test
    void badArgumentsFailFast() {
        assertThatThrownBy(() -> locks.tryAcquire("", Duration.ofSeconds(1))).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> locks.tryAcquire("a{b}", Duration.ofSeconds(1))).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> locks.tryAcquire("ok", Duration.ofMillis(1)))
                .hasMessage("lock lease must be at least 10ms, but was PT0.001S");
    }

    @Test
    void aLockWhoseValidityTheRoundTripUsedUpIsNotHandedOutButReleased() {
        String name = RedisFixture.job();
        // A server of its own: its commandstats count this test's scripts only.
        try (LocalRedisServer own = LocalRedisServer.start();
             TcpProxy slow = TcpProxy.to(own.host(), own.port());
             RedisClient viaProxy = RedisClient.create(own.host(), slow.port());
             RedisClient direct = RedisClient.create(own.host(), own.port());
             RedisLocks slowLocks = RedisLocks.on(viaProxy)) {
            slowLocks.tryAcquire(RedisFixture.job(), Duration.ofSeconds(1)).orElseThrow().release(); // connect and load both scripts
            slow.delayReplies(150);
            long scriptsBefore = scriptCalls(own);
            // Redis grants 100 ms; the reply arrives 150 ms later: by then another owner may hold it.
            assertThat(slowLocks.tryAcquire(name, Duration.ofMillis(100))).isEmpty();
            // ... and it was given back, not left to expire: the release script ran after the acquire script.
            // (The key itself has expired by now either way, so its absence alone proves nothing.)
            assertThat(scriptCalls(own) - scriptsBefore).as("scripts run: the acquire and the release").isEqualTo(2);
            assertThat(direct.exists(slowLocks.lockKey(name))).isFalse();
            // A lease that outlives the round trip is handed out as usual.
            Optional<RedisLock> held = slowLocks.tryAcquire(RedisFixture.job(), Duration.ofSeconds(2));
            assertThat(held).get().satisfies(l -> assertThat(l.isHeld()).isTrue());
            slow.delayReplies(0);
            assertThat(slowLocks.tryAcquire(name, Duration.ofSeconds(1))).isPresent();
        }
    }

    /** How many scripts the server ran ({@code EVALSHA} and {@code EVAL}). */
    private static long scriptCalls(LocalRedisServer server) {
        java.util.Map<String, LocalRedisServer.CommandStat> stats = server.commandStats();
        return java.util.stream.Stream.of("evalsha", "eval").map(stats::get).filter(java.util.Objects::nonNull)
                .mapToLong(LocalRedisServer.CommandStat::calls).sum();
    }

    /**
     * Tokens are max(counter + 1, Redis time in µs). The counter is written with the time and read in
     * one command; a counter already past the time (tokens drawn within one microsecond, a clock that
     * went back) must give counter + 1, written back, and never the smaller time.
     */
    @Test
    void aFenceCounterAheadOfRedisTimeGivesTheNextTokenAfterItNotTheTime() {
        String name = RedisFixture.job();
        String counter = locks.lockKey(name) + ":fence";
        long ahead = (System.currentTimeMillis() + Duration.ofDays(365).toMillis()) * 1_000; // a year ahead of Redis time, in µs
        jedis.set(counter, Long.toString(ahead));
        try (RedisLock first = locks.tryAcquire(name, Duration.ofSeconds(10)).orElseThrow()) {
            assertThat(first.fencingToken()).isEqualTo(ahead + 1);
        }
        assertThat(jedis.get(counter)).isEqualTo(Long.toString(ahead + 1));
        assertThat(jedis.pttl(counter)).isGreaterThan(Duration.ofDays(6).toMillis());
        try (RedisLock second = locks.tryAcquire(name, Duration.ofSeconds(10)).orElseThrow()) {
            assertThat(second.fencingToken()).isEqualTo(ahead + 2);
        }
        jedis.del(counter);
        try (RedisLock third = locks.tryAcquire(name, Duration.ofSeconds(10)).orElseThrow()) {
            assertThat(third.fencingToken()).as("a lost counter: Redis time").isBetween((System.currentTimeMillis() - 60_000) * 1_000,
                    (System.currentTimeMillis() + 60_000) * 1_000);
        }
    }

    @Test
    void aLocksFencingTokenNeverGoesBackAfterARestartWithoutPersistence() {
        String name = RedisFixture.job();
        try (LocalRedisServer own = LocalRedisServer.start();
             RedisClient client = RedisClient.create(own.host(), own.port());
             RedisLocks ownLocks = RedisLocks.on(client)) {
            long before;
            try (RedisLock lock = ownLocks.tryAcquire(name, Duration.ofSeconds(5)).orElseThrow()) {
                before = lock.fencingToken();
            }
            own.restart(); // empty: the counter is gone
            RedisLock after = await().atMost(Duration.ofSeconds(10)).ignoreExceptions()
                    .until(() -> ownLocks.tryAcquire(name, Duration.ofSeconds(5)), Optional::isPresent).orElseThrow();
            assertThat(after.fencingToken()).isGreaterThan(before);
            after.release();
        }
    }

    @Test
    void whileRedisKeepsFailingTheCircuitOpensAndCallsFailFastThenAProbeClosesIt() {
        String name = RedisFixture.job();
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (LocalRedisServer own = LocalRedisServer.start();
             RedisClient client = RedisClient.create(own.host(), own.port());
             RedisLocks guarded = RedisLocks.builder(client).meterRegistry(meters, "orders").circuitBreaker(
                     io.github.resilience4j.circuitbreaker.CircuitBreakerConfig.from(RedisLocks.DEFAULT_CIRCUIT_BREAKER)
                             .waitDurationInOpenState(Duration.ofSeconds(3)).build()).build()) {
            guarded.tryAcquire(name, Duration.ofSeconds(1)).orElseThrow().release();
            own.kill();
            List<String> failures = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                try {
                    guarded.tryAcquire(name, Duration.ofSeconds(1));
                } catch (LockException e) {
                    failures.add(e.getMessage());
                }
            }
            assertThat(failures).hasSize(8);
            // The first calls pay for trying; once half of the last calls failed (at least 5 seen), the rest fail fast.
            assertThat(failures.get(0)).contains("cannot reach the server");
            int firstFast = failures.indexOf(failures.stream().filter(m -> m.contains("circuit open")).findFirst().orElseThrow());
            assertThat(failures.subList(0, firstFast)).allSatisfy(m -> assertThat(m).contains("cannot reach the server"));
            assertThat(failures.subList(firstFast, failures.size())).allSatisfy(m -> assertThat(m).contains("circuit open"));
            assertThat(guarded.circuitState()).isEqualTo("open");
            assertThat(meters.get("lockstep.lock.circuit").tag("lock", "orders").gauge().value()).isEqualTo(2); // open
            assertThat(meters.get("lockstep.lock.acquires").tags("lock", "orders", "result", "error").counter().count()).isEqualTo(8);
            own.restart();
            // The circuit stays open 3 s (so none of the 8 calls above could meet a half-open probe), then a probe closes it.
            await().atMost(Duration.ofSeconds(15)).ignoreException(LockException.class)
                    .until(() -> guarded.tryAcquire(RedisFixture.job(), Duration.ofSeconds(1)).isPresent());
            assertThat(guarded.circuitState()).isEqualTo("closed");
            assertThat(meters.get("lockstep.lock.circuit").tag("lock", "orders").gauge().value()).isZero();
        }
    }

    @Test
    void theMetersCountAcquiresByResultHoldTimeLossesAndRefusedFencedWrites() {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        String name = RedisFixture.job();
        try (RedisLocks counted = RedisLocks.builder(jedis).meterRegistry(meters, "stock").build()) {
            RedisLock held = counted.tryAcquire(name, Duration.ofSeconds(5)).orElseThrow();
            assertThat(counted.tryAcquire(name, Duration.ofSeconds(5))).isEmpty();
            FencedValue value = FencedValue.of(jedis, "lockstep:stock:{" + name + "}").withMeters(meters, "stock");
            assertThat(value.write(held.fencingToken(), "9")).isTrue();
            assertThat(value.write(held.fencingToken() - 1, "10")).isFalse(); // a stale holder
            assertThat(held.release()).isTrue();
            RedisLock lost = counted.tryAcquire(name, Duration.ofSeconds(5)).orElseThrow();
            jedis.del(lost.key()); // someone deleted the key: the next extension is refused
            assertThat(lost.extend()).isFalse();
        }
        assertThat(meters.get("lockstep.lock.acquires").tags("lock", "stock", "result", "acquired").counter().count()).isEqualTo(2);
        assertThat(meters.get("lockstep.lock.acquires").tags("lock", "stock", "result", "contended").counter().count()).isEqualTo(1);
        assertThat(meters.get("lockstep.lock.held").tag("lock", "stock").timer().count()).isEqualTo(1);
        assertThat(meters.get("lockstep.lock.lost").tag("lock", "stock").counter().count()).isEqualTo(1);
        assertThat(meters.get("lockstep.lock.fenced.refused").tag("lock", "stock").counter().count()).isEqualTo(1);
    }
}
