package io.lockstep.redis;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import java.util.function.IntFunction;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.Connection;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.UnifiedJedis;

/**
 * The few things that differ between the Jedis lines Lockstep runs on: 8, its own (the worker and
 * the distribution ship it), and 6 and 7, which Spring Boot 3.5 and 4.0 manage, so that the starter
 * works in the application a user generates, with no version to override.
 *
 * <p>Lockstep compiles against Jedis 8. Its clients are {@code RedisClient}, {@code RedisSentinelClient}
 * and {@code RedisClusterClient} there; Jedis 6 and 7 have {@code JedisPooled}, {@code JedisSentineled}
 * and {@code JedisCluster} instead, with the constructors used below (checked against 6.0.0 and
 * 7.0.0). Everything else Lockstep calls ({@code UnifiedJedis}'s commands, pipelines, scripts) is the
 * same in the three, but for what {@code pipelined()} returns. So the Jedis 8 classes are named only in {@link Eight}, which is loaded only
 * when they are there; the older ones are reached by reflection; and a client's kind is told by
 * its class's name, which loads nothing. {@code GeneratedBootAppIT} builds Boot 3.5 and 4.0
 * applications outside this build, on the Jedis their Boot manages, and runs a job in each.
 */
final class JedisLines {

    /**
     * Whether the Jedis on the class path has the {@code RedisClient} builders: 8, and 7.2 to 7.5, whose
     * builders are the same (checked against 7.2.0's sources; the Boot lines tested are 6.0 and 7.0).
     */
    static final boolean EIGHT = present("redis.clients.jedis.RedisClient");

    private JedisLines() {}

