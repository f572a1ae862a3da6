package io.lockstep.redis;

import io.lockstep.scheduler.config.RedisSettings;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.time.Duration;
import java.util.Base64;
import java.util.LinkedHashSet;
import java.util.Optional;
import java.util.Set;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManagerFactory;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.UnifiedJedis;

/**
 * Builds the one Jedis client of a process from {@link RedisSettings}: a client of one server, one
 * that follows the master through Sentinel across failovers, or a Redis Cluster client (of whichever
 * Jedis line is there: {@link JedisLines}); with ACL credentials and TLS (PEM files: a CA to trust,
 * and a client certificate and PKCS#8 key for mutual TLS) in every mode. Stateless.
 */
final class RedisClients {

    /**
     * Connections per pool: the tick thread, the watchdog, the completer and job threads each hold
     * one for a single round trip.
     */
    static final int POOL_SIZE = 16;

    /** How often a Cluster client re-reads which node holds which slots. */
    static final Duration CLUSTER_TOPOLOGY_REFRESH = Duration.ofSeconds(1);

    /** A built client and how to name it in logs (never with credentials). */
    record Built(UnifiedJedis client, String description) {}

    private RedisClients() {}

    /**
     * @throws IllegalArgumentException when the settings cannot make a client (a bad URI, an
     *     unreadable or invalid PEM file), with one line that says which
     */
    static Built create(RedisSettings settings) {
        SSLSocketFactory tls = settings.tls().enabled() ? socketFactory(settings.tls()) : null;
        RedisSettings.Endpoint endpoint = settings.endpoint();
        if (endpoint instanceof RedisSettings.Sentinel s) {
            DefaultJedisClientConfig master = config(settings.timeout(), settings.user(), settings.password(), tls).build();
            DefaultJedisClientConfig sentinels = config(settings.timeout(), s.user(), s.password(), tls).build();
            UnifiedJedis client = JedisLines.sentinel(s.master(), hostPorts(s.nodes()), master, sentinels, pool(settings.timeout()));
            return new Built(client, s.describe());
        }
        if (endpoint instanceof RedisSettings.Cluster c) {
            // Pipelined script calls do not refresh the slot map when a master fails over: refresh it
            // on a timer, so that claims find the promoted replica within about a second.
            UnifiedJedis client = JedisLines.cluster(hostPorts(c.nodes()),
                    config(settings.timeout(), settings.user(), settings.password(), tls).build(), pool(settings.timeout()),
                    CLUSTER_TOPOLOGY_REFRESH);
            return new Built(client, c.describe());
        }
        return standalone(((RedisSettings.Standalone) endpoint).uri(), settings, tls);
    }

    private static Built standalone(String uri, RedisSettings settings, SSLSocketFactory tls) {
        URI parsed;
        try {
            parsed = new URI(uri);
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException("redis uri is not a valid URI: " + e.getReason());
        }
        String scheme = parsed.getScheme();
        if (!"redis".equals(scheme) && !"rediss".equals(scheme)) {
            throw new IllegalArgumentException("redis uri must start with redis:// or rediss://, but was " + scheme + "://");
        }
        if (parsed.getHost() == null) {
            throw new IllegalArgumentException("redis uri must name a host, but was \"" + new RedisSettings.Standalone(uri).describe() + "\"");
        }
        int port = parsed.getPort() == -1 ? 6379 : parsed.getPort();
        String[] userInfo = parsed.getUserInfo() == null ? new String[0] : parsed.getUserInfo().split(":", 2);
        Optional<String> user = settings.user().or(() -> userInfo.length == 2 && !userInfo[0].isEmpty()
                ? Optional.of(userInfo[0]) : Optional.empty());
        Optional<String> password = settings.password().or(() -> userInfo.length == 2 ? Optional.of(userInfo[1])
                : userInfo.length == 1 && !userInfo[0].isEmpty() ? Optional.of(userInfo[0]) : Optional.empty());
        SSLSocketFactory factory = tls == null && "rediss".equals(scheme) ? socketFactory(settings.tls()) : tls;
        DefaultJedisClientConfig.Builder config = config(settings.timeout(), user, password, factory);
        if ("rediss".equals(scheme)) {
            config.ssl(true);
        }
        String path = parsed.getPath();
        if (path != null && path.length() > 1) {
            try {
                config.database(Integer.parseInt(path.substring(1)));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("redis uri database must be a number, but was \"" + path.substring(1) + "\"");
            }
        }
        HostAndPort hostAndPort = new HostAndPort(parsed.getHost(), port);
        UnifiedJedis client = JedisLines.standalone(hostAndPort, config.build(), pool(settings.timeout()));
        return new Built(client, (factory != null || "rediss".equals(scheme) ? "rediss " : "redis ") + hostAndPort);
    }

