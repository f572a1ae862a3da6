package io.lockstep.redis;

import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.github.resilience4j.circuitbreaker.CircuitBreakerConfig;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.LoggerFactory;

/**
 * Whether one Redlock master is asked at all: a master that failed to answer within the fan-out's
 * wait twice in its last four calls (stalled: SIGSTOP, a GC or disk pause, a partition that drops
 * packets) is left out, its vote failed at once, instead of costing every step its whole wait; a
 * probe in the background ({@link Quorum}, every {@link #PROBE_EVERY}) brings it back as soon as it
 * answers within the shortest wait of the steps. A fresh breaker judges after four calls, so a
 * master stalled from the start costs four waits; after that, two. Calls a majority settled
 * without waiting count when their wait is over. A resilience4j circuit breaker keeps the count and the state; the open state ends only
 * by a probe (no real call waits on a stalled master to find out). A master left out is a failed
 * vote, so every decision still needs a majority of all masters. Events {@code
 * redlock_master_excluded} and {@code redlock_master_back}. Thread-safe.
 */
final class MasterHealth {

    /** How often a master left out is probed. */
    static final Duration PROBE_EVERY = Duration.ofMillis(250);

    private static final CircuitBreakerConfig CONFIG = CircuitBreakerConfig.custom()
            .slidingWindowType(CircuitBreakerConfig.SlidingWindowType.COUNT_BASED)
            .slidingWindowSize(4)
            .minimumNumberOfCalls(4)
            .failureRateThreshold(50)
            .automaticTransitionFromOpenToHalfOpenEnabled(false)
            .waitDurationInOpenState(Duration.ofDays(365)) // only a probe ends it
            .build();

    private final String name;
    private final CircuitBreaker breaker;
    private final AtomicBoolean probing = new AtomicBoolean();

    MasterHealth(String name) {
        this.name = name;
        this.breaker = CircuitBreaker.of("lockstep-redlock-" + name, CONFIG);
        breaker.getEventPublisher().onStateTransition(e -> {
            if (e.getStateTransition().getToState() == CircuitBreaker.State.OPEN) {
                LoggerFactory.getLogger("io.lockstep.events").atWarn().addKeyValue("event", "redlock_master_excluded").addKeyValue("target", name)
                        .log("redlock master " + name + " did not answer in time in two of its last four calls: left out (a failed vote) "
                                + "until a probe gets an answer");
            } else if (e.getStateTransition().getToState() == CircuitBreaker.State.CLOSED) {
                LoggerFactory.getLogger("io.lockstep.events").atInfo().addKeyValue("event", "redlock_master_back").addKeyValue("target", name)
                        .log("redlock master " + name + " answers again: asked again");
            }
        });
    }

    /** Whether calls go to it: false while it is left out. */
    boolean asked() {
        return breaker.getState() != CircuitBreaker.State.OPEN;
    }

    /** It answered within the wait (an error of the server's own is an answer too). */
    void answered(long nanos) {
        breaker.onSuccess(nanos, TimeUnit.NANOSECONDS);
    }

    /** It did not answer within the wait, or could not be reached. */
    void failed(long nanos, Throwable why) {
        breaker.onError(nanos, TimeUnit.NANOSECONDS, why);
    }

    /** {@code closed} (asked) or {@code open} (left out until a probe gets through). */
    String state() {
        return asked() ? "closed" : "open";
    }

    /** Claims the one probe in flight for it; false when one is already out or it is asked anyway. */
    boolean startProbe() {
        return !asked() && probing.compareAndSet(false, true);
    }

    /**
     * A probe ended: an answer within the fan-out's wait brings the master back (a master that answers
     * only slower than the wait stays out, rather than flap in and out at every probe). The breaker's
     * window starts empty again, so it takes two timeouts in four calls to leave it out again.
     */
    void probed(boolean answeredInTime) {
        try {
            if (answeredInTime && !asked()) {
                breaker.transitionToClosedState();
            }
        } finally {
            probing.set(false); // after the transition: a probe started meanwhile would find it asked and not start
        }
    }

    String name() {
        return name;
    }
}
