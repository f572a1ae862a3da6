package io.lockstep.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lockstep.examples.StockReservation.Outcome;
import io.lockstep.redis.LocalRedisServer;
import io.lockstep.redis.LocalRedlock;
import io.lockstep.redis.RedisFixture;
import io.lockstep.redis.RedisLock;
import io.lockstep.redis.RedisLocks;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.RedisClient;

/** The stock example on a real redis-server: no oversell under threads, and a paused holder is fenced off. */
class StockReservationTest {

    private static LocalRedisServer server;
    private static RedisClient jedis;
    private static RedisLocks locks;

    @BeforeAll
    static void startRedis() {
        server = LocalRedisServer.start();
        jedis = RedisClient.create(server.host(), server.port());
        locks = RedisLocks.on(jedis);
    }

    @AfterAll
    static void stopRedis() {
        locks.close();
        jedis.close();
        server.close();
    }

    @Test
    void eightThreadsReservingUntilSoldOutReserveExactlyTheStock() throws Exception {
        reserveUntilSoldOut(new StockReservation(jedis, locks, RedisFixture.job()), 300);
    }

    /** The same, with the SKU's lock taken by Redlock over 5 masters (the stock itself stays on one Redis). */
    @Test
    void eightThreadsOnRedlockOverFiveMastersReserveExactlyTheStock() throws Exception {
        try (LocalRedlock masters = new LocalRedlock(5);
             RedisLocks redlock = RedisLocks.redlockBuilder(masters.clients).maxLease(StockReservation.LEASE).build()) {
            // Fresh masters count once they are up longer than maxLease (the restart quarantine).
            masters.awaitUptime(StockReservation.LEASE);
            reserveUntilSoldOut(new StockReservation(jedis, redlock, RedisFixture.job()), 100);
        }
    }

    private static void reserveUntilSoldOut(StockReservation sku, int total) throws Exception {
        sku.restock(total);
        ExecutorService pool = Executors.newFixedThreadPool(8);
        List<Future<Integer>> counts = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            int thread = t;
            counts.add(pool.submit(() -> {
                int reserved = 0;
                for (int order = 0; ; order++) {
                    Outcome outcome = sku.reserve("t" + thread + "-" + order, 1 + order % 2);
                    if (outcome == Outcome.SOLD_OUT) {
                        return reserved;
                    }
                    assertThat(outcome).isEqualTo(Outcome.RESERVED);
                    reserved += 1 + order % 2;
                }
            }));
        }
        int reserved = 0;
        for (Future<Integer> c : counts) {
            reserved += c.get();
        }
        pool.shutdown();
        StockReservation.Stock stock = sku.stock();
        assertThat(stock.available()).isBetween(0, 1); // the last order may want 2 of the 1 left
        assertThat(stock.total()).isEqualTo(total);
        assertThat(stock.reservations().values().stream().mapToInt(Integer::intValue).sum()).isEqualTo(reserved);
    }

    @Test
    void aHolderPausedPastItsLeaseHasItsLateWriteRefused() throws Exception {
        String name = RedisFixture.job();
        StockReservation sku = new StockReservation(jedis, locks, name);
        sku.restock(10);
        RedisLock paused = locks.tryAcquire("stock:" + name, Duration.ofMillis(300)).orElseThrow();
        // The paused holder reads, then stalls for a second (a GC pause) before writing.
        CompletableFuture<Outcome> late = CompletableFuture.supplyAsync(
                () -> sku.reserve(paused.fencingToken(), "paused-order", 4, Duration.ofSeconds(1)));
        await().atMost(Duration.ofSeconds(5)).until(() -> !paused.isHeld());
        assertThat(sku.reserve("fresh-order", 3)).isEqualTo(Outcome.RESERVED);

        assertThat(late.get()).isEqualTo(Outcome.STALE);
        StockReservation.Stock stock = sku.stock();
        assertThat(stock.reservations()).containsOnlyKeys("fresh-order");
        assertThat(stock.available()).isEqualTo(7);
        assertThat(stock.total()).isEqualTo(10);
        assertThat(sku.fence()).isGreaterThan(paused.fencingToken());
    }

    @Test
    void aJobsTokensAndALocksTokensGuardTheSameStockInTheOrderTheyWereTaken() throws Exception {
        String sku = RedisFixture.job();
        StockReservation stock = new StockReservation(jedis, locks, sku);
        stock.restock(10);
        // A scheduled job's tokens come from its own counter, stepped by several claims already.
        long jobToken = 0;
        try (io.lockstep.redis.RedisLockProvider provider = io.lockstep.redis.RedisLockProvider.builder().client(jedis, "test").build()) {
            for (int i = 3; i >= 1; i--) {
                java.time.Instant slot = java.time.Instant.ofEpochMilli(provider.serverTimeMillis()).minusSeconds(i);
                io.lockstep.scheduler.lock.Lease lease = new io.lockstep.scheduler.lock.Lease("reserve-" + sku, slot,
                        UUID.randomUUID().toString(), Duration.ofSeconds(5), false);
                jobToken = provider.claim(List.of(new io.lockstep.scheduler.lock.ClaimRequest(lease, "w", Duration.ofSeconds(10), false)))
                        .get(0).fencingToken();
            }
        }
        assertThat(stock.reserve(jobToken, "order-from-a-job", 1, Duration.ZERO)).isEqualTo(Outcome.RESERVED);
        // A lock taken afterwards, from another counter, still gets a higher token and may write.
        assertThat(stock.reserve("order-from-a-lock", 1)).isEqualTo(Outcome.RESERVED);
        assertThat(stock.fence()).isGreaterThan(jobToken);
        // And the job's older token can no longer write.
        assertThat(stock.reserve(jobToken, "late-order", 1, Duration.ZERO)).isEqualTo(Outcome.STALE);
        assertThat(stock.stock().available()).isEqualTo(8);
    }
}
