package io.lockstep.scheduler;

import java.time.Duration;
import java.util.Objects;

/**
 * How often a failed run is tried again within the same slot claim (same lease, same fencing
 * token). The delay before attempt {@code n + 1} is {@code backoff * 2^(n-1)}, at most
 * {@code maxBackoff}; the lease is renewed meanwhile. A run that lost its lease, timed out or was
 * interrupted by shutdown is not retried. Immutable.
 *
 * @param maxAttempts how many attempts in all; 1 means no retry
 * @param backoff the delay before the second attempt
 * @param maxBackoff the longest delay between attempts
 */
public record Retry(int maxAttempts, Duration backoff, Duration maxBackoff) {

    /** One attempt, no retry: the default. */
    public static final Retry NONE = new Retry(1, Duration.ofSeconds(1), Duration.ofSeconds(30));
    public static final Duration DEFAULT_BACKOFF = Duration.ofSeconds(1);
    public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofSeconds(30);

    public Retry {
        Objects.requireNonNull(backoff, "backoff");
        Objects.requireNonNull(maxBackoff, "maxBackoff");
        if (maxAttempts < 1) {
            throw new IllegalArgumentException("retry.maxAttempts must be at least 1, but was " + maxAttempts);
        }
        if (backoff.isNegative()) {
            throw new IllegalArgumentException("retry.backoff must not be negative, but was " + backoff);
        }
        if (maxBackoff.compareTo(backoff) < 0) {
            throw new IllegalArgumentException("retry.maxBackoff must be at least retry.backoff (" + backoff
                    + "), but was " + maxBackoff);
        }
    }

    /** The delay after the failed attempt number {@code attempt} (1-based). */
    public Duration delayAfter(int attempt) {
        Duration d = backoff;
        for (int i = 1; i < attempt && d.compareTo(maxBackoff) < 0; i++) {
            d = d.multipliedBy(2);
        }
        return d.compareTo(maxBackoff) > 0 ? maxBackoff : d;
    }
}
