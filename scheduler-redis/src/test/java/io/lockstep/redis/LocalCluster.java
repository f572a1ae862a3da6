package io.lockstep.redis;

import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import redis.clients.jedis.Jedis;

/**
 * A Redis Cluster of three masters with a replica each, on free loopback ports (bus ports chosen
 * free too), made with {@code redis-cli --cluster create}. Needs the Redis 7 tools (Debian package
 * {@code redis-server}, which brings {@code redis-cli}); {@link #available()} says whether they are
 * here. Closes everything.
 */
public final class LocalCluster implements AutoCloseable {

    private final List<LocalRedisServer> nodes = new ArrayList<>();

    /** Why a cluster cannot be made here, or empty when it can. */
    public static Optional<String> unavailable() {
        Optional<Path> cli = onPath("redis-cli");
        if (cli.isEmpty()) {
            return Optional.of("redis-cli not found: install the Debian package redis-server (Redis 7) to run Cluster tests");
        }
        return Optional.empty();
    }

    private static Optional<Path> onPath(String name) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator)) {
            Path candidate = Path.of(dir, name);
            if (java.nio.file.Files.isExecutable(candidate)) {
                return Optional.of(candidate);
            }
        }
        return Optional.empty();
    }

    private LocalCluster() throws IOException, InterruptedException {
        for (int i = 0; i < 6; i++) {
            int bus;
            try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
                bus = socket.getLocalPort();
            }
            nodes.add(LocalRedisServer.start("--cluster-enabled", "yes", "--cluster-port", Integer.toString(bus),
                    "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "1000", "--repl-diskless-sync-delay", "0"));
        }
        List<String> command = new ArrayList<>(List.of("redis-cli", "--cluster", "create"));
        nodes.forEach(n -> command.add(n.host() + ":" + n.port()));
        command.addAll(List.of("--cluster-replicas", "1", "--cluster-yes"));
        Process create = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(create.getInputStream().readAllBytes());
        if (!create.waitFor(60, TimeUnit.SECONDS) || create.exitValue() != 0) {
            throw new IllegalStateException("redis-cli --cluster create failed: " + output);
        }
    }

    /** Starts six nodes, makes the cluster and waits until it is ok and every replica is in sync. */
    public static LocalCluster start() {
        try {
            LocalCluster c = new LocalCluster();
            await().atMost(Duration.ofSeconds(30)).ignoreExceptions().until(c::ready);
            return c;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private boolean ready() {
        for (LocalRedisServer n : nodes) {
            try (Jedis j = new Jedis(n.host(), n.port())) {
                if (!j.clusterInfo().contains("cluster_state:ok")) {
                    return false;
                }
                String replication = j.info("replication");
                if (replication.contains("role:slave") && !replication.contains("master_link_status:up")) {
                    return false;
                }
            }
        }
        return true;
    }

    /** {@code host:port} of every node. */
    public List<String> nodes() {
        return nodes.stream().map(n -> n.host() + ":" + n.port()).toList();
    }

    /**
     * A graceful {@code CLUSTER FAILOVER}: {@code replica} takes over its master's slots. The
     * request is sent again when it did not complete within Redis's manual-failover timeout (5 s; a
     * loaded machine can miss it), as an operator would.
     */
    public void failover(LocalRedisServer replica) {
        long[] sentAt = {Long.MIN_VALUE};
        await().atMost(Duration.ofSeconds(45)).pollInterval(Duration.ofMillis(200)).until(() -> {
            if (masters().stream().anyMatch(m -> m.port() == replica.port())) {
                return true;
            }
            if (System.nanoTime() - sentAt[0] > Duration.ofSeconds(6).toNanos() || sentAt[0] == Long.MIN_VALUE) {
                try (Jedis j = new Jedis(replica.host(), replica.port())) {
                    j.clusterFailover();
                }
                sentAt[0] = System.nanoTime();
            }
            return false;
        });
    }

    /** The nodes that are masters now. */
    public List<LocalRedisServer> masters() {
        List<LocalRedisServer> masters = new ArrayList<>();
        for (LocalRedisServer n : nodes) {
            try (Jedis j = new Jedis(n.host(), n.port())) {
                if (j.info("replication").contains("role:master")) {
                    masters.add(n);
                }
            } catch (RuntimeException e) {
                // a killed node is nobody's master
            }
        }
        return masters;
    }

    /** The nodes that are replicas now. */
    public List<LocalRedisServer> replicas() {
        List<LocalRedisServer> masters = masters();
        return nodes.stream().filter(n -> masters.stream().noneMatch(m -> m.port() == n.port())).toList();
    }

    @Override
    public void close() {
        nodes.forEach(LocalRedisServer::close);
    }
}
