package io.lockstep.redis;

import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.ClaimResult;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.LockProvider;
import io.lockstep.scheduler.lock.Outcome;
import io.lockstep.scheduler.lock.RunsInFlight;
import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisException;

/**
 * The Redis lock store of the scheduler: claims, renewals and completions as owner-checked Lua
 * scripts, every batch in one pipelined round trip.
 *
 * <p>Keys of one job share a hash tag, so the layout works unchanged on Redis Cluster:
 * <pre>
 *   &lt;prefix&gt;:{&lt;job&gt;}:slot:&lt;epochMillis&gt;   slot record (hash): running, then done / missed / skipped; has a ttl
 *   &lt;prefix&gt;:{&lt;job&gt;}:fence                 fence counter, INCRed by every claim; no ttl
 *   &lt;prefix&gt;:{&lt;job&gt;}:lease                 lease of an {@code overlap: skip} job (one run at a time)
 *   &lt;prefix&gt;:{&lt;job&gt;}:lease:&lt;epochMillis&gt;  lease of an {@code overlap: allow} run
 *   &lt;prefix&gt;:{&lt;job&gt;}:running               runs in flight (zset: slot -> lease end, server ms), for recovery
 *   &lt;prefix&gt;:{&lt;job&gt;}:last                  the latest slot the cluster decided, for catch-up; ttl 7 days
 * </pre>
 *
 * <p>Scripts are sent by {@code EVALSHA}, and again by {@code EVAL} to a server that forgot them
 * (safe: every script is idempotent per token). Every Jedis failure is wrapped once, at this
 * boundary, in a one-line {@link LockException} naming the server.
 *
 * <p>Thread-safe; share one per process.
 */
public final class RedisLockProvider implements LockProvider {

    public static final String DEFAULT_KEY_PREFIX = "lockstep";
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(2);
    /**
     * Connections of a provider built from a URI: the tick thread, the watchdog and job threads
     * completing at once each hold one for a single round trip.
     */
    static final int POOL_SIZE = 16;

    private static final LuaScript CLAIM = LuaScript.load("claim.lua");
    private static final LuaScript RENEW = LuaScript.load("renew.lua");
    private static final LuaScript COMPLETE = LuaScript.load("complete.lua");
    private static final LuaScript RECOVER = LuaScript.load("recover.lua");
    private static final LuaScript RUNS = LuaScript.load("runs.lua");
    /** At most this many expired runs per job per look; the rest come with the next one. */
    private static final int EXPIRED_PER_JOB = 16;
    private static final String TIME = "local t = redis.call('TIME') return t[1] * 1000 + math.floor(t[2] / 1000)";

    private final UnifiedJedis jedis;
    private final RedisCalls calls;
    private final boolean ownsClient;
    private final String prefix;
    private final String target;

    private RedisLockProvider(UnifiedJedis jedis, boolean ownsClient, String prefix, String target) {
        this.jedis = jedis;
        this.calls = new RedisCalls(jedis, target);
        this.ownsClient = ownsClient;
        this.prefix = prefix;
        this.target = target;
    }

    /** A builder; give it either a URI or a client of your own. */
    public static Builder builder() {
        return new Builder();
    }

    // ---------------------------------------------------------------- keys

    String slotKey(String job, long slotMillis) {
        return prefix + ":{" + job + "}:slot:" + slotMillis;
    }

    String fenceKey(String job) {
        return prefix + ":{" + job + "}:fence";
    }

    String leaseKey(Lease lease) {
        String base = prefix + ":{" + lease.job() + "}:lease";
        return lease.exclusive() ? base : base + ":" + lease.slot().toEpochMilli();
    }

    String runningKey(String job) {
        return prefix + ":{" + job + "}:running";
    }

    String lastKey(String job) {
        return prefix + ":{" + job + "}:last";
    }

    @Override
    public String lockName(Lease lease) {
        return leaseKey(lease);
    }

    // ---------------------------------------------------------------- operations

    @Override
    public List<ClaimResult> claim(List<ClaimRequest> requests) {
        if (requests.isEmpty()) {
            return List.of();
        }
        List<Object> replies = calls.batch("claim", requests, request -> {
            Lease lease = request.lease();
            long slot = lease.slot().toEpochMilli();
            String job = lease.job();
            List<String> keys = List.of(slotKey(job, slot), fenceKey(job), leaseKey(lease), runningKey(job), lastKey(job));
            return switch (request.mode()) {
                case RECOVER, ABANDON -> new RedisCalls.Call(RECOVER, keys.subList(0, 4), List.of(lease.token(), Long.toString(slot),
                        Long.toString(lease.ttl().toMillis()), Long.toString(request.recordTtl().toMillis()),
                        request.workerId(), request.mode() == ClaimRequest.Mode.RECOVER ? "rerun" : "abandon"));
                case CLAIM, MISS_ONLY, CATCH_UP -> new RedisCalls.Call(CLAIM, keys, List.of(lease.token(), Long.toString(slot),
                        Long.toString(request.misfireGrace().toMillis()), Long.toString(lease.ttl().toMillis()),
                        Long.toString(request.recordTtl().toMillis()), request.workerId(),
                        switch (request.mode()) {
                            case MISS_ONLY -> "miss";
                            case CATCH_UP -> "catchup";
                            default -> "claim";
                        },
                        request.replace() ? "1" : "0", Long.toString(ClaimRequest.LAST_SLOT_TTL.toMillis())));
            };
        });
        List<ClaimResult> results = new ArrayList<>(replies.size());
        for (Object reply : replies) {
            results.add(parseClaim(reply));
        }
        return results;
    }

