package io.lockstep.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.RedisClient;

/**
 * A Redlock master's restart quarantine is never shorter than promised, although Redis's
 * {@code uptime_in_seconds} (whole seconds: now and the start, each rounded down) reads 1 as early
 * as a few ms after a start.
 */
class RestartQuarantineTest {

    private static final Duration QUARANTINE = Duration.ofSeconds(1);

    @Test
    void aRestartedNodeDoesNotCountBeforeTheWholeQuarantineEvenWhenItsUptimeAlreadyReadsIt() {
        try (LocalRedisServer server = LocalRedisServer.start();
                RedisClient client = LocalRedlock.client(server)) {
            // The client and its calls are built before the restarts: from the moment the uptime first
            // reads 1 only the probe itself runs, well within the second before it reads 2. The uptime
            // is read through this client, so its pool holds a connection made after the last restart
            // (the reads that met a connection the restart broke failed, and the pool dropped it).
            RedisCalls calls = new RedisCalls(client, "node", null, QUARANTINE);
            // The case under test: the uptime reads 1 well before a whole second has passed. A restart
            // in the middle of a wall-clock second gets there after about half a second; on a loaded
            // machine the restart itself may slip into the next second, so it is tried a few times.
            long restarted = 0;
            long readOneAfterMs = Long.MAX_VALUE;
            for (int attempt = 0; attempt < 5 && readOneAfterMs >= QUARANTINE.toMillis() - 100; attempt++) {
                await().atMost(Duration.ofSeconds(3)).pollInterval(Duration.ofMillis(5))
                        .until(() -> System.currentTimeMillis() % 1000 >= 300 && System.currentTimeMillis() % 1000 < 500);
                restarted = System.nanoTime(); // before the process starts: elapsed from here overstates its uptime
                server.restart();
                await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(10)).ignoreExceptions()
                        .until(() -> uptimeSeconds(client) >= 1);
                readOneAfterMs = (System.nanoTime() - restarted) / 1_000_000;
            }
            assertThat(readOneAfterMs).as("uptime read 1 before a whole second had passed (the case under test)")
                    .isLessThan(QUARANTINE.toMillis() - 100);

            long measured = readOneAfterMs;
            assertThatThrownBy(() -> calls.batch("probe", List.of(0), i -> calls.quarantine().uptimeCall(0)))
                    .as("%d ms after the restart, with uptime_in_seconds already 1", measured)
                    .isInstanceOf(RestartQuarantine.Quarantined.class)
                    .hasMessageContaining("node: up 1 s, not yet past the restart quarantine (1 s; counted once uptime reads more)");

            LocalRedlock.awaitPastQuarantine(List.of(server), QUARANTINE);
            long countsAfterMs = (System.nanoTime() - restarted) / 1_000_000;
            assertThat(calls.batch("probe", List.of(0), i -> calls.quarantine().uptimeCall(0))).hasSize(1);
            assertThat(countsAfterMs).as("the node counts again only after the whole quarantine")
                    .isGreaterThanOrEqualTo(QUARANTINE.toMillis());
        }
    }

    /** {@code uptime_in_seconds} as {@code client} reads it (as {@link LocalRedisServer#uptimeSeconds}, on this client's pool). */
    private static long uptimeSeconds(RedisClient client) {
        return client.info("server").lines().filter(l -> l.startsWith("uptime_in_seconds:"))
                .mapToLong(l -> Long.parseLong(l.substring("uptime_in_seconds:".length()).trim())).findFirst().orElseThrow();
    }
}
