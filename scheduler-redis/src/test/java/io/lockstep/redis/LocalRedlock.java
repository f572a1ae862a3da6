package io.lockstep.redis;

import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import redis.clients.jedis.RedisClient;

/**
 * N independent redis-server masters on free ports (Redlock's nodes), with a client to each, for
 * tests. Close it to stop them all.
 */
final class LocalRedlock implements AutoCloseable {

    final List<LocalRedisServer> servers = new ArrayList<>();
    final List<RedisClient> clients = new ArrayList<>();

    LocalRedlock(int n) {
        for (int i = 0; i < n; i++) {
            LocalRedisServer server = LocalRedisServer.start();
            servers.add(server);
            clients.add(client(server));
        }
    }

    static RedisClient client(LocalRedisServer server) {
        return RedisClient.builder().hostAndPort(server.host(), server.port())
                .clientConfig(redis.clients.jedis.DefaultJedisClientConfig.builder().timeoutMillis(1_000).build()).build();
    }

    /** How each node is named in errors, and listed in {@code redis.redlock.nodes}: {@code host:port}. */
    List<String> names() {
        return servers.stream().map(s -> s.host() + ":" + s.port()).toList();
    }

    /** Waits until every running node has been up at least {@code seconds} (past a restart quarantine). */
    void awaitUptime(long seconds) {
        await().atMost(Duration.ofSeconds(seconds + 10)).ignoreExceptions()
                .until(() -> servers.stream().allMatch(s -> s.uptimeSeconds() >= seconds));
    }

    /** Keys matching {@code pattern} on node {@code i} (an empty list when it is down). */
    List<String> keys(int i, String pattern) {
        return new ArrayList<>(clients.get(i).keys(pattern));
    }

    @Override
    public void close() {
        clients.forEach(RedisClient::close);
        servers.forEach(LocalRedisServer::close);
    }
}
