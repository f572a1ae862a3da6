package io.lockstep.benchmarks;

import io.lockstep.redis.RedisLock;
import io.lockstep.redis.RedisLocks;
import java.io.IOException;
import java.net.ServerSocket;
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
 * The Redlock lock cycle of {@link RedlockCycleBenchmark} over 5 masters, two of them out the whole
 * trial (issue 37): {@code killed}, their clients pointed at ports nothing listens on (a SIGKILLed
 * server: connection refused at once), or {@code stalled}, SIGSTOPped for the trial and SIGCONTed
 * after it (a GC or disk pause, a partition that drops packets: no answer at all); {@code none} is
 * the same 5 masters all up, the floor both compare to. The masters' ports come in {@value
 * RedlockCycleBenchmark#PORTS}.
 */
public class RedlockFaultBenchmark {

    /** The locks over 5 masters, the last two out as {@link #fault} says. */
    @State(Scope.Benchmark)
    public static class Masters {
        @Param({"none", "killed", "stalled"})
        public String fault;

        List<RedisClient> clients = new ArrayList<>();
        List<String> stopped = new ArrayList<>();
        RedisLocks locks;

        @Setup(Level.Trial)
        public void connect() throws IOException, InterruptedException {
            String[] ports = System.getProperty(RedlockCycleBenchmark.PORTS).split(",");
            for (int i = 0; i < 5; i++) {
                int port = Integer.parseInt(ports[i]);
                if (i >= 3 && fault.equals("killed")) {
                    try (ServerSocket free = new ServerSocket(0)) {
                        port = free.getLocalPort(); // nothing listens on it once closed: connection refused
                    }
                }
                RedisClient client = RedisClient.create("127.0.0.1", port);
                if (i >= 3 && fault.equals("stalled")) {
                    String pid = client.info("server").lines().filter(l -> l.startsWith("process_id:")).findFirst().orElseThrow()
                            .substring("process_id:".length()).trim();
                    signal("-STOP", pid);
                    stopped.add(pid);
                }
                clients.add(client);
            }
            locks = RedisLocks.redlockBuilder(clients).maxLease(RedlockCycleBenchmark.LEASE).build();
        }

        @TearDown(Level.Trial)
        public void close() throws IOException, InterruptedException {
            for (String pid : stopped) {
                signal("-CONT", pid);
            }
            locks.close();
            clients.forEach(RedisClient::close);
        }

        private static void signal(String signal, String pid) throws IOException, InterruptedException {
            if (new ProcessBuilder("kill", signal, pid).inheritIO().start().waitFor() != 0) {
                throw new IllegalStateException("kill " + signal + " " + pid + " failed");
            }
        }
    }

    /** Each thread's own lock. */
    @State(Scope.Thread)
    public static class Name {
        private static final AtomicInteger THREADS = new AtomicInteger();
        // Unique per fork: a trial's last release may not have reached every master before its JVM ended.
        final String name = "redlock-fault-bench-" + ProcessHandle.current().pid() + "-" + THREADS.incrementAndGet();
    }

    @Benchmark
    public boolean redlock(Masters m, Name n) {
        RedisLock lock = m.locks.tryAcquire(n.name, RedlockCycleBenchmark.LEASE).orElseThrow(() -> new IllegalStateException("lock held"));
        return lock.release();
    }
}