    private static boolean present(String name) {
        try {
            Class.forName(name, false, UnifiedJedis.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    /** Whether {@code jedis} is (or extends) one of the classes named; false for null (as {@code instanceof}). */
    private static boolean is(UnifiedJedis jedis, String... names) {
        for (Class<?> c = jedis == null ? null : jedis.getClass(); c != null; c = c.getSuperclass()) {
            for (String name : names) {
                if (c.getName().equals(name)) {
                    return true;
                }
            }
        }
        return false;
    }

    /**
     * {@code UnifiedJedis.pipelined()}: it returns an {@code AbstractPipeline} from Jedis 7, and a
     * {@code PipelineBase} (a subclass of it) in Jedis 6, so a call compiled against 8 does not link
     * there. Looked up once, by name, whatever it returns.
     */
    private static final java.lang.invoke.MethodHandle PIPELINED;

    static {
        try {
            Method pipelined = UnifiedJedis.class.getMethod("pipelined");
            PIPELINED = java.lang.invoke.MethodHandles.publicLookup().unreflect(pipelined)
                    .asType(java.lang.invoke.MethodType.methodType(AbstractPipeline.class, UnifiedJedis.class));
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** A pipeline on {@code jedis} (close it), of any line. */
    static AbstractPipeline pipelined(UnifiedJedis jedis) {
        try {
            return (AbstractPipeline) PIPELINED.invokeExact(jedis);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) {
            throw new IllegalStateException(e);
        }
    }

    /** A Redis Cluster client, of any line. */
    static boolean isCluster(UnifiedJedis jedis) {
        return is(jedis, "redis.clients.jedis.RedisClusterClient", "redis.clients.jedis.JedisCluster");
    }

    /** A client of one server through its own pool (not Sentinel, not Cluster), of any line. */
    static boolean isStandalone(UnifiedJedis jedis) {
        return is(jedis, "redis.clients.jedis.RedisClient", "redis.clients.jedis.JedisPooled");
    }

    private static Object call(Object target, String method, Class<?>[] types, Object... args) {
        try {
            Method m = target.getClass().getMethod(method, types);
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e.getCause());
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(target.getClass().getName() + " has no " + method + ": a Jedis line Lockstep does not know", e);
        }
    }

    /** A cluster client's pooled connection to the master of a hash slot (return it with close). */
    static IntFunction<Connection> connectionForSlot(UnifiedJedis cluster) {
        Method get = CONNECTION_FROM_SLOT.get(cluster.getClass());
        return slot -> {
            try {
                return (Connection) get.invoke(cluster, slot);
            } catch (InvocationTargetException e) {
                throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e.getCause());
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            }
        };
    }

    /** {@code getConnectionFromSlot(int)} of each cluster client class, looked up once (it is called per batch, per hash slot). */
    private static final ClassValue<Method> CONNECTION_FROM_SLOT = new ClassValue<>() {
        @Override
        protected Method computeValue(Class<?> type) {
            try {
                return type.getMethod("getConnectionFromSlot", int.class);
            } catch (NoSuchMethodException e) {
                throw new IllegalStateException(type.getName() + " has no getConnectionFromSlot: a Jedis line Lockstep does not know", e);
            }
        }
    };

    /** host:port of a connection's server ({@code getHostAndPort} is public only from Jedis 8). */
    static String hostAndPort(Connection connection) {
        try {
            Method m = Connection.class.getDeclaredMethod("getHostAndPort");
            m.setAccessible(true);
            return String.valueOf(m.invoke(connection));
        } catch (ReflectiveOperationException | RuntimeException e) {
            return connection.toString();
        }
    }

    /** The master a Sentinel client follows now; empty for any other client. */
    static Optional<Object> currentMaster(UnifiedJedis jedis) {
        if (!is(jedis, "redis.clients.jedis.RedisSentinelClient", "redis.clients.jedis.JedisSentineled")) {
            return Optional.empty();
        }
        return Optional.ofNullable(call(jedis, "getCurrentMaster", new Class<?>[0]));
    }

    /**
     * The value in a raw reply of {@code CONFIG GET} for one parameter ({@code UnifiedJedis.configGet}
     * is only in Jedis 8): a list {name, value} (RESP2) or a map (RESP3); "" when it is not there.
     */
    static String configValue(Object reply) {
        Object value = null;
        if (reply instanceof java.util.Map<?, ?> map && !map.isEmpty()) {
            value = map.values().iterator().next();
        } else if (reply instanceof java.util.List<?> list && list.size() >= 2) {
            value = list.get(1);
        }
        if (value == null) {
            return "";
        }
        return value instanceof byte[] bytes ? new String(bytes, java.nio.charset.StandardCharsets.UTF_8) : value.toString();
    }

    /** Drops a one-server client's idle connections (they most likely went stale with one that failed). */
    static void clearPool(UnifiedJedis jedis) {
        if (isStandalone(jedis)) {
            Object pool = call(jedis, "getPool", new Class<?>[0]);
            call(pool, "clear", new Class<?>[0]);
        }
    }

    static UnifiedJedis standalone(HostAndPort server, DefaultJedisClientConfig config, ConnectionPoolConfig pool) {
        if (EIGHT) {
            return Eight.standalone(server, config, pool);
        }
        return construct("redis.clients.jedis.JedisPooled", new Class<?>[] {HostAndPort.class, redis.clients.jedis.JedisClientConfig.class,
                org.apache.commons.pool2.impl.GenericObjectPoolConfig.class}, server, config, pool);
    }

    static UnifiedJedis sentinel(String master, Set<HostAndPort> sentinels, DefaultJedisClientConfig masterConfig,
            DefaultJedisClientConfig sentinelConfig, ConnectionPoolConfig pool) {
        if (EIGHT) {
            return Eight.sentinel(master, sentinels, masterConfig, sentinelConfig, pool);
        }
        return construct("redis.clients.jedis.JedisSentineled", new Class<?>[] {String.class, redis.clients.jedis.JedisClientConfig.class,
                org.apache.commons.pool2.impl.GenericObjectPoolConfig.class, Set.class, redis.clients.jedis.JedisClientConfig.class},
                master, masterConfig, pool, sentinels, sentinelConfig);
    }

    /** Jedis's own defaults for a cluster client: 5 attempts, within that many socket timeouts. */
    private static final int CLUSTER_ATTEMPTS = 5;

    static UnifiedJedis cluster(Set<HostAndPort> nodes, DefaultJedisClientConfig config, ConnectionPoolConfig pool, Duration refresh) {
        if (EIGHT) {
            return Eight.cluster(nodes, config, pool, refresh);
        }
        Duration retries = Duration.ofMillis((long) config.getSocketTimeoutMillis() * CLUSTER_ATTEMPTS);
        return construct("redis.clients.jedis.JedisCluster", new Class<?>[] {Set.class, redis.clients.jedis.JedisClientConfig.class,
                org.apache.commons.pool2.impl.GenericObjectPoolConfig.class, Duration.class, int.class, Duration.class},
                nodes, config, pool, refresh, CLUSTER_ATTEMPTS, retries);
    }

    private static UnifiedJedis construct(String name, Class<?>[] types, Object... args) {
        try {
            return (UnifiedJedis) Class.forName(name, true, UnifiedJedis.class.getClassLoader()).getConstructor(types).newInstance(args);
        } catch (InvocationTargetException e) {
            throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e.getCause());
        } catch (ReflectiveOperationException | LinkageError e) {
            throw new IllegalStateException("Lockstep runs on Jedis 6, 7 and 8, and this Jedis has no " + name + " to build: "
                    + e, e);
        }
    }

    /** The Jedis 8 clients: loaded only when {@link #EIGHT}. */
    private static final class Eight {

        static UnifiedJedis standalone(HostAndPort server, DefaultJedisClientConfig config, ConnectionPoolConfig pool) {
            return redis.clients.jedis.RedisClient.builder().hostAndPort(server).clientConfig(config).poolConfig(pool).build();
        }

        static UnifiedJedis sentinel(String master, Set<HostAndPort> sentinels, DefaultJedisClientConfig masterConfig,
                DefaultJedisClientConfig sentinelConfig, ConnectionPoolConfig pool) {
            return redis.clients.jedis.RedisSentinelClient.builder().masterName(master).sentinels(sentinels)
                    .clientConfig(masterConfig).sentinelClientConfig(sentinelConfig).poolConfig(pool).build();
        }

        static UnifiedJedis cluster(Set<HostAndPort> nodes, DefaultJedisClientConfig config, ConnectionPoolConfig pool, Duration refresh) {
            return redis.clients.jedis.RedisClusterClient.builder().nodes(nodes).clientConfig(config).poolConfig(pool)
                    .topologyRefreshPeriod(refresh).build();
        }
    }
}
