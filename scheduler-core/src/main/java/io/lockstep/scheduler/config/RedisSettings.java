package io.lockstep.scheduler.config;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * The {@code redis} section: where the lock store lives. Plain data; the Redis module turns it into
 * a client. {@link #toString()} never shows a password.
 *
 * @param uri {@code redis://} or {@code rediss://} URI; may carry user and password
 * @param keyPrefix the first part of every key
 * @param timeout connect and read timeout of every command
 * @param user the ACL user, overriding one in the URI
 * @param password the password, overriding one in the URI
 */
public record RedisSettings(String uri, String keyPrefix, Duration timeout, Optional<String> user, Optional<String> password) {

    public static final String DEFAULT_URI = "redis://127.0.0.1:6379";
    public static final String DEFAULT_KEY_PREFIX = "lockstep";
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(2);

    public RedisSettings {
        Objects.requireNonNull(uri, "uri");
        Objects.requireNonNull(keyPrefix, "keyPrefix");
        Objects.requireNonNull(timeout, "timeout");
        user = user == null ? Optional.empty() : user;
        password = password == null ? Optional.empty() : password;
    }

    /** Every setting at its default. */
    public static RedisSettings defaults() {
        return new RedisSettings(DEFAULT_URI, DEFAULT_KEY_PREFIX, DEFAULT_TIMEOUT, Optional.empty(), Optional.empty());
    }

    /** The URI with any password replaced by {@code ***}. */
    public String maskedUri() {
        return uri.replaceAll("(rediss?://[^:@/]*:)[^@/]*@", "$1***@");
    }

    @Override
    public String toString() {
        return "RedisSettings[uri=" + maskedUri() + ", keyPrefix=" + keyPrefix + ", timeout=" + timeout
                + ", user=" + user.orElse("") + ", password=" + (password.isPresent() ? "***" : "") + "]";
    }
}
