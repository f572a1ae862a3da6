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
 * {@code uptime_in_seconds} (whole seconds, now and the start each rounded down) reads 1 as early
 * as a few ms after a start.
 */
class RestartQuarantineTest {

    private static final Duration QUARANTINE = Duration.ofSeconds(1);

    @Test
    void aRestartedNodeDoesNotCountBeforeTheWholeQuarantineEvenWhenItsUptimeAlreadyReadsIt() {
        try (LocalRedisServer server = LocalRedisServer.start()) {
            // Restart in the middle of a wall-clock second, so that the uptime reads 1 well before 1 s has passed.
            await().atMost(Duration.ofSeconds(3)).pollInterval(Duration.ofMillis(5))
                    .until(() -> System.currentTimeMillis() % 1000 >= 300 && System.currentTimeMillis() % 1000 < 500);
            long restarted = System.nanoTime(); // before the process starts: elapsed here overstates its uptime
            server.restart();
            await().atMost(Duration.ofSeconds(3)).pollInterval(Duration.ofMillis(10)).until(() -> server.uptimeSeconds() >= 1);
            long readOneAfterMs = (System.nanoTime() - restarted) / 1_000_000;
            RedisClient client = LocalRedlock.client(server); // a fresh connection: the old ones died with the restart
            RedisCalls calls = new RedisCalls(client, "node", null, QUARANTINE);
            assertThat(readOneAfterMs).as("uptime read 1 before a whole second had passed (the case under test)")
                    .isLessThan(QUARANTINE.toMillis() - 100);

            assertThatThrownBy(() -> calls.batch("probe", List.of(0), i -> new RedisCalls.Call(RedisCalls.UPTIME, List.of(), List.of())))
                    .as("%d ms after the restart, with uptime_in_seconds already 1", readOneAfterMs)
                    .isInstanceOf(RedisCalls.Quarantined.class);

            LocalRedlock.awaitPastQuarantine(List.of(server), QUARANTINE);
            long countsAfterMs = (System.nanoTime() - restarted) / 1_000_000;
            assertThat(calls.batch("probe", List.of(0), i -> new RedisCalls.Call(RedisCalls.UPTIME, List.of(), List.of()))).hasSize(1);
            assertThat(countsAfterMs).as("the node counts again only after the whole quarantine").isGreaterThanOrEqualTo(QUARANTINE.toMillis());
            client.close();
        }
    }
}
