package io.lockstep.redis;

import io.lockstep.scheduler.lock.LockException;
import java.util.Optional;
import java.util.function.LongSupplier;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisException;

/**
 * One server's store behind a {@link RedisLockProvider} (one Redis, a Sentinel's master, or a
 * Cluster): its client (closed here when the provider made it), its key layout, the
 * {@link RedisCalls} every script goes through, and the helpers wired on them, which do the work:
 * {@link ClaimScripts} (claims, recoveries), {@link SlotReads} (slot states, runs in flight, last
 * slots), {@link LeaseScripts} (starts, renewals, completions), {@link CheckpointScripts},
 * {@link RedisMembers} (heartbeats, published configs) and {@link RedisInForce}. Also what asks the
 * server itself rather than through a script: its clock, the master a Sentinel follows now, its
 * eviction policy, and the start check.
 *
 * <p>Apart from {@link RedisLockProvider}, the public {@link io.lockstep.scheduler.lock.LockProvider},
 * which only decides, call by call, whether this server or {@link RedlockStore} answers: setting
 * up one server (its client, its keys, its helpers, and for a Redlock master the restart
 * quarantine and durability its calls check) is the same for the application's provider and for
 * each of Redlock's masters, and none of it is the facade's concern. As {@link ServerLocks} is to
 * {@link RedisLocks}. Thread-safe.
 */
final class ServerStore {

    private final UnifiedJedis jedis;
    private final boolean ownsClient;
    private final String target;
    private final RedisKeys keys;
    private final RedisCalls calls;
    private final RedisMembers members;
    private final RedisInForce inForce;
    private final ClaimScripts claims;
    private final SlotReads reads;
    /** The start, renew and complete scripts. */
    private final LeaseScripts leases;
    /** Runs' checkpoints. */
    private final CheckpointScripts checkpoints;
    /** Backfills: requests, progress, marks and views. */
    private final BackfillStore backfills;
    /** Expectations: judged from the jobs' history; null when it keeps none ({@code historyKeep} 0). */
    private final RedisExpectations expectations;

    /**
     * One server (or Sentinel, or Cluster).
     *
     * @param ownsClient whether {@link #close()} closes {@code jedis} (the provider made it)
     * @param quarantineMillis a Redlock master's restart quarantine, else 0
     * @param durable a Redlock master declared in {@code redis.redlock.durable} (see {@link RestartQuarantine#vouches})
     */
    ServerStore(UnifiedJedis jedis, boolean ownsClient, String prefix, String target, RedisCalls.Replicas replicas,
            int historyKeep, LongSupplier quarantineMillis, boolean durable) {
        this.jedis = jedis;
        this.keys = new RedisKeys(prefix,
                JedisLines.isCluster(jedis));
        this.calls = new RedisCalls(jedis, target, null, quarantineMillis, keys.deployment(), durable);
        this.ownsClient = ownsClient;
        this.members = new RedisMembers(jedis, calls, keys);
        this.inForce = new RedisInForce(jedis, calls, keys);
        this.claims = new ClaimScripts(calls, keys, replicas, target, historyKeep);
        this.reads = new SlotReads(calls, keys, target);
        this.leases = new LeaseScripts(calls, keys, replicas, target, historyKeep);
        this.checkpoints = new CheckpointScripts(calls, keys, replicas, target);
        this.backfills = new BackfillStore(jedis, calls, keys, historyKeep);
        this.expectations = historyKeep > 0 ? new RedisExpectations(jedis, calls, keys) : null;
        this.target = target;
    }

    RedisKeys keys() {
        return keys;
    }

    UnifiedJedis jedis() {
        return jedis;
    }

    RedisCalls calls() {
        return calls;
    }

    ClaimScripts claims() {
        return claims;
    }

    SlotReads reads() {
        return reads;
    }

    LeaseScripts leases() {
        return leases;
    }

    CheckpointScripts checkpoints() {
        return checkpoints;
    }

    BackfillStore backfills() {
        return backfills;
    }

    /** Expectations, judged from the jobs' history: none when no history is kept. */
    java.util.Optional<RedisExpectations> expectations() {
        return java.util.Optional.ofNullable(expectations);
    }

    RedisMembers members() {
        return members;
    }

    RedisInForce inForce() {
        return inForce;
    }

    /** The server's clock; on Redis Cluster the latest of the masters' clocks ({@link ServerClock}). */
    long serverTimeMillis() {
        try {
            return ServerClock.millis(jedis);
        } catch (JedisException e) {
            throw calls.wrap("time", e);
        } catch (RuntimeException e) {
            throw new LockException(target, target + ": time: reading the server's clock failed (" + e + ")", e);
        }
    }

    /** Where the server is; through Sentinel, with the master it follows now (it changes with a failover). */
    String describe() {
        return JedisLines.currentMaster(jedis).map(master -> target + " (master " + master + ")").orElse(target);
    }

    /**
     * {@link StartCheck} on this server. It tries the operations through {@code provider}, the way
     * the scheduler calls them, so that what it proves is what a worker will run.
     */
    void startCheck(RedisLockProvider provider) {
        StartCheck.run(provider, jedis, calls, target);
    }

    /** {@link StartCheck#evictionWarning} for this server. */
    Optional<String> evictionWarning() {
        return StartCheck.evictionWarning(jedis, target);
    }

    /** Closes the client if the provider made it; a client of the application's stays open. */
    void close() {
        if (ownsClient) {
            jedis.close();
        }
    }
}
