package io.lockstep.examples;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.lockstep.redis.FencedValue;
import io.lockstep.redis.RedisLock;
import io.lockstep.redis.RedisLocks;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.locks.LockSupport;
import redis.clients.jedis.UnifiedJedis;

/**
 * The second use case Lockstep was built around: reserving stock so that concurrent reservers (threads, processes,
 * hosts) never oversell. A reservation holds the SKU's lock and writes the stock with the lock's
 * fencing token into a {@link FencedValue}, so a holder that was paused past its lease (a long GC,
 * a stopped VM) cannot write its stale view over a newer holder's: the store refuses its token.
 *
 * <pre>{@code
 * StockReservation sku = new StockReservation(jedis, RedisLocks.on(jedis), "sku-42");
 * sku.restock(100);
 * switch (sku.reserve("order-7", 2)) { case RESERVED -> ...; case SOLD_OUT -> ...; ... }
 * }</pre>
 *
 * <p>The stock is one JSON document (what is left, and every order's quantity) in the fenced value
 * {@code stock:{<sku>}}: one atomic write moves both, so "nothing oversold" reads straight from
 * the store: {@code available + sum(reservations) == restocked}. Thread-safe.
 */
public final class StockReservation {

    /** How a reservation ended. */
    public enum Outcome {
        /** Reserved and written. */
        RESERVED,
        /** Not enough stock left; nothing written. */
        SOLD_OUT,
        /** The lock did not come free within the wait; nothing written. */
        BUSY,
        /** The fenced write was refused: a holder with a higher token came while we were paused. */
        STALE
    }

    /** The stock of one SKU as stored. */
    public record Stock(int available, Map<String, Integer> reservations) {
        public Stock {
            reservations = Map.copyOf(reservations == null ? Map.of() : reservations);
        }

        /** Everything there was: what is left plus what is reserved. */
        public int total() {
            return available + reservations.values().stream().mapToInt(Integer::intValue).sum();
        }
    }

    static final Duration LEASE = Duration.ofSeconds(5);
    static final Duration WAIT = Duration.ofSeconds(30);
    private static final ObjectMapper JSON = new ObjectMapper();

    private final RedisLocks locks;
    private final FencedValue stock;
    private final String sku;

    public StockReservation(UnifiedJedis jedis, RedisLocks locks, String sku) {
        this.locks = Objects.requireNonNull(locks, "locks");
        this.sku = Objects.requireNonNull(sku, "sku");
        this.stock = FencedValue.of(jedis, "stock:{" + sku + "}");
    }

    /** Sets the available stock (and clears reservations), under the SKU's lock. */
    public void restock(int quantity) throws InterruptedException {
        try (RedisLock lock = lock()) {
            if (!stock.admit(lock.fencingToken()) || !stock.write(lock.fencingToken(), json(new Stock(quantity, Map.of())))) {
                throw new IllegalStateException("restock of " + sku + " refused: a newer lock holder wrote meanwhile");
            }
        }
    }

    /** Reserves {@code quantity} for {@code orderId} under the SKU's lock, waiting for it up to 30 s. */
    public Outcome reserve(String orderId, int quantity) throws InterruptedException {
        Optional<RedisLock> acquired = locks.acquire(lockName(), LEASE, WAIT);
        if (acquired.isEmpty()) {
            return Outcome.BUSY;
        }
        try (RedisLock lock = acquired.get()) {
            return reserve(lock.fencingToken(), orderId, quantity, Duration.ZERO);
        }
    }

    /**
     * Reserves under a fencing token the caller holds (a lock's, or a scheduled job's). Admits the
     * token first, so that no older holder can write between our read and our write.
     *
     * @param pauseBeforeWrite a stall between the read and the write that ignores interrupts, as a
     *     long GC pause or a stopped VM would; {@link Duration#ZERO} for none (tests use it)
     */
    public Outcome reserve(long fencingToken, String orderId, int quantity, Duration pauseBeforeWrite) {
        if (!stock.admit(fencingToken)) {
            return Outcome.STALE;
        }
        Stock current = stock();
        if (current.available() < quantity) {
            return Outcome.SOLD_OUT;
        }
        Map<String, Integer> reservations = new LinkedHashMap<>(current.reservations());
        reservations.merge(orderId, quantity, Integer::sum);
        Stock next = new Stock(current.available() - quantity, reservations);
        stall(pauseBeforeWrite);
        return stock.write(fencingToken, json(next)) ? Outcome.RESERVED : Outcome.STALE;
    }

    /** The stock as stored now. */
    public Stock stock() {
        return stock.read().map(StockReservation::parse).orElse(new Stock(0, Map.of()));
    }

    /** The highest fencing token the stock has seen. */
    public long fence() {
        return stock.fence();
    }

    /**
     * Runs reservers until the SKU is sold out and prints how many reservations they made:
     * {@code java -cp examples/target/lockstep-examples.jar io.lockstep.examples.StockReservation REDIS_URI SKU THREADS NAME}.
     * Start several at once, on several hosts, against one Redis: together they never reserve more
     * than was restocked.
     */
    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: StockReservation REDIS_URI SKU THREADS NAME");
            System.exit(2);
        }
        try (redis.clients.jedis.RedisClient client = redis.clients.jedis.RedisClient.create(java.net.URI.create(args[0]));
             RedisLocks locks = RedisLocks.on(client)) {
            StockReservation sku = new StockReservation(client, locks, args[1]);
            java.util.concurrent.atomic.AtomicInteger reserved = new java.util.concurrent.atomic.AtomicInteger();
            java.util.List<Thread> threads = new java.util.ArrayList<>();
            for (int t = 0; t < Integer.parseInt(args[2]); t++) {
                String prefix = args[3] + "-" + t + "-";
                Thread thread = new Thread(() -> {
                    try {
                        for (int order = 0; ; order++) {
                            Outcome outcome = sku.reserve(prefix + order, 1);
                            if (outcome == Outcome.SOLD_OUT) {
                                return;
                            }
                            if (outcome == Outcome.RESERVED) {
                                reserved.incrementAndGet();
                            }
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }, "reserver-" + t);
                thread.start();
                threads.add(thread);
            }
            for (Thread t : threads) {
                t.join();
            }
            System.out.println("reserved " + reserved.get());
        }
    }

    private RedisLock lock() throws InterruptedException {
        return locks.acquire(lockName(), LEASE, WAIT)
                .orElseThrow(() -> new IllegalStateException("lock " + lockName() + " did not come free within " + WAIT));
    }

    private String lockName() {
        return "stock:" + sku;
    }

    private static void stall(Duration d) {
        long end = System.nanoTime() + d.toNanos();
        for (long left = d.toNanos(); left > 0; left = end - System.nanoTime()) {
            LockSupport.parkNanos(left); // an interrupt does not end a GC pause either
        }
    }

    private static String json(Stock s) {
        try {
            return JSON.writeValueAsString(s);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    private static Stock parse(String text) {
        try {
            return JSON.readValue(text, Stock.class);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("stock document is not valid JSON: " + e.getOriginalMessage(), e);
        }
    }
}
