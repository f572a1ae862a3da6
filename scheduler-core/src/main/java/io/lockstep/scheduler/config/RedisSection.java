package io.lockstep.scheduler.config;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.SequenceNode;

/**
 * Reads the {@code redis} section: exactly one of {@code uri}, {@code sentinel} or {@code cluster},
 * credentials, TLS files (relative paths resolve against the config file's folder), key prefix and
 * timeout. Every problem is reported with its line and path. Not thread-safe: one per load.
 */
final class RedisSection {

    static final Set<String> KEYS = Set.of("uri", "sentinel", "cluster", "redlock", "user", "password", "tls", "keyPrefix", "timeout",
            "waitReplicas", "waitTimeout");
    static final Set<String> SENTINEL_KEYS = Set.of("master", "nodes", "user", "password");
    static final Set<String> CLUSTER_KEYS = Set.of("nodes");
    static final Set<String> REDLOCK_KEYS = Set.of("nodes", "nodeTimeout", "quarantine", "durable");
    static final Set<String> TLS_KEYS = Set.of("enabled", "caCert", "clientCert", "clientKey");

    private final ConfigNodes nodes;

    RedisSection(ConfigNodes nodes) {
        this.nodes = nodes;
    }

    RedisSettings read(Node node) {
        RedisSettings d = RedisSettings.defaults();
        if (node == null) {
            return d;
        }
        Map<String, Node> m = nodes.mapping(node, "redis", KEYS).orElse(Map.of());
        List<String> modes = new ArrayList<>();
        for (String mode : List.of("uri", "sentinel", "cluster", "redlock")) {
            if (m.containsKey(mode)) {
                modes.add(mode);
            }
        }
        if (modes.size() > 1) {
            nodes.problem(m.get(modes.get(1)), "redis." + modes.get(1), "give exactly one of uri, sentinel, cluster or redlock, but "
                    + String.join(" and ", modes) + " are both set");
        }
        RedisSettings.Endpoint endpoint = modes.isEmpty() || modes.get(0).equals("uri")
                ? standalone(m.get("uri"))
                : switch (modes.get(0)) {
                    case "sentinel" -> sentinel(m.get("sentinel"));
                    case "cluster" -> cluster(m.get("cluster"));
                    default -> redlock(m.get("redlock"));
                };
        String prefix = nodes.string(m.get("keyPrefix"), "redis.keyPrefix").orElse(d.keyPrefix());
        if (prefix.isEmpty() || prefix.contains("{") || prefix.contains("}") || prefix.contains(" ")) {
            nodes.problem(m.get("keyPrefix"), "redis.keyPrefix", "must be non-empty without braces or spaces, but was \"" + prefix + "\"");
        }
        Duration timeout = nodes.duration(m.get("timeout"), "redis.timeout").orElse(d.timeout());
        if (m.containsKey("timeout") && timeout.compareTo(Duration.ofMillis(10)) < 0) {
            nodes.problem(m.get("timeout"), "redis.timeout", "must be at least 10ms, but was " + Durations.format(timeout));
        }
        Optional<String> user = nodes.string(m.get("user"), "redis.user").filter(s -> !s.isEmpty());
        Optional<String> password = nodes.string(m.get("password"), "redis.password").filter(s -> !s.isEmpty());
        RedisSettings.Tls tls = tls(m.get("tls"));
        if (endpoint instanceof RedisSettings.Standalone s && s.uri().startsWith("rediss://") && !tls.enabled()) {
            tls = new RedisSettings.Tls(true, tls.caCert(), tls.clientCert(), tls.clientKey());
        }
        int waitReplicas = nodes.integer(m.get("waitReplicas"), "redis.waitReplicas").orElse(0);
        if (waitReplicas < 0 || waitReplicas > 16) {
            nodes.problem(m.get("waitReplicas"), "redis.waitReplicas", "must be between 0 and 16, but was " + waitReplicas);
            waitReplicas = 0;
        }
        if (endpoint instanceof RedisSettings.Redlock && waitReplicas > 0) {
            nodes.problem(m.get("waitReplicas"), "redis.waitReplicas", "does not go with redlock: its masters stand alone, "
                    + "each decision needs a majority of them instead");
            waitReplicas = 0;
        }
        if (endpoint instanceof RedisSettings.Redlock r && r.nodeTimeout().compareTo(timeout) >= 0) {
            nodes.problem(m.get("redlock"), "redis.redlock.nodeTimeout", "must be less than redis.timeout (" + Durations.format(timeout)
                    + "), but was " + Durations.format(r.nodeTimeout()));
        }
        Duration waitTimeout = nodes.duration(m.get("waitTimeout"), "redis.waitTimeout").orElse(d.waitTimeout());
        if (waitTimeout.compareTo(Duration.ofMillis(1)) < 0 || waitTimeout.compareTo(timeout) >= 0) {
            nodes.problem(m.get("waitTimeout"), "redis.waitTimeout", "must be at least 1ms and less than redis.timeout ("
                    + Durations.format(timeout) + "), or every wait would time out the client first, but was " + Durations.format(waitTimeout));
        }
        return new RedisSettings(endpoint, prefix, timeout, user, password, tls, waitReplicas, waitTimeout);
    }

