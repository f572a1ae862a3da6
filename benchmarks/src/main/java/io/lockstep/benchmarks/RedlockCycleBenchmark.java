package io.lockstep.benchmarks;

import io.lockstep.redis.RedisLock;
import io.lockstep.redis.RedisLocks;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import redis.clients.jedis.RedisClient;

/**
 * The lock cycle of {@link LockCycleBenchmark} (acquire then release, uncontended) on Redlock over 3
 * and 5 independent masters: every call goes to all masters in parallel, and an acquire takes two
 * round trips (the vote, then the fence raise). The masters' ports come, comma-separated, in the
 * system property {@value #PORTS}; they must have been up longer than the lease (the restart
 * quarantine).
 */
public class RedlockCycleBenchmark {

    static final String PORTS = "lockstep.bench.redlockPorts";
    static final Duration LEASE = Duration.ofSeconds(10);

    /** The masters' clients and the locks over the first {@link #masters} of them. */
    @State(Scope.Benchmark)
    public static class Masters {
        @Param({"3", "5"})
        public int masters;

        List<RedisClient> clients = new ArrayList<>();
        RedisLocks locks;

        @Setup(Level.Trial)
        public void connect() {
            String[] ports = System.getProperty(PORTS).split(",");
            for (int i = 0; i < masters; i++) {
                clients.add(RedisClient.create("127.0.0.1", Integer.parseInt(ports[i])));
            }
            locks = RedisLocks.redlockBuilder(clients).maxLease(LEASE).build();
        }

        @TearDown(Level.Trial)
        public void close() {
            locks.close();
            clients.forEach(RedisClient::close);
        }
    }

    /** Each thread's own lock. */
    @State(Scope.Thread)
    public static class Name {
        private static final AtomicInteger THREADS = new AtomicInteger();
        final String name = "redlock-bench-" + THREADS.incrementAndGet();
    }

    @Benchmark
    public boolean redlock(Masters m, Name n) {
        RedisLock lock = m.locks.tryAcquire(n.name, LEASE).orElseThrow(() -> new IllegalStateException("lock held"));
        return lock.release();
    }
}