    private static DefaultJedisClientConfig.Builder config(Duration timeout, Optional<String> user, Optional<String> password,
            SSLSocketFactory tls) {
        DefaultJedisClientConfig.Builder config = DefaultJedisClientConfig.builder()
                .connectionTimeoutMillis((int) timeout.toMillis())
                .socketTimeoutMillis((int) timeout.toMillis())
                .clientName("lockstep")
                // Said, not negotiated: a Jedis client built without a protocol borrows a connection to learn
                // the server's, and one built while Redis is down never learns it, reads replies by RESP2 rules
                // while its connections speak RESP3, and fails every HGETALL or ZRANGE WITHSCORES with a
                // ClassCastException (a worker or an application started before its Redis; seen in the fault
                // campaign, and by lockstep.fail-fast=false). RESP3 is what Jedis 8 negotiates with Redis 6.2+.
                .protocol(redis.clients.jedis.RedisProtocol.RESP3);
        user.ifPresent(config::user);
        password.ifPresent(config::password);
        if (tls != null) {
            config.ssl(true).sslSocketFactory(tls);
        }
        return config;
    }

    /**
     * A bounded wait for a pooled connection: an exhausted pool fails like a timeout (closed), never
     * blocks the tick thread or the watchdog forever. No PING to idle connections: an idle worker
     * sends nothing; a stale connection fails on use, and then the pool is cleared.
     */
    private static ConnectionPoolConfig pool(Duration timeout) {
        ConnectionPoolConfig pool = new ConnectionPoolConfig();
        pool.setMaxTotal(POOL_SIZE);
        pool.setMaxIdle(POOL_SIZE);
        pool.setMaxWait(timeout);
        pool.setTestWhileIdle(false);
        return pool;
    }

    private static Set<HostAndPort> hostPorts(java.util.List<String> nodes) {
        Set<HostAndPort> set = new LinkedHashSet<>();
        for (String node : nodes) {
            int colon = node.lastIndexOf(':');
            set.add(new HostAndPort(node.substring(0, colon), Integer.parseInt(node.substring(colon + 1))));
        }
        return set;
    }

    /** TLS from PEM files: the CA to trust (else the JVM's defaults), and a client certificate and key for mutual TLS. */
    static SSLSocketFactory socketFactory(RedisSettings.Tls tls) {
        try {
            TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            if (tls.caCert().isPresent()) {
                KeyStore store = KeyStore.getInstance("PKCS12");
                store.load(null, null);
                int i = 0;
                for (Certificate ca : certificates(tls.caCert().get())) {
                    store.setCertificateEntry("ca-" + i++, ca);
                }
                trust.init(store);
            } else {
                trust.init((KeyStore) null);
            }
            KeyManagerFactory keys = null;
            if (tls.clientCert().isPresent() && tls.clientKey().isPresent()) {
                KeyStore store = KeyStore.getInstance("PKCS12");
                store.load(null, null);
                char[] none = new char[0];
                store.setKeyEntry("client", privateKey(tls.clientKey().get()), none,
                        certificates(tls.clientCert().get()).toArray(new Certificate[0]));
                keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
                keys.init(store, none);
            }
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(keys == null ? null : keys.getKeyManagers(), trust.getTrustManagers(), null);
            return context.getSocketFactory();
        } catch (GeneralSecurityException | IOException e) {
            throw new IllegalArgumentException("redis tls: " + e.getMessage(), e);
        }
    }

    private static java.util.Collection<? extends Certificate> certificates(Path file) throws IOException {
        try (var in = Files.newInputStream(file)) {
            java.util.Collection<? extends Certificate> certs = CertificateFactory.getInstance("X.509").generateCertificates(in);
            if (certs.isEmpty()) {
                throw new IllegalArgumentException("redis tls: no certificate in " + file);
            }
            return certs;
        } catch (java.security.cert.CertificateException e) {
            throw new IllegalArgumentException("redis tls: " + file + " is not a PEM certificate (" + e.getMessage() + ")", e);
        }
    }

    private static PrivateKey privateKey(Path file) throws IOException {
        String pem = Files.readString(file);
        if (pem.contains("BEGIN RSA PRIVATE KEY") || pem.contains("BEGIN EC PRIVATE KEY")) {
            throw new IllegalArgumentException("redis tls: " + file + " is a PKCS#1/SEC1 key; convert it to PKCS#8 with "
                    + "openssl pkcs8 -topk8 -nocrypt -in " + file.getFileName() + " -out client-pkcs8.key");
        }
        int begin = pem.indexOf("-----BEGIN PRIVATE KEY-----");
        int end = pem.indexOf("-----END PRIVATE KEY-----");
        if (begin < 0 || end < 0) {
            throw new IllegalArgumentException("redis tls: " + file + " holds no unencrypted PKCS#8 private key (BEGIN PRIVATE KEY)");
        }
        byte[] der = Base64.getMimeDecoder().decode(pem.substring(begin + "-----BEGIN PRIVATE KEY-----".length(), end));
        for (String algorithm : new String[] {"RSA", "EC", "Ed25519"}) {
            try {
                return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
            } catch (GeneralSecurityException e) {
                // try the next algorithm
            }
        }
        throw new IllegalArgumentException("redis tls: " + file + " is not an RSA, EC or Ed25519 private key");
    }
}