    private RedisSettings.Endpoint standalone(Node node) {
        String uri = node == null ? RedisSettings.DEFAULT_URI : nodes.string(node, "redis.uri").orElse(RedisSettings.DEFAULT_URI);
        if (node != null && !uri.startsWith("redis://") && !uri.startsWith("rediss://")) {
            nodes.problem(node, "redis.uri", "must start with redis:// or rediss://, but was \""
                    + new RedisSettings.Standalone(uri).describe() + "\"");
        }
        return new RedisSettings.Standalone(uri);
    }

    private RedisSettings.Endpoint sentinel(Node node) {
        Map<String, Node> m = nodes.mapping(node, "redis.sentinel", SENTINEL_KEYS).orElse(Map.of());
        String master = nodes.required(m, "master", node, "redis.sentinel").flatMap(n -> nodes.string(n, "redis.sentinel.master"))
                .orElse("");
        List<String> hosts = hostPorts(m, node, "redis.sentinel");
        return new RedisSettings.Sentinel(master, hosts,
                nodes.string(m.get("user"), "redis.sentinel.user").filter(s -> !s.isEmpty()),
                nodes.string(m.get("password"), "redis.sentinel.password").filter(s -> !s.isEmpty()));
    }

    private RedisSettings.Endpoint cluster(Node node) {
        Map<String, Node> m = nodes.mapping(node, "redis.cluster", CLUSTER_KEYS).orElse(Map.of());
        return new RedisSettings.Cluster(hostPorts(m, node, "redis.cluster"));
    }

    private RedisSettings.Endpoint redlock(Node node) {
        Map<String, Node> m = nodes.mapping(node, "redis.redlock", REDLOCK_KEYS).orElse(Map.of());
        List<String> hosts = hostPorts(m, node, "redis.redlock");
        if (m.containsKey("nodes") && hosts.size() < 3) {
            nodes.problem(m.get("nodes"), "redis.redlock.nodes", "needs at least 3 independent masters (5 is usual), but lists "
                    + hosts.size());
        } else if (new java.util.HashSet<>(hosts).size() < hosts.size()) {
            nodes.problem(m.get("nodes"), "redis.redlock.nodes", "lists a master twice: each must be a separate server");
        }
        Duration nodeTimeout = nodes.duration(m.get("nodeTimeout"), "redis.redlock.nodeTimeout")
                .orElse(RedisSettings.Redlock.DEFAULT_NODE_TIMEOUT);
        if (nodeTimeout.compareTo(Duration.ofMillis(1)) < 0) {
            nodes.problem(m.get("nodeTimeout"), "redis.redlock.nodeTimeout", "must be at least 1ms, but was " + Durations.format(nodeTimeout));
        }
        Optional<Duration> quarantine = nodes.duration(m.get("quarantine"), "redis.redlock.quarantine");
        List<String> durable = new ArrayList<>();
        if (m.containsKey("durable")) {
            Node list = m.get("durable");
            if (!(list instanceof SequenceNode sequence)) {
                nodes.problem(list, "redis.redlock.durable", "must be a list of masters from redis.redlock.nodes, but was " + ConfigNodes.describe(list));
            } else {
                for (int i = 0; i < sequence.getValue().size(); i++) {
                    Node item = sequence.getValue().get(i);
                    int index = i;
                    nodes.string(item, "redis.redlock.durable[" + i + "]").ifPresent(master -> {
                        if (!hosts.contains(master)) {
                            nodes.problem(item, "redis.redlock.durable[" + index + "]", "\"" + master + "\" is not one of redis.redlock.nodes");
                        } else {
                            durable.add(master);
                        }
                    });
                }
            }
        }
        return new RedisSettings.Redlock(hosts, nodeTimeout, quarantine, durable);
    }

