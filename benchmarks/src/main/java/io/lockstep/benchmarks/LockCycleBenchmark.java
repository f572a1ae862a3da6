package io.lockstep.benchmarks;

import io.lockstep.redis.RedisLock;
import io.lockstep.redis.RedisLocks;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.params.SetParams;

/**
 * One lock cycle, acquire then release, of an uncontended lock (each thread its own lock name),
 * three ways against the same redis-server: Lockstep's lock API, the floor (raw Jedis {@code SET NX
 * PX} and an {@code EVALSHA} compare-and-delete, nothing else), and Redisson's {@code RLock}. The
 * server's port comes in the system property {@value #PORT}.
 */
public class LockCycleBenchmark {

    static final String PORT = "lockstep.bench.port";
    private static final Duration LEASE = Duration.ofSeconds(30);
    private static final String COMPARE_AND_DELETE =
            "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

    /** The clients, shared by every thread as an application would share them. */
    @State(Scope.Benchmark)
    public static class Clients {
        RedisClient jedis;
        RedisLocks locks;
        RedissonClient redisson;
        String compareAndDelete;

        @Setup(Level.Trial)
        public void connect() {
            int port = Integer.getInteger(PORT);
            jedis = RedisClient.create("127.0.0.1", port);
            locks = RedisLocks.on(jedis);
            compareAndDelete = jedis.scriptLoad(COMPARE_AND_DELETE);
            Config config = new Config();
            config.useSingleServer().setAddress("redis://127.0.0.1:" + port);
            redisson = Redisson.create(config);
        }

        @TearDown(Level.Trial)
        public void close() {
            redisson.shutdown();
            locks.close();
            jedis.close();
        }
    }

    /** Each thread's own lock, so that no cycle waits for another. */
    @State(Scope.Thread)
    public static class Name {
        private static final AtomicInteger THREADS = new AtomicInteger();
        final String name = "bench-" + THREADS.incrementAndGet();
        final String key = "floor:" + name;
    }

    @Benchmark
    public boolean lockstep(Clients c, Name n) {
        RedisLock lock = c.locks.tryAcquire(n.name, LEASE).orElseThrow(() -> new IllegalStateException("lock held"));
        return lock.release();
    }

    @Benchmark
    public Object floor(Clients c, Name n) {
        String token = Long.toHexString(ThreadLocalRandom.current().nextLong()) + Long.toHexString(ThreadLocalRandom.current().nextLong());
        if (c.jedis.set(n.key, token, SetParams.setParams().nx().px(LEASE.toMillis())) == null) {
            throw new IllegalStateException("lock held");
        }
        return c.jedis.evalsha(c.compareAndDelete, List.of(n.key), List.of(token));
    }

    @Benchmark
    public void redisson(Clients c, Name n) throws InterruptedException {
        RLock lock = c.redisson.getLock("redisson:" + n.name);
        if (!lock.tryLock(0, LEASE.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("lock held");
        }
        lock.unlock();
    }
}
