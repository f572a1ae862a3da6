package io.lockstep.redis;

import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;

/**
 * A master, one replica and three Sentinels (quorum 2, down after 1 s, failover timeout 3 s) on
 * free loopback ports, for tests: real {@code redis-server} processes, the Sentinels run by the
 * same binary with {@code --sentinel}. Promotion after a SIGKILL of the master takes about 2.3 s
 * here. Closes everything.
 */
public final class LocalSentinel implements AutoCloseable {

    public static final String MASTER_NAME = "mymaster";

    private final LocalRedisServer master;
    private final LocalRedisServer replica;
    private final List<Process> sentinels = new ArrayList<>();
    private final List<Integer> sentinelPorts = new ArrayList<>();
    private final Path dir;

    private LocalSentinel() throws IOException {
        this.dir = Files.createTempDirectory("lockstep-sentinel-");
        this.master = LocalRedisServer.start("--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0");
        this.replica = LocalRedisServer.start("--replicaof", master.host(), Integer.toString(master.port()),
                "--repl-diskless-sync-delay", "0");
        for (int i = 0; i < 3; i++) {
            int port;
            port = LocalPorts.free();
            Path conf = dir.resolve("sentinel-" + port + ".conf");
            Files.writeString(conf, "port " + port + "\nbind 127.0.0.1\ndir " + dir + "\n"
                    + "sentinel monitor " + MASTER_NAME + " 127.0.0.1 " + master.port() + " 2\n"
                    + "sentinel down-after-milliseconds " + MASTER_NAME + " 1000\n"
                    + "sentinel failover-timeout " + MASTER_NAME + " 3000\n");
            sentinels.add(new ProcessBuilder(LocalRedisServer.findBinary().toString(), conf.toString(), "--sentinel")
                    .redirectErrorStream(true).redirectOutput(dir.resolve("sentinel-" + port + ".log").toFile()).start());
            sentinelPorts.add(port);
        }
    }

    /** Starts everything and waits until each Sentinel sees the replica and its two peers. */
    public static LocalSentinel start() {
        try {
            LocalSentinel s = new LocalSentinel();
            await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(s::ready);
            return s;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private boolean ready() {
        for (int port : sentinelPorts) {
            try (Jedis sentinel = new Jedis("127.0.0.1", port)) {
                if (sentinel.sentinelReplicas(MASTER_NAME).isEmpty() || sentinel.sentinelSentinels(MASTER_NAME).size() < 2) {
                    return false;
                }
            }
        }
        return true;
    }

    /** {@code host:port} of each Sentinel. */
    public List<String> nodes() {
        return sentinelPorts.stream().map(p -> "127.0.0.1:" + p).toList();
    }

    /** The master as the Sentinels name it now. */
    public HostAndPort currentMaster() {
        try (Jedis sentinel = new Jedis("127.0.0.1", sentinelPorts.get(0))) {
            return sentinel.sentinelGetMasterAddrByName(MASTER_NAME).stream().collect(
                    java.util.stream.Collectors.collectingAndThen(java.util.stream.Collectors.toList(),
                            l -> new HostAndPort(l.get(0), Integer.parseInt(l.get(1)))));
        }
    }

    public LocalRedisServer master() {
        return master;
    }

    public LocalRedisServer replica() {
        return replica;
    }

    /** Every Sentinel's view, for a failing test's message. */
    public Map<Integer, String> describe() {
        java.util.Map<Integer, String> views = new java.util.TreeMap<>();
        for (int port : sentinelPorts) {
            try (Jedis sentinel = new Jedis("127.0.0.1", port)) {
                views.put(port, String.valueOf(sentinel.sentinelGetMasterAddrByName(MASTER_NAME)));
            } catch (RuntimeException e) {
                views.put(port, e.toString());
            }
        }
        return views;
    }

    @Override
    public void close() {
        sentinels.forEach(Process::destroyForcibly);
        replica.close();
        master.close();
    }
}
