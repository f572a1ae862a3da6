package io.lockstep.redis;

import io.github.resilience4j.circuitbreaker.CircuitBreakerConfig;
import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.Watchdog;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.UnifiedJedis;

/**
 * Named distributed locks on one Redis, usable without the scheduler: take a lock for a lease,
 * get a fencing token with it, extend it (by hand or by a watchdog), release it owner-checked.
 *
 * <pre>{@code
 * RedisLocks locks = RedisLocks.on(jedis);            // any UnifiedJedis you already have
 * try (RedisLock lock = locks.acquire("stock:sku-42", Duration.ofSeconds(10), Duration.ofSeconds(2))
 *         .orElseThrow(() -> new IllegalStateException("busy"))) {
 *     stock.write(lock.fencingToken(), ...);         // a fenced resource refuses older tokens
 * }                                                  // released, only if still ours
 * }</pre>
 *
 * <p>Keys: {@code <prefix>:lock:{<name>}} holds the owner token (a random 128-bit hex string) with
 * the lease as its ttl; {@code <prefix>:lock:{<name>}:fence} is the lock's fence counter ({@link LockScripts#FENCE_TTL},
 * refreshed by every acquire), stepped in the same script that takes the lock: the next token is
 * max(counter + 1, Redis time in microseconds), so tokens never go back, not even after the counter
 * is lost. Acquire is {@code SET NX PX}; release and
 * extend are compare-and-act Lua scripts, so nobody can release or extend a lock they do not own.
 *
 * <p>The work is done by {@link ServerLocks} on one server (with its circuit breaker) and by
 * {@link RedlockLocks} over several masters; this class checks names and leases, waits with backoff,
 * and owns the watchdog that renews locks.
 *
 * <p>Thread-safe; share one per process. {@link #close()} stops the renewal thread of
 * {@link RedisLock#autoRenew} and, on Redlock, waits (at most a node wait) for the calls a
 * majority settled early to reach the other masters; the Redis client stays yours to close.
 */
public final class RedisLocks implements AutoCloseable {

    public static final String DEFAULT_KEY_PREFIX = RedisLockProvider.DEFAULT_KEY_PREFIX;
    /** The first wait of {@link #acquire}; each retry doubles it, up to {@link #DEFAULT_MAX_BACKOFF}. */
    public static final Duration DEFAULT_BACKOFF = Duration.ofMillis(5);
    public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofMillis(200);
    /** Redlock: tries after a vote without a quorum, beyond the first. */
    public static final int DEFAULT_REDLOCK_RETRIES = 3;
    static final Duration DEFAULT_REDLOCK_RETRY_DELAY = Duration.ofMillis(20);
    /** Redlock: the longest lease, and the restart quarantine of a master. */
    public static final Duration DEFAULT_MAX_LEASE = Duration.ofSeconds(60);

    /**
     * The default circuit breaker: over the last 10 calls (at least 5), when half or more could not
     * reach Redis, calls fail fast for 5 s; then one probe goes out, and closes the circuit when it
     * gets through. Calls that Redis answered, whatever it answered, count as successes.
     */
    public static final CircuitBreakerConfig DEFAULT_CIRCUIT_BREAKER = CircuitBreakerConfig.custom()
            .slidingWindowType(CircuitBreakerConfig.SlidingWindowType.COUNT_BASED)
            .slidingWindowSize(10)
            .minimumNumberOfCalls(5)
            .failureRateThreshold(50)
            .waitDurationInOpenState(Duration.ofSeconds(5))
            .permittedNumberOfCallsInHalfOpenState(1)
            .build();

    static final Logger EVENTS = LoggerFactory.getLogger("io.lockstep.events");

    /** The one server's locks; null over several masters. */
    private final ServerLocks server;
    /** Redlock over several masters; null on one server. */
    private final RedlockLocks redlock;
    private final String prefix;
    private final Duration backoff;
    private final Duration maxBackoff;
    final Watchdog<RedisLock> watchdog;
    final LockMeters meters;

