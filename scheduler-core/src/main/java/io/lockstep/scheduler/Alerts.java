package io.lockstep.scheduler;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * Where the verdicts of the jobs' expectations are sent besides the log ({@code alerts:}): each
 * webhook gets every breach and clearance once as a JSON POST ({@link Webhooks}). Immutable.
 *
 * @param webhooks the URLs ({@code http} or {@code https}); their paths and queries may carry a
 *     secret, so logs name only their host
 * @param timeout how long one POST may take
 * @param retries how many more times a POST that failed (no answer, or not 2xx) is tried, after
 *     1 s, 2 s, 4 s, ...
 */
public record Alerts(List<URI> webhooks, Duration timeout, int retries) {

    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(5);
    public static final int DEFAULT_RETRIES = 3;
    public static final Alerts NONE = new Alerts(List.of(), DEFAULT_TIMEOUT, DEFAULT_RETRIES);

    public Alerts {
        webhooks = List.copyOf(webhooks);
        Objects.requireNonNull(timeout, "timeout");
        for (URI u : webhooks) {
            if (!("http".equals(u.getScheme()) || "https".equals(u.getScheme())) || u.getHost() == null) {
                throw new IllegalArgumentException("a webhook must be an http:// or https:// URL with a host, but was " + Webhooks.safe(u));
            }
        }
        if (timeout.toMillis() < 100 || timeout.compareTo(Duration.ofMinutes(1)) > 0) {
            throw new IllegalArgumentException("alerts.timeout must be between 100ms and 1m, but was " + timeout);
        }
        if (retries < 0 || retries > 10) {
            throw new IllegalArgumentException("alerts.retries must be between 0 and 10, but was " + retries);
        }
    }

    /**
     * The longest one worker may spend delivering a verdict to every webhook, with every retry: a
     * verdict is left to another worker only once this has passed (its delivery lease).
     */
    public Duration deliveryTime() {
        long backoffs = 0;
        for (int i = 0; i < retries; i++) {
            backoffs += Webhooks.backoff(i).toMillis();
        }
        long perHook = timeout.toMillis() * (retries + 1L) + backoffs;
        return Duration.ofMillis(perHook * webhooks.size()).plusSeconds(5); // and the round trips to the store
    }

    /** The webhooks by scheme, host and port only: a path, query or user info may be a secret. */
    @Override
    public String toString() {
        return "Alerts[webhooks=" + webhooks.stream().map(Webhooks::safe).toList() + ", timeout=" + timeout + ", retries=" + retries + "]";
    }
}
