package io.lockstep.redis;

import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import redis.clients.jedis.RedisClient;

/**
 * N independent redis-server masters on free ports (Redlock's nodes), with a client to each, for
 * tests (the ITs use it from the test-jar too). Close it to stop them all.
 */
public final class LocalRedlock implements AutoCloseable {

    public final List<LocalRedisServer> servers = new ArrayList<>();
    public final List<RedisClient> clients = new ArrayList<>();

    public LocalRedlock(int n) {
        for (int i = 0; i < n; i++) {
            LocalRedisServer server = LocalRedisServer.start();
            servers.add(server);
            clients.add(client(server));
        }
    }

    /** A set of servers started by the caller (say, some with persistence). */
    public LocalRedlock(List<LocalRedisServer> started) {
        for (LocalRedisServer server : started) {
            servers.add(server);
            clients.add(client(server));
        }
    }

    public static RedisClient client(LocalRedisServer server) {
        return RedisClient.builder().hostAndPort(server.host(), server.port())
                .clientConfig(redis.clients.jedis.DefaultJedisClientConfig.builder().timeoutMillis(1_000).build()).build();
    }

    /** How each node is named in errors, and listed in {@code redis.redlock.nodes}: {@code host:port}. */
    public List<String> names() {
        return names(servers);
    }

    /** {@code host:port} of each server. */
    public static List<String> names(List<LocalRedisServer> servers) {
        return servers.stream().map(s -> s.host() + ":" + s.port()).toList();
    }

    /**
     * The one wait for a restart quarantine: returns once every running node of this set counts again
     * under a quarantine of {@code quarantine}, by the product's own rule ({@code uptime_in_seconds}
     * must read more than the quarantine in whole seconds, see {@code RestartQuarantine.pastQuarantine}).
     */
    public void awaitUptime(Duration quarantine) {
        awaitPastQuarantine(servers, quarantine);
    }

    /** {@link #awaitUptime(Duration)} of a quarantine of {@code seconds}. */
    public void awaitUptime(long seconds) {
        awaitUptime(Duration.ofSeconds(seconds));
    }

    /** {@link #awaitUptime(Duration)} for any servers (say, the masters an IT started itself). */
    public static void awaitPastQuarantine(List<LocalRedisServer> servers, Duration quarantine) {
        await().atMost(quarantine.plusSeconds(15)).pollInterval(Duration.ofMillis(50)).ignoreExceptions()
                .until(() -> servers.stream().allMatch(s -> RestartQuarantine.pastQuarantine(s.uptimeSeconds(), quarantine.toMillis())));
    }

    /** Keys matching {@code pattern} on node {@code i} (an empty list when it is down). */
    public List<String> keys(int i, String pattern) {
        return new ArrayList<>(clients.get(i).keys(pattern));
    }

    @Override
    public void close() {
        clients.forEach(RedisClient::close);
        servers.forEach(LocalRedisServer::close);
    }
}