    private RedisLocks(Builder b) {
        this.meters = b.meters;
        if (b.masters == null) {
            this.server = new ServerLocks(this, b.jedis, b.description, b.breaker, meters);
            this.redlock = null;
        } else {
            this.server = null;
            this.redlock = RedlockLocks.over(this, b.masters, b.nodeNames, b.breaker, b.retries, b.retryDelay, b.maxLease);
        }
        this.prefix = b.keyPrefix;
        this.backoff = b.backoff;
        this.maxBackoff = b.maxBackoff;
        this.watchdog = new Watchdog<>("lockstep-lock-watchdog", this::renew, new Watchdog.Listener<>() {
            @Override
            public void lost(Watchdog<RedisLock>.Watch watch, String reason) {
                watch.lease().lost(reason);
            }
        });
    }

    /** Locks on {@code jedis} with the default key prefix and backoff. */
    public static RedisLocks on(UnifiedJedis jedis) {
        return builder(jedis).build();
    }

    /** A builder for locks on {@code jedis} (a {@code RedisClient}, {@code RedisSentinelClient}, ...). */
    public static Builder builder(UnifiedJedis jedis) {
        return new Builder(jedis, null);
    }

    /**
     * Redlock over {@code masters}, independent Redis masters (no replication between them; 5 is
     * usual, at least 3), with the default retries and {@link #DEFAULT_MAX_LEASE}. See
     * {@link #redlockBuilder}.
     */
    public static RedisLocks redlock(List<? extends UnifiedJedis> masters) {
        return redlockBuilder(masters).build();
    }

    /**
     * A builder for Redlock over {@code masters}: each acquire, extension and release goes to every
     * master at once and counts only with a majority (N/2 + 1) and time left; the same
     * {@link RedisLock} comes back, with a fencing token that never goes back across majorities.
     * A master restarted less than {@code maxLease} ago is written to but does not count (the
     * restart quarantine). The clients stay yours to close. Details: the README's Redlock section.
     */
    public static Builder redlockBuilder(List<? extends UnifiedJedis> masters) {
        return new Builder(null, List.copyOf(masters));
    }

    /**
     * Takes the lock if nobody holds it, with one round trip.
     *
     * @param lease how long the lock lives unless extended; at least 10ms
     * @return the held lock, or empty when another holder has it, or when the round trip took longer
     *     than the lock's validity (the lease less a drift allowance; the lock is then released)
     * @throws LockException when Redis cannot be reached (then nobody can tell whether we hold it:
     *     the lock, if it was taken, expires after the lease)
     */
    public Optional<RedisLock> tryAcquire(String name, Duration lease) {
        String key = lockKey(name);
        checkLease(lease);
        if (redlock != null) {
            return redlock.tryAcquire(name, key, lease);
        }
        return server.tryAcquire(name, key, lease);
    }

    /**
     * Takes the lock, waiting up to {@code wait} for it: tries, then retries after an exponential
     * backoff with full jitter (a random wait up to {@code backoff * 2^n}, at most the builder's
     * {@code maxBackoff}), so that waiters do not hammer Redis in lockstep.
     *
     * @return the held lock, or empty when it did not come free within {@code wait}
     * @throws InterruptedException when the thread is interrupted while waiting
     * @throws LockException when Redis cannot be reached
     */
    public Optional<RedisLock> acquire(String name, Duration lease, Duration wait) throws InterruptedException {
        long deadline = System.nanoTime() + wait.toNanos();
        long ceiling = backoff.toNanos();
        while (true) {
            Optional<RedisLock> lock = tryAcquire(name, lease);
            if (lock.isPresent()) {
                return lock;
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                return Optional.empty();
            }
            long pause = Math.min(left, ThreadLocalRandom.current().nextLong(ceiling + 1));
            TimeUnit.NANOSECONDS.sleep(pause);
            ceiling = Math.min(maxBackoff.toNanos(), ceiling * 2);
        }
    }

