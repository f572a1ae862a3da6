package io.lockstep.redis;

import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import java.util.concurrent.TimeUnit;

/**
 * The lock API's meters, tagged with a {@code lock} name the caller chooses per {@link RedisLocks}
 * (a use, such as {@code orders}; never one value per resource id, so the tag stays bounded):
 * {@code lockstep.lock.acquires} ({@code result} = acquired, contended, expired_on_arrival, error),
 * {@code lockstep.lock.held} (from acquire to release), {@code lockstep.lock.lost},
 * {@code lockstep.lock.fenced.refused} (writes a {@link FencedValue} refused) and
 * {@code lockstep.lock.circuit} (0 closed, 1 half open, 2 open).
 */
final class LockMeters {

    static final LockMeters NONE = new LockMeters(new CompositeMeterRegistry(), "none");

    private final MeterRegistry registry;
    private final String lock;
    /** Built once: a lock cycle must not pay for a meter lookup (tags, filters, the registry's map) twice per cycle. */
    private final java.util.Map<String, Counter> acquires = new java.util.concurrent.ConcurrentHashMap<>();
    private final Timer held;
    private final Counter lost;
    private final Counter refused;

    LockMeters(MeterRegistry registry, String lock) {
        this.registry = registry;
        this.lock = lock;
        this.held = Timer.builder("lockstep.lock.held").description("from a lock acquired to its release").tags("lock", lock)
                .register(registry);
        this.lost = Counter.builder("lockstep.lock.lost").description("locks lost while held").tags("lock", lock).register(registry);
        this.refused = Counter.builder("lockstep.lock.fenced.refused").description("fenced writes refused for a stale token")
                .tags("lock", lock).register(registry);
    }

    void acquire(String result) {
        acquires.computeIfAbsent(result, r -> Counter.builder("lockstep.lock.acquires").description("lock acquire attempts by result")
                .tags("lock", lock, "result", r).register(registry)).increment();
    }

    void held(long nanos) {
        held.record(nanos, TimeUnit.NANOSECONDS);
    }

    void lost() {
        lost.increment();
    }

    void refused() {
        refused.increment();
    }

    void circuit(CircuitBreaker breaker) {
        Gauge.builder("lockstep.lock.circuit", breaker, b -> switch (b.getState()) {
            case CLOSED -> 0;
            case HALF_OPEN -> 1;
            default -> 2;
        }).description("the lock API's circuit breaker: 0 closed, 1 half open, 2 open").tags("lock", lock).register(registry);
    }
}
