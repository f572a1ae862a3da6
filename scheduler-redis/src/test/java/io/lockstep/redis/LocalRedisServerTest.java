package io.lockstep.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.ClaimResult.Status;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.Outcome;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.RedisClient;

/**
 * The fixture itself, and the scripts on the Redis that ships inside the embedded-redis jar (6.2),
 * which is what a machine without redis-server runs; CI's PATH has Redis 7 for everything else.
 */
class LocalRedisServerTest {

    @Test
    void theEmbeddedServerRunsTheClaimScriptsToo() {
        try (LocalRedisServer server = LocalRedisServer.startEmbedded();
             RedisLockProvider provider = RedisLockProvider.builder().uri(server.uri()).build()) {
            assertThat(server.binary().getFileName().toString()).startsWith("lockstep-redis-server-");
            Instant slot = Instant.ofEpochMilli(provider.serverTimeMillis()).minusMillis(5);
            Lease lease = new Lease("embedded", slot, "t", Duration.ofSeconds(5), true);
            assertThat(provider.claim(List.of(new ClaimRequest(lease, "w", Duration.ofSeconds(5), false))).get(0).status())
                    .isEqualTo(Status.CLAIMED);
            assertThat(provider.renew(List.of(lease))).containsExactly(true);
            assertThat(provider.complete(lease, Outcome.SUCCEEDED)).isTrue();
        }
    }

    /**
     * With {@code lockstep.localRedis.ports} (as the build sets per test JVM), ports come from that
     * range, skip one something listens on, and are never handed out twice: a server killed and
     * restarted on its port cannot lose it to another server of the same JVM.
     */
    @Test
    void freePortsComeFromTheRangeSkipATakenOneAndAreNeverHandedOutTwice() throws Exception {
        String before = System.getProperty(LocalPorts.PROPERTY);
        try (java.net.ServerSocket taken = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            int p = taken.getLocalPort();
            int from = Math.min(p, 65_535 - 3); // four ports, one of them taken
            System.setProperty(LocalPorts.PROPERTY, from + "-" + (from + 3));
            int first = LocalPorts.free();
            int second = LocalPorts.free();
            assertThat(List.of(first, second)).allSatisfy(port -> assertThat(port).isBetween(from, from + 3).isNotEqualTo(p))
                    .doesNotHaveDuplicates();
            System.setProperty(LocalPorts.PROPERTY, first + "-" + first);
            org.assertj.core.api.Assertions.assertThatThrownBy(LocalPorts::free).hasMessageContaining("no free port left");
            System.setProperty(LocalPorts.PROPERTY, "2${surefire.forkNumber}000-2${surefire.forkNumber}999");
            assertThat(LocalPorts.free()).as("not a range (unresolved): the kernel picks").isPositive();
            assertThat(LocalPorts.range("70000-70010")).isNull();
            assertThat(LocalPorts.range("2000-1000")).isNull();
            assertThat(LocalPorts.range(" 21000 - 21999 ")).containsExactly(21000, 21999);
        } finally {
            if (before == null) {
                System.clearProperty(LocalPorts.PROPERTY);
            } else {
                System.setProperty(LocalPorts.PROPERTY, before);
            }
        }
    }

    @Test
    void pauseStopsAnsweringAndResumeAnswersAgain() {
        try (LocalRedisServer server = LocalRedisServer.start();
             RedisClient client = RedisClient.builder().hostAndPort(server.host(), server.port())
                     .clientConfig(redis.clients.jedis.DefaultJedisClientConfig.builder().socketTimeoutMillis(300).build()).build()) {
            assertThat(client.ping()).isEqualTo("PONG");
            server.pause();
            assertThat(org.assertj.core.api.Assertions.catchThrowable(client::ping)).isNotNull();
            server.resume();
            org.awaitility.Awaitility.await().ignoreExceptions().until(() -> "PONG".equals(client.ping()));
        }
    }

    @Test
    void commandStatsCountWhatRanAndNotTheirOwnConnection() {
        try (LocalRedisServer server = LocalRedisServer.start();
             RedisClient client = RedisClient.create(server.host(), server.port())) {
            client.set("a", "1");
            client.set("b", "2");
            client.eval("return redis.call('GET', KEYS[1])", List.of("a"), List.of());
            var stats = server.commandStats();
            assertThat(stats.get("set").calls()).isEqualTo(2);
            assertThat(stats.get("get").calls()).isEqualTo(1); // inside the script
            assertThat(stats.get("eval").calls()).isEqualTo(1);
            long hellos = stats.get("hello").calls();
            assertThat(server.commandStats().get("hello").calls()).isEqualTo(hellos + 1); // the first call's own
        }
    }
}