    @Override
    public List<Boolean> renew(List<Lease> leases) {
        if (leases.isEmpty()) {
            return List.of();
        }
        List<Object> replies = calls.batch("renew", leases, lease -> {
            long slot = lease.slot().toEpochMilli();
            return new RedisCalls.Call(RENEW, List.of(leaseKey(lease), slotKey(lease.job(), slot), runningKey(lease.job())),
                    List.of(lease.token(), Long.toString(lease.ttl().toMillis()), Long.toString(slot)));
        });
        List<Boolean> owned = new ArrayList<>(replies.size());
        for (Object reply : replies) {
            owned.add(calls.asLong("renew", reply) == 1L);
        }
        return owned;
    }

    @Override
    public boolean complete(Lease lease, Outcome outcome) {
        long slot = lease.slot().toEpochMilli();
        List<Object> replies = calls.batch("complete", List.of(lease), l -> new RedisCalls.Call(COMPLETE,
                List.of(slotKey(l.job(), slot), leaseKey(l), runningKey(l.job())),
                List.of(l.token(), outcome.label(), Long.toString(slot))));
        return calls.asLong("complete", replies.get(0)) == 1L;
    }

    @Override
    public List<RunsInFlight> runsInFlight(List<String> jobs) {
        if (jobs.isEmpty()) {
            return List.of();
        }
        List<Object> replies = calls.batch("runs", jobs, job -> new RedisCalls.Call(RUNS, List.of(runningKey(job)),
                List.of(Integer.toString(EXPIRED_PER_JOB))));
        List<RunsInFlight> result = new ArrayList<>(jobs.size());
        for (int i = 0; i < jobs.size(); i++) {
            if (!(replies.get(i) instanceof List<?> reply) || reply.isEmpty()) {
                throw new LockException(target, "runs: unexpected reply " + replies.get(i), null);
            }
            List<Instant> expired = new ArrayList<>();
            for (Object slot : reply.subList(1, reply.size())) {
                expired.add(Instant.ofEpochMilli(calls.asLong("runs", slot)));
            }
            result.add(new RunsInFlight(jobs.get(i), expired, calls.asLong("runs", reply.get(0))));
        }
        return result;
    }

    @Override
    public Map<String, Instant> lastSlots(List<String> jobs) {
        Map<String, Instant> last = new HashMap<>();
        if (jobs.isEmpty()) {
            return last;
        }
        List<Response<String>> responses = new ArrayList<>(jobs.size());
        try (AbstractPipeline p = jedis.pipelined()) {
            for (String job : jobs) {
                responses.add(p.get(lastKey(job)));
            }
            p.sync();
            for (int i = 0; i < jobs.size(); i++) {
                String value = responses.get(i).get();
                if (value != null) {
                    last.put(jobs.get(i), Instant.ofEpochMilli(calls.asLong("last", value)));
                }
            }
        } catch (JedisException e) {
            throw calls.wrap("last", e);
        }
        return last;
    }

    @Override
    public long serverTimeMillis() {
        try {
            return calls.asLong("time", jedis.eval(TIME));
        } catch (JedisException e) {
            throw calls.wrap("time", e);
        }
    }

    @Override
    public String describe() {
        return target;
    }

    /** Checks that the server answers and accepts our credentials; fails with one clear line otherwise. */
    public void ping() {
        try {
            jedis.ping();
        } catch (JedisException e) {
            throw calls.wrap("ping", e);
        }
    }

    @Override
    public void close() {
        if (ownsClient) {
            jedis.close();
        }
    }

    private ClaimResult parseClaim(Object reply) {
        if (!(reply instanceof List<?> list) || list.size() != 4) {
            throw new LockException(target, "claim: unexpected reply " + reply, null);
        }
        String status = RedisCalls.asString(list.get(0));
        long fence = calls.asLong("claim", list.get(1));
        long now = calls.asLong("claim", list.get(2));
        long runningUntil = calls.asLong("claim", list.get(3));
        ClaimResult.Status s = switch (status) {
            case "claimed" -> ClaimResult.Status.CLAIMED;
            case "taken" -> ClaimResult.Status.TAKEN;
            case "skipped" -> ClaimResult.Status.SKIPPED;
            case "missed" -> ClaimResult.Status.MISSED;
            case "early" -> ClaimResult.Status.EARLY;
            case "busy" -> ClaimResult.Status.BUSY;
            case "abandoned" -> ClaimResult.Status.ABANDONED;
            default -> throw new LockException(target, "claim: unexpected status " + status, null);
        };
        return new ClaimResult(s, fence, now, runningUntil);
    }

