package io.lockstep.scheduler.config;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * The {@code redis} section: where the lock store lives and how to reach it. Plain data; the Redis
 * module turns it into a client. {@link #toString()} never shows a password.
 *
 * @param endpoint one standalone server, a Sentinel-watched master, or a Redis Cluster
 * @param keyPrefix the first part of every key
 * @param timeout connect and read timeout of every command
 * @param user the ACL user, overriding one in a standalone URI
 * @param password the password, overriding one in a standalone URI
 * @param tls TLS for every connection (a {@code rediss://} URI turns it on too)
 * @param waitReplicas when above 0, a claim (and an outcome) counts only once this many replicas
 *     acknowledged it ({@code WAIT}); an unacknowledged claim is disowned and never runs
 * @param waitTimeout how long the server waits for those replicas
 */
public record RedisSettings(Endpoint endpoint, String keyPrefix, Duration timeout, Optional<String> user,
        Optional<String> password, Tls tls, int waitReplicas, Duration waitTimeout) {

    public static final String DEFAULT_URI = "redis://127.0.0.1:6379";
    public static final String DEFAULT_KEY_PREFIX = "lockstep";
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(2);
    public static final Duration DEFAULT_WAIT_TIMEOUT = Duration.ofMillis(100);

    /** Where Redis is. */
    public sealed interface Endpoint permits Standalone, Sentinel, Cluster, Redlock {
        /** A short description for logs, without credentials. */
        String describe();
    }

    /**
     * One server.
     *
     * @param uri {@code redis://} or {@code rediss://} URI; may carry user and password
     */
    public record Standalone(String uri) implements Endpoint {
        public Standalone {
            Objects.requireNonNull(uri, "uri");
        }

        /** The URI with any password replaced by {@code ***}. */
        @Override
        public String describe() {
            return uri.replaceAll("(rediss?://[^:@/]*:)[^@/]*@", "$1***@");
        }
    }

    /**
     * A master watched by Sentinels, followed across failovers.
     *
     * @param master the master's name in the Sentinels' config
     * @param nodes the Sentinels, {@code host:port}
     * @param user the Sentinels' own ACL user, when they require one
     * @param password the Sentinels' own password, when they require one
     */
    public record Sentinel(String master, List<String> nodes, Optional<String> user, Optional<String> password)
            implements Endpoint {
        public Sentinel {
            Objects.requireNonNull(master, "master");
            nodes = List.copyOf(nodes);
            user = user == null ? Optional.empty() : user;
            password = password == null ? Optional.empty() : password;
        }

        @Override
        public String describe() {
            return "sentinel " + master + " via " + String.join(",", nodes);
        }

        @Override
        public String toString() {
            return "Sentinel[master=" + master + ", nodes=" + nodes + ", user=" + user.orElse("") + ", password="
                    + (password.isPresent() ? "***" : "") + "]";
        }
    }

    /**
     * A Redis Cluster, found from seed nodes.
     *
     * @param nodes seed nodes, {@code host:port}; the rest is discovered
     */
    public record Cluster(List<String> nodes) implements Endpoint {
        public Cluster {
            nodes = List.copyOf(nodes);
        }

        @Override
        public String describe() {
            return "cluster via " + String.join(",", nodes);
        }
    }

    /**
     * Independent masters (no replication between them), decided by majority: Redlock.
     *
     * @param nodes the masters, {@code host:port}; at least 3 (5 is usual)
     * @param nodeTimeout how long each master's answer is awaited; a master slower than this does not
     *     count for that decision
     * @param quarantine how long a restarted master sits out (written to, not counted); empty: the
     *     longest record ttl of any claim made (the safe value); zero: off
     */
    /**
     * @param durable the masters (of {@code nodes}) whose data survives a restart up to the last
     *     write ({@code appendonly yes}, {@code appendfsync always}): one restarted with its data
     *     counts at once instead of sitting out the quarantine
     */
    public record Redlock(List<String> nodes, Duration nodeTimeout, Optional<Duration> quarantine, List<String> durable) implements Endpoint {
        public static final Duration DEFAULT_NODE_TIMEOUT = Duration.ofMillis(200);

        public Redlock {
            nodes = List.copyOf(nodes);
            Objects.requireNonNull(nodeTimeout, "nodeTimeout");
            quarantine = quarantine == null ? Optional.empty() : quarantine;
            durable = durable == null ? List.of() : List.copyOf(durable);
        }

        public Redlock(List<String> nodes, Duration nodeTimeout, Optional<Duration> quarantine) {
            this(nodes, nodeTimeout, quarantine, List.of());
        }

        @Override
        public String describe() {
            return "redlock over " + String.join(",", nodes);
        }
    }

    /**
     * TLS for every connection, with PEM files.
     *
     * @param enabled whether connections use TLS
     * @param caCert the CA certificate(s) to trust; empty: the JVM's default trust store
     * @param clientCert the client's certificate chain, for mutual TLS (with {@code clientKey})
     * @param clientKey the client's private key (PKCS#8 PEM), for mutual TLS
     */
    public record Tls(boolean enabled, Optional<Path> caCert, Optional<Path> clientCert, Optional<Path> clientKey) {
        public static final Tls OFF = new Tls(false, Optional.empty(), Optional.empty(), Optional.empty());

        public Tls {
            caCert = caCert == null ? Optional.empty() : caCert;
            clientCert = clientCert == null ? Optional.empty() : clientCert;
            clientKey = clientKey == null ? Optional.empty() : clientKey;
        }
    }

    public RedisSettings {
        Objects.requireNonNull(endpoint, "endpoint");
        Objects.requireNonNull(keyPrefix, "keyPrefix");
        Objects.requireNonNull(timeout, "timeout");
        Objects.requireNonNull(tls, "tls");
        Objects.requireNonNull(waitTimeout, "waitTimeout");
        if (waitReplicas < 0) {
            throw new IllegalArgumentException("waitReplicas must not be negative, but was " + waitReplicas);
        }
        user = user == null ? Optional.empty() : user;
        password = password == null ? Optional.empty() : password;
    }

    /** Every setting at its default. */
    public static RedisSettings defaults() {
        return new RedisSettings(new Standalone(DEFAULT_URI), DEFAULT_KEY_PREFIX, DEFAULT_TIMEOUT, Optional.empty(),
                Optional.empty(), Tls.OFF, 0, DEFAULT_WAIT_TIMEOUT);
    }

    /** The same settings with another endpoint (tests and embedders). */
    public RedisSettings with(Endpoint other) {
        return new RedisSettings(other, keyPrefix, timeout, user, password, tls, waitReplicas, waitTimeout);
    }

    /**
     * Where Redis is and as whom, for logs: the URI without its credentials, or the Sentinel /
     * Cluster nodes, then the ACL user that is actually used ({@code redis.user} over one in the URI).
     */
    public String describe() {
        Optional<String> uriUser = Optional.empty();
        String where = endpoint.describe();
        if (endpoint instanceof Standalone s) {
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("^(rediss?://)([^@/]*)@(.*)$").matcher(s.uri());
            if (m.matches()) {
                String userInfo = m.group(2);
                String name = userInfo.contains(":") ? userInfo.substring(0, userInfo.indexOf(':')) : userInfo;
                uriUser = name.isEmpty() ? Optional.empty() : Optional.of(name);
                where = m.group(1) + m.group(3);
            }
        }
        Optional<String> effective = user.isPresent() ? user : uriUser;
        return where + effective.map(u -> " as user " + u).orElse("");
    }

    @Override
    public String toString() {
        return "RedisSettings[" + endpoint.describe() + ", keyPrefix=" + keyPrefix + ", timeout=" + timeout
                + ", user=" + user.orElse("") + ", password=" + (password.isPresent() ? "***" : "") + ", tls=" + tls.enabled() + ", waitReplicas=" + waitReplicas + "]";
    }
}
