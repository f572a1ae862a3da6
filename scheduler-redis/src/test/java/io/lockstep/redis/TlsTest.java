package io.lockstep.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lockstep.scheduler.config.RedisSettings;
import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.ClaimResult;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.LockException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * TLS with PEM files against a real redis-server with a TLS port that requires client certificates
 * (mutual TLS): claims go through; a wrong CA, a missing client certificate and a plaintext port each
 * fail at the first call with one line. Needs a redis-server built with TLS (Debian's Redis 7) and
 * {@code openssl}; skips without them.
 */
class TlsTest {

    private static TestCertificates certs;
    private static LocalRedisServer server;
    private static int tlsPort;

    /**
     * Starts the TLS server once, when the tools are there. The assumptions are checked per test
     * ({@link #tools()}): a class aborted in {@code @BeforeAll} is reported by surefire as "Tests
     * run: 0" with no {@code <skipped>} entry, so CI's skip check could not see it.
     */
    @BeforeAll
    static void start() {
        if (!TestCertificates.available() || !TestCertificates.redisServerHasTls()) {
            return;
        }
        // Decided from the binary before anything starts: once it has TLS, any failure to start the
        // server below (a bad certificate, a port taken, a wrong argument) fails the tests.
        certs = TestCertificates.make("lockstep-test-ca");
        tlsPort = RedisFixture.freeLoopbackPort();
        server = LocalRedisServer.start(certs.serverArgs(tlsPort, true).toArray(new String[0]));
    }

    @BeforeEach
    void tools() {
        Assumptions.assumeTrue(TestCertificates.available(), "openssl not found: install the Debian package openssl to run TLS tests");
        Assumptions.assumeTrue(TestCertificates.redisServerHasTls(), "this redis-server (" + LocalRedisServer.findBinary()
                + ") was built without TLS: install the Debian package redis-server to run TLS tests");
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            server.close();
        }
    }

    private static RedisLockProvider provider(String uri, RedisSettings.Tls tls) {
        return RedisLockProvider.builder().settings(new RedisSettings(new RedisSettings.Standalone(uri), "lockstep",
                Duration.ofSeconds(2), Optional.empty(), Optional.empty(), tls, 0, RedisSettings.DEFAULT_WAIT_TIMEOUT)).build();
    }

    private static RedisSettings.Tls tls(TestCertificates ca, boolean clientCert) {
        return new RedisSettings.Tls(true, Optional.of(ca.ca()), clientCert ? Optional.of(certs.cert("client")) : Optional.empty(),
                clientCert ? Optional.of(certs.key("client")) : Optional.empty());
    }

    @Test
    void mutualTlsWithPemFilesClaims() {
        try (RedisLockProvider p = provider("rediss://127.0.0.1:" + tlsPort, tls(certs, true))) {
            p.ping();
            Instant slot = Instant.ofEpochMilli(p.serverTimeMillis()).minusMillis(5);
            ClaimResult result = p.claim(List.of(new ClaimRequest(new Lease("tls-job", slot, "t", Duration.ofSeconds(5), true), "w",
                    Duration.ofSeconds(10), false))).get(0);
            assertThat(result.status()).isEqualTo(ClaimResult.Status.CLAIMED);
        }
    }

    @Test
    void aWrongCaIsOneClearLine() {
        TestCertificates other = TestCertificates.make("some-other-ca");
        try (RedisLockProvider p = provider("rediss://127.0.0.1:" + tlsPort, tls(other, true))) {
            assertThatThrownBy(p::ping).isInstanceOf(LockException.class)
                    .hasMessageContaining("rediss 127.0.0.1:" + tlsPort).hasMessageContaining("TLS handshake failed")
                    .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
        }
    }

    @Test
    void aMissingClientCertificateIsRefused() {
        try (RedisLockProvider p = provider("rediss://127.0.0.1:" + tlsPort, tls(certs, false))) {
            assertThatThrownBy(p::ping).isInstanceOf(LockException.class).hasMessageContaining("rediss 127.0.0.1:" + tlsPort)
                    .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
        }
    }

    @Test
    void aPlaintextServerIsOneClearLine() {
        try (RedisLockProvider p = provider("rediss://127.0.0.1:" + server.port(), tls(certs, true))) {
            assertThatThrownBy(p::ping).isInstanceOf(LockException.class)
                    .hasMessageStartingWith("rediss 127.0.0.1:" + server.port()).hasMessageContaining("TLS")
                    .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
        }
    }
}
