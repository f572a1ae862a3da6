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

    LockMeters(MeterRegistry registry, String lock) {
        this.registry = registry;
        this.lock = lock;
    }

    void acquire(String result) {
        Counter.builder("lockstep.lock.acquires").description("lock acquire attempts by result").tags("lock", lock, "result", result)
                .register(registry).increment();
    }

    void held(long nanos) {
        Timer.builder("lockstep.lock.held").description("from a lock acquired to its release").tags("lock", lock)
                .register(registry).record(nanos, TimeUnit.NANOSECONDS);
    }

    void lost() {
        Counter.builder("lockstep.lock.lost").description("locks lost while held").tags("lock", lock).register(registry).increment();
    }

    void refused() {
        Counter.builder("lockstep.lock.fenced.refused").description("fenced writes refused for a stale token").tags("lock", lock)
                .register(registry).increment();
    }

    void circuit(CircuitBreaker breaker) {
        Gauge.builder("lockstep.lock.circuit", breaker, b -> switch (b.getState()) {
            case CLOSED -> 0;
            case HALF_OPEN -> 1;
            default -> 2;
        }).description("the lock API's circuit breaker: 0 closed, 1 half open, 2 open").tags("lock", lock).register(registry);
    }
}