    /** {@code nodes}: a non-empty list of {@code host:port}. */
    private List<String> hostPorts(Map<String, Node> m, Node parent, String path) {
        Optional<Node> list = nodes.required(m, "nodes", parent, path);
        if (list.isEmpty()) {
            return List.of();
        }
        if (!(list.get() instanceof SequenceNode sequence) || sequence.getValue().isEmpty()) {
            nodes.problem(list.get(), path + ".nodes", "must be a non-empty list of host:port, but was " + ConfigNodes.describe(list.get()));
            return List.of();
        }
        List<String> result = new ArrayList<>();
        for (int i = 0; i < sequence.getValue().size(); i++) {
            Node item = sequence.getValue().get(i);
            String itemPath = path + ".nodes[" + i + "]";
            nodes.string(item, itemPath).ifPresent(hostPort -> {
                int colon = hostPort.lastIndexOf(':');
                int port = -1;
                try {
                    port = colon > 0 ? Integer.parseInt(hostPort.substring(colon + 1)) : -1;
                } catch (NumberFormatException e) {
                    port = -1;
                }
                if (port < 1 || port > 65535) {
                    nodes.problem(item, itemPath, "must be host:port with a port from 1 to 65535, but was \"" + hostPort + "\"");
                } else {
                    result.add(hostPort);
                }
            });
        }
        return result;
    }

    private RedisSettings.Tls tls(Node node) {
        if (node == null) {
            return RedisSettings.Tls.OFF;
        }
        Map<String, Node> m = nodes.mapping(node, "redis.tls", TLS_KEYS).orElse(Map.of());
        boolean enabled = nodes.bool(m.get("enabled"), "redis.tls.enabled").orElse(true);
        Optional<Path> ca = file(m.get("caCert"), "redis.tls.caCert");
        Optional<Path> cert = file(m.get("clientCert"), "redis.tls.clientCert");
        Optional<Path> key = file(m.get("clientKey"), "redis.tls.clientKey");
        if (m.containsKey("clientCert") != m.containsKey("clientKey")) {
            String missing = m.containsKey("clientCert") ? "clientKey" : "clientCert";
            nodes.problem(node, "redis.tls." + missing, "is required with " + (missing.equals("clientKey") ? "clientCert" : "clientKey")
                    + " (mutual TLS needs both the certificate and its key)");
        }
        return new RedisSettings.Tls(enabled, ca, cert, key);
    }

    /** A readable file; relative to the config file's folder. */
    private Optional<Path> file(Node node, String path) {
        if (node == null) {
            return Optional.empty();
        }
        return nodes.string(node, path).flatMap(name -> {
            Path file = Path.of(name);
            if (!file.isAbsolute()) {
                Path folder = Path.of(nodes.source).toAbsolutePath().getParent();
                file = folder == null ? file.toAbsolutePath() : folder.resolve(file);
            }
            if (!Files.isReadable(file)) {
                nodes.problem(node, path, "cannot read " + file);
                return Optional.empty();
            }
            return Optional.of(file.normalize());
        });
    }
}
