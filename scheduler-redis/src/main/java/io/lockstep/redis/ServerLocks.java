package io.lockstep.redis;

import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.github.resilience4j.circuitbreaker.CircuitBreakerConfig;
import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.Watchdog;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import redis.clients.jedis.UnifiedJedis;

/**
 * The lock API on one Redis server (standalone, Sentinel or Cluster: one decision per lock).
 * {@link RedisLocks} delegates here when built on one client, and to {@link RedlockLocks} when built
 * on several masters; both hand out the same {@link RedisLock}.
 *
 * <p><b>Acquire</b> is one round trip of {@code lock_acquire.lua}: {@code SET NX PX} of the owner
 * token, and the fence step in the same script, so the token (max(counter + 1, Redis time in
 * microseconds)) is handed out with the lock and never goes back. A lock whose round trip used up its
 * validity ({@link Watchdog#validity}: the lease less a drift allowance) is given back at once and
 * reported as not taken: by the time we could act on it, Redis may let another owner take it.
 *
 * <p><b>Extend</b> and <b>release</b> are compare-and-act scripts on the owner token; the watchdog's
 * renewal extends a whole batch in one pipelined round trip.
 *
 * <p><b>Circuit breaker.</b> All calls go through one {@link RedisCalls} with an optional circuit
 * breaker: while Redis keeps failing, calls fail fast with a {@link LockException}; its transitions
 * are logged (event {@code lock_circuit}) and metered. Thread-safe.
 */
final class ServerLocks {

    private final RedisLocks locks;
    /** Null when built without one. */
    private final CircuitBreaker breaker;
    private final RedisCalls calls;

    ServerLocks(RedisLocks locks, UnifiedJedis jedis, String description, CircuitBreakerConfig breakerConfig, LockMeters meters) {
        this.locks = locks;
        this.breaker = breakerConfig == null ? null : CircuitBreaker.of("lockstep-locks", breakerConfig);
        if (breaker != null) {
            breaker.getEventPublisher().onStateTransition(e -> RedisLocks.EVENTS.atLevel(
                    e.getStateTransition().getToState() == CircuitBreaker.State.CLOSED ? org.slf4j.event.Level.INFO : org.slf4j.event.Level.WARN)
                    .addKeyValue("event", "lock_circuit").addKeyValue("target", description)
                    .addKeyValue("from", e.getStateTransition().getFromState().name().toLowerCase(java.util.Locale.ROOT))
                    .addKeyValue("state", e.getStateTransition().getToState().name().toLowerCase(java.util.Locale.ROOT))
                    .log(switch (e.getStateTransition().getToState()) {
                        case OPEN -> "redis keeps failing: lock calls fail fast for a while";
                        case HALF_OPEN -> "trying redis again";
                        case CLOSED -> "redis answers again: lock calls go through";
                        default -> "lock circuit changed";
                    }));
        }
        if (breaker != null && meters != LockMeters.NONE) {
            meters.circuit(breaker);
        }
        this.calls = new RedisCalls(jedis, description, breaker);
    }

    RedisCalls calls() {
        return calls;
    }

    /** Its circuit breaker's state ({@code closed}, {@code open}, {@code half_open}), or {@code disabled} without one. */
    String circuitState() {
        return calls.circuitState();
    }

    /**
     * One acquire: see the class comment.
     *
     * @return the lock, or empty when another owner holds it or the round trip used up its validity
     * @throws LockException when Redis cannot be reached
     */
    Optional<RedisLock> tryAcquire(String name, String key, Duration lease) {
        String token = LockScripts.newToken();
        long sent = System.nanoTime();
        long fence;
        try {
            Object reply = calls.call("acquire", new RedisCalls.Call(LockScripts.ACQUIRE, List.of(key, key + ":fence"),
                    List.of(token, Long.toString(lease.toMillis()), Long.toString(LockScripts.FENCE_TTL.toMillis()))));
            fence = calls.asLong("acquire", reply);
        } catch (LockException e) {
            locks.meters.acquire("error");
            throw e;
        }
        long durationMs = (System.nanoTime() - sent) / 1_000_000;
        RedisLocks.EVENTS.atDebug().addKeyValue("event", fence > 0 ? "lock_acquired" : "lock_contended")
                .addKeyValue("lock_name", key).addKeyValue("action", "acquire").addKeyValue("identifier", token)
                .addKeyValue("duration_ms", durationMs).addKeyValue("success", fence > 0)
                .addKeyValue("fencing_token", fence).log(fence > 0 ? "lock acquired" : "lock held by another owner");
        if (fence == 0) {
            locks.meters.acquire("contended");
            return Optional.empty();
        }
        long elapsed = System.nanoTime() - sent;
        if (elapsed >= Watchdog.validity(lease).toNanos()) {
            // The round trip used up the lock's validity: by the time we could act on it, Redis may
            // already let another owner take it. As the Redis distlock page says, that is a failed
            // acquire: give it back (owner-checked) and report no lock.
            calls.call("release", new RedisCalls.Call(LockScripts.RELEASE, List.of(key), List.of(token)));
            RedisLocks.EVENTS.atWarn().addKeyValue("event", "lock_expired_on_arrival").addKeyValue("lock_name", key)
                    .addKeyValue("action", "acquire").addKeyValue("identifier", token)
                    .addKeyValue("duration_ms", elapsed / 1_000_000).addKeyValue("success", false)
                    .log("lock acquired too late to use: the round trip took longer than its validity; released");
            locks.meters.acquire("expired_on_arrival");
            return Optional.empty();
        }
        locks.meters.acquire("acquired");
        return Optional.of(new RedisLock(locks, name, key, token, fence, lease, sent));
    }

    /** Extends one lock; whether it was still ours. */
    boolean extend(RedisLock lock) {
        return calls.asLong("extend", calls.call("extend", lock.extendCall())) == 1L;
    }

    /** Extends a batch of locks in one round trip (the watchdog's renewal); per lock, whether it was still ours. */
    List<Boolean> extend(List<RedisLock> held) {
        List<Object> replies = calls.batch("renew", held, RedisLock::extendCall);
        List<Boolean> owned = new ArrayList<>(replies.size());
        for (Object reply : replies) {
            owned.add(calls.asLong("renew", reply) == 1L);
        }
        return owned;
    }

    /** Releases one lock; whether it was still ours. */
    boolean release(RedisLock lock) {
        return calls.asLong("release", calls.call("release", new RedisCalls.Call(LockScripts.RELEASE, List.of(lock.key()), List.of(lock.token())))) == 1L;
    }
}
