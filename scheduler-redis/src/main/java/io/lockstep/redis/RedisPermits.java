package io.lockstep.redis;

import io.lockstep.scheduler.lock.Permits;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * The scheduler's limits ({@link Permits}) on one server (or Sentinel, or Cluster): each limit is
 * the lock API's semaphore of the same name ({@link RedisSemaphore}, keys
 * {@code <prefix>:lock:{<limit>}#<i>}), so application code may share a limit with scheduled jobs
 * through {@code RedisLocks.semaphore(limit, n)} on the same key prefix. Its permits are renewed by
 * the lock API's watchdog ({@link RedisLock#autoRenew}). Thread-safe; closed with its provider.
 */
final class RedisPermits implements Permits, AutoCloseable {

    private final RedisLocks locks;

    RedisPermits(redis.clients.jedis.UnifiedJedis jedis, String prefix, String description) {
        // No circuit breaker of its own: the scheduler's calls meet the same Redis and report its outages.
        this.locks = RedisLocks.builder(jedis).keyPrefix(prefix).circuitBreaker(null).description(description).build();
    }

    @Override
    public Optional<Permit> tryAcquire(String limit, int size, String waiter, long priorityMillis, String holder, Duration lease) {
        return locks.semaphore(limit, size).tryAcquire(lease, waiter, priorityMillis, RedisSemaphore.WAITER_TTL, holder)
                .map(lock -> new Held(limit, lock));
    }

    @Override
    public void leave(String limit, String waiter) {
        locks.semaphore(limit, 1).leave(waiter);
    }

    @Override
    public Map<String, State> states(Map<String, Integer> limits) {
        Map<String, State> states = new LinkedHashMap<>();
        limits.forEach((limit, size) -> {
            RedisSemaphore s = locks.semaphore(limit, size);
            states.put(limit, new State(size, s.holders().stream().map(h -> new Holder(h.permit(), h.holder(), h.leaseLeft())).toList(),
                    s.waiters().stream().map(w -> new Waiter(w.id(), w.priority())).toList()));
        });
        return states;
    }

    @Override
    public void close() {
        locks.close();
    }

    /** A permit: the semaphore's lock. */
    private record Held(String limit, RedisLock lock) implements Permit {
        @Override
        public int index() {
            return RedisSemaphore.permitOf(lock);
        }

        @Override
        public long fencingToken() {
            return lock.fencingToken();
        }

        @Override
        public void watch(Runnable onLost) {
            lock.autoRenew(l -> onLost.run());
        }

        @Override
        public boolean release() {
            return lock.release();
        }

        @Override
        public String toString() {
            return limit + "#" + index() + " (token " + fencingToken() + ")";
        }
    }
}