    /**
     * A semaphore of {@code permits} permits named {@code name} (no braces): at most that many
     * holders at once across every process that asks for it by that name, each for a lease, with a
     * fencing token per permit. See {@link RedisSemaphore}. Cheap: it holds no state of its own.
     */
    public RedisSemaphore semaphore(String name, int permits) {
        lockKey(name); // checks the name
        if (permits < 1 || permits > 1_000) {
            throw new IllegalArgumentException("a semaphore needs 1 to 1000 permits, but was given " + permits);
        }
        return new RedisSemaphore(this, name, permits);
    }

    /** The one server's locks; null on Redlock. */
    ServerLocks server() {
        return server;
    }

    /** Redlock's; null on one server. */
    RedlockLocks redlock() {
        return redlock;
    }

    /**
     * The circuit breaker's state: {@code closed} (calls go out), {@code open} (Redis kept failing;
     * calls fail fast with a {@link LockException} until the cool-down ends), {@code half_open} (a few
     * probes go out), or {@code disabled} when built without one. On Redlock each master has its own
     * breaker: this is the state of most of them, so {@code open} means no majority can be asked
     * ({@link #circuitStates()} has each).
     */
    public String circuitState() {
        return redlock == null ? server.circuitState() : redlock.circuitState();
    }

    /** Each master's circuit breaker state by its name, in order (one entry, {@code redis}, on one server). */
    public Map<String, String> circuitStates() {
        return redlock == null ? Map.of("redis", circuitState()) : redlock.circuitStates();
    }

    /** Extends one lock; whether it was still ours (on Redlock: on a quorum). */
    boolean extend(RedisLock lock) {
        if (redlock != null) {
            return redlock.extend(List.of(lock)).get(0);
        }
        return server.extend(lock);
    }

    /** Releases one lock; whether it was still ours (on Redlock: on a quorum). */
    boolean release(RedisLock lock) {
        if (redlock != null) {
            return redlock.release(lock);
        }
        return server.release(lock);
    }

    /** Stops renewing locks; they expire after their lease unless released. Idempotent. */
    @Override
    public void close() {
        watchdog.close();
        if (redlock != null) {
            redlock.nodes.awaitInFlight(); // the rest of a release that returned once a majority released
        }
    }

    String lockKey(String name) {
        Objects.requireNonNull(name, "name");
        if (name.isEmpty() || name.indexOf('{') >= 0 || name.indexOf('}') >= 0) {
            throw new IllegalArgumentException("lock name must be non-empty without braces, but was \"" + name + "\"");
        }
        return prefix + ":lock:{" + name + "}";
    }

    private static void checkLease(Duration lease) {
        if (lease.toMillis() < 10) {
            throw new IllegalArgumentException("lock lease must be at least 10ms, but was " + lease);
        }
    }

    /** The watchdog's renewer: extends a batch of locks in one round trip. */
    private List<Boolean> renew(List<RedisLock> locks) {
        if (redlock != null) {
            return redlock.extend(locks);
        }
        return server.extend(locks);
    }

    /** Builds {@link RedisLocks}. Fails fast on a bad value. Not thread-safe. */
    public static final class Builder {
        private final UnifiedJedis jedis;
        private final List<UnifiedJedis> masters;
        private List<String> nodeNames;
        private int retries = DEFAULT_REDLOCK_RETRIES;
        private Duration retryDelay = DEFAULT_REDLOCK_RETRY_DELAY;
        private Duration maxLease = DEFAULT_MAX_LEASE;
        private String keyPrefix = DEFAULT_KEY_PREFIX;
        private Duration backoff = DEFAULT_BACKOFF;
        private Duration maxBackoff = DEFAULT_MAX_BACKOFF;
        private String description = "redis";
        private CircuitBreakerConfig breaker = DEFAULT_CIRCUIT_BREAKER;
        private LockMeters meters = LockMeters.NONE;

