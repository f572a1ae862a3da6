package io.lockstep.redis;

import java.time.Duration;
import java.util.List;
import redis.clients.jedis.RedisClient;

/**
 * Redlock's masters for the examples' tests: {@link LocalRedlock} (package-private in the
 * scheduler-redis test-jar, hence this public door in its package), so that the examples wait out
 * a restart quarantine by the same rule as the Redis module's own tests. Close it to stop them all.
 * Not thread safe.
 */
public final class ItRedlock implements AutoCloseable {

    private final LocalRedlock nodes;

    /** Starts {@code n} independent masters on free loopback ports. */
    public ItRedlock(int n) {
        this.nodes = new LocalRedlock(n);
    }

    /** The masters, in order (kill and restart them to hurt Redlock). */
    public List<LocalRedisServer> servers() {
        return nodes.servers;
    }

    /** One client per master, in the same order. */
    public List<RedisClient> clients() {
        return nodes.clients;
    }

    /** Waits until every running master has been up at least {@code uptime} (past a restart quarantine). */
    public void awaitUptime(Duration uptime) {
        nodes.awaitUptime(uptime.toSeconds());
    }

    @Override
    public void close() {
        nodes.close();
    }
}
