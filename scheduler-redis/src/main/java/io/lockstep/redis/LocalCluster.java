package io.lockstep.redis;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import redis.clients.jedis.Jedis;

/**
 * A Redis Cluster on free loopback ports (bus ports chosen free too), made with
 * {@code redis-cli --cluster create}: three masters with a replica each for the tests, or masters
 * alone for the benchmark. Needs the Redis 7 tools (Debian package
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

    private LocalCluster(int masters, int replicasEach, String... serverArgs) throws IOException, InterruptedException {
        for (int i = 0; i < masters * (1 + replicasEach); i++) {
            int bus;
            bus = LocalPorts.free();
            List<String> args = new ArrayList<>(List.of("--cluster-enabled", "yes", "--cluster-port", Integer.toString(bus),
                    "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "1000", "--repl-diskless-sync-delay", "0"));
            args.addAll(List.of(serverArgs));
            nodes.add(LocalRedisServer.start(args.toArray(String[]::new)));
        }
        List<String> command = new ArrayList<>(List.of("redis-cli", "--cluster", "create"));
        nodes.forEach(n -> command.add(n.host() + ":" + n.port()));
        command.addAll(List.of("--cluster-replicas", Integer.toString(replicasEach), "--cluster-yes"));
        Process create = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(create.getInputStream().readAllBytes());
        if (!create.waitFor(60, TimeUnit.SECONDS) || create.exitValue() != 0) {
            throw new IllegalStateException("redis-cli --cluster create failed: " + output);
        }
    }

    /** Starts six nodes, makes a cluster of three masters with a replica each, and waits until it is ok and every replica is in sync. */
    public static LocalCluster start() {
        return start(3, 1);
    }

    /**
     * Starts {@code masters} masters with {@code replicasEach} replicas each, as {@link #start()},
     * every node with {@code serverArgs} added to its command line (for example
     * {@code "--cluster-require-full-coverage", "no"}).
     */
    public static LocalCluster start(int masters, int replicasEach, String... serverArgs) {
        LocalCluster c = null;
        try {
            c = new LocalCluster(masters, replicasEach, serverArgs);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!c.readyQuietly()) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("the cluster was not ok within 30 s");
                }
                Thread.sleep(100);
            }
            return c;
        } catch (IOException e) {
            if (c != null) {
                c.close();
            }
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private boolean readyQuietly() {
        try {
            return ready();
        } catch (RuntimeException e) {
            return false;
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
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(45);
        long sentAt = Long.MIN_VALUE;
        while (masters().stream().noneMatch(m -> m.port() == replica.port())) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the replica did not take over within 45 s");
            }
            if (sentAt == Long.MIN_VALUE || System.nanoTime() - sentAt > Duration.ofSeconds(6).toNanos()) {
                try (Jedis j = new Jedis(replica.host(), replica.port())) {
                    j.clusterFailover();
                }
                sentAt = System.nanoTime();
            }
            try {
                Thread.sleep(200);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
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