        private Builder(UnifiedJedis jedis, List<UnifiedJedis> masters) {
            if (masters == null) {
                this.jedis = Objects.requireNonNull(jedis, "jedis");
                this.masters = null;
            } else {
                if (masters.size() < 3) {
                    throw new IllegalArgumentException("redlock needs at least 3 independent masters (5 is usual), but was given "
                            + masters.size());
                }
                this.jedis = null;
                this.masters = masters;
                List<String> names = new ArrayList<>();
                for (int i = 1; i <= masters.size(); i++) {
                    names.add("master " + i);
                }
                this.nodeNames = names;
            }
        }

        /** Redlock: how errors and events name each master, in order, for example {@code 10.0.0.5:6379}. */
        public Builder nodeNames(List<String> names) {
            if (masters == null || names.size() != masters.size()) {
                throw new IllegalArgumentException("nodeNames needs one name per Redlock master");
            }
            this.nodeNames = List.copyOf(names);
            return this;
        }

        /**
         * Redlock: how many more times {@link RedisLocks#tryAcquire} tries after a vote in which no
         * quorum formed (default {@value RedisLocks#DEFAULT_REDLOCK_RETRIES}), each after
         * {@code delay} plus a random part up to as much again (default 20 ms).
         */
        public Builder redlockRetries(int retries, Duration delay) {
            if (retries < 0 || delay.isNegative()) {
                throw new IllegalArgumentException("redlock retries and delay must not be negative");
            }
            this.retries = retries;
            this.retryDelay = delay;
            return this;
        }

        /**
         * Redlock: the longest lease handed out (default 60 s), and so the restart quarantine: a
         * master up for less than this may have restarted without the lock keys it held, so it is
         * written to but does not count. Longer leases are refused.
         */
        public Builder maxLease(Duration maxLease) {
            if (maxLease.toMillis() < 10) {
                throw new IllegalArgumentException("maxLease must be at least 10ms, but was " + maxLease);
            }
            this.maxLease = maxLease;
            return this;
        }

        /** The first part of every key (default {@code lockstep}). */
        public Builder keyPrefix(String prefix) {
            this.keyPrefix = RedisCalls.checkKeyPrefix(prefix);
            return this;
        }

        /**
         * The circuit breaker that makes calls fail fast while Redis keeps failing (default
         * {@link RedisLocks#DEFAULT_CIRCUIT_BREAKER}); null for none.
         */
        public Builder circuitBreaker(CircuitBreakerConfig config) {
            this.breaker = config;
            return this;
        }

        /** The first and the longest wait between tries of {@link RedisLocks#acquire}. */
        public Builder backoff(Duration first, Duration max) {
            if (first.isNegative() || first.isZero() || max.compareTo(first) < 0) {
                throw new IllegalArgumentException("backoff must be positive and at most max, but was " + first + " and " + max);
            }
            this.backoff = first;
            this.maxBackoff = max;
            return this;
        }

        /**
         * Where the meters go ({@code lockstep.lock.acquires}, {@code .held}, {@code .lost},
         * {@code .circuit}), tagged {@code lock=<lock>}: a name for this use of locks (say
         * {@code orders}), never one per resource, so that the tag stays bounded.
         */
        public Builder meterRegistry(io.micrometer.core.instrument.MeterRegistry registry, String lock) {
            this.meters = new LockMeters(Objects.requireNonNull(registry, "registry"), Objects.requireNonNull(lock, "lock"));
            return this;
        }

        /** How errors name the server, for example {@code redis 10.0.0.5:6379} (no credentials). */
        public Builder description(String description) {
            this.description = Objects.requireNonNull(description, "description");
            return this;
        }

        public RedisLocks build() {
            return new RedisLocks(this);
        }
    }
}