    /**
     * Builds a {@link RedisLockProvider} from a URI (it then owns and closes its client) or around a
     * {@link UnifiedJedis} you already have (which you close). Fails fast on a bad value. Not
     * thread-safe.
     */
    public static final class Builder {
        private String uri;
        private String user;
        private String password;
        private Duration timeout = DEFAULT_TIMEOUT;
        private String keyPrefix = DEFAULT_KEY_PREFIX;
        private UnifiedJedis client;
        private String description;

        private Builder() {}

        /** {@code redis://[user:password@]host:port[/db]} or {@code rediss://...} for TLS. */
        public Builder uri(String uri) {
            this.uri = Objects.requireNonNull(uri, "uri");
            return this;
        }

        /** The ACL user; overrides one in the URI. */
        public Builder user(String user) {
            this.user = user;
            return this;
        }

        /** The password; overrides one in the URI. */
        public Builder password(String password) {
            this.password = password;
            return this;
        }

        /** Connect and read timeout of every command. */
        public Builder timeout(Duration timeout) {
            if (timeout.toMillis() < 1) {
                throw new IllegalArgumentException("timeout must be at least 1ms, but was " + timeout);
            }
            this.timeout = timeout;
            return this;
        }

        /** The first part of every key (default {@code lockstep}). */
        public Builder keyPrefix(String prefix) {
            this.keyPrefix = RedisCalls.checkKeyPrefix(prefix);
            return this;
        }

        /** A client of yours ({@code RedisClient}, {@code RedisSentinelClient}, {@code RedisClusterClient}). */
        public Builder client(UnifiedJedis client, String description) {
            this.client = Objects.requireNonNull(client, "client");
            this.description = Objects.requireNonNull(description, "description");
            return this;
        }

        public RedisLockProvider build() {
            if (client != null) {
                return new RedisLockProvider(client, false, keyPrefix, description);
            }
            if (uri == null) {
                throw new IllegalArgumentException("either uri or client must be set");
            }
            URI parsed;
            try {
                parsed = new URI(uri);
            } catch (URISyntaxException e) {
                throw new IllegalArgumentException("redis uri is not a valid URI: " + e.getReason());
            }
            String scheme = parsed.getScheme();
            if (!"redis".equals(scheme) && !"rediss".equals(scheme)) {
                throw new IllegalArgumentException("redis uri must start with redis:// or rediss://, but was " + scheme + "://");
            }
            if (parsed.getHost() == null) {
                throw new IllegalArgumentException("redis uri must name a host, but was \"" + masked(uri) + "\"");
            }
            int port = parsed.getPort() == -1 ? 6379 : parsed.getPort();
            DefaultJedisClientConfig.Builder config = DefaultJedisClientConfig.builder()
                    .ssl("rediss".equals(scheme))
                    .connectionTimeoutMillis((int) timeout.toMillis())
                    .socketTimeoutMillis((int) timeout.toMillis())
                    .clientName("lockstep");
            String[] userInfo = parsed.getUserInfo() == null ? new String[0] : parsed.getUserInfo().split(":", 2);
            String effectiveUser = user != null ? user : userInfo.length == 2 && !userInfo[0].isEmpty() ? userInfo[0] : null;
            String effectivePassword = password != null ? password
                    : userInfo.length == 2 ? userInfo[1] : userInfo.length == 1 && !userInfo[0].isEmpty() ? userInfo[0] : null;
            if (effectiveUser != null) {
                config.user(effectiveUser);
            }
            if (effectivePassword != null) {
                config.password(effectivePassword);
            }
            String path = parsed.getPath();
            if (path != null && path.length() > 1) {
                try {
                    config.database(Integer.parseInt(path.substring(1)));
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("redis uri database must be a number, but was \"" + path.substring(1) + "\"");
                }
            }
            HostAndPort hostAndPort = new HostAndPort(parsed.getHost(), port);
            // A bounded wait for a pooled connection: an exhausted pool must fail like a timeout
            // (closed), never block the tick thread or the watchdog forever.
            ConnectionPoolConfig pool = new ConnectionPoolConfig();
            pool.setMaxTotal(POOL_SIZE);
            pool.setMaxIdle(POOL_SIZE);
            pool.setMaxWait(timeout);
            RedisClient redis = RedisClient.builder().hostAndPort(hostAndPort).clientConfig(config.build())
                    .poolConfig(pool).build();
            return new RedisLockProvider(redis, true, keyPrefix, "redis " + hostAndPort);
        }

        private static String masked(String uri) {
            return uri.replaceAll("(rediss?://[^:@/]*:)[^@/]*@", "$1***@");
        }
    }
}
