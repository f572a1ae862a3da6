package io.lockstep.redis;

import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.lockstep.scheduler.lock.ClaimResult;
import io.lockstep.scheduler.lock.LockException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Supplier;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisException;

/**
 * The one place Lockstep talks to Jedis: runs Lua scripts in pipelined batches by {@code EVALSHA},
 * sends again with {@code EVAL} only the calls the server answered NOSCRIPT (a restart flushed its
 * script cache), and wraps every Jedis failure
 * once in a one-line {@link LockException} naming the server. Thread-safe.
 *
 * <p>This class keeps the policy around a batch: the circuit breaker, a Redlock node's restart
 * quarantine (the uptime read first on the same connection), the wrapping of failures and the
 * parsing of replies. The pipeline itself (the EVALSHA then EVAL round trips, each call's WAIT, a
 * failed master's calls answered {@link ScriptPipeline.CallFailed}) is {@link ScriptPipeline}'s;
 * whether a Redlock master's answers count yet (its uptime, deployment marker and durability) is
 * {@link RestartQuarantine}'s; what a failure is told as is {@link RedisFailures}'.
 */
final class RedisCalls {

    /** One script call: the script, its keys and its arguments. */
    record Call(LuaScript script, List<String> keys, List<String> args) {}

    /**
     * How many replicas must acknowledge a batch's writes ({@code WAIT}, on the same connection,
     * in the same round trip), and how long the server may wait for them.
     */
    record Replicas(int count, java.time.Duration timeout) {
        static final Replicas NONE = new Replicas(0, java.time.Duration.ZERO);
    }

    /**
     * A batch's replies, and per call how many replicas acknowledged its writes (its own WAIT, on
     * the node that ran it; {@link Long#MAX_VALUE} without waiting). Judged per call, so that a
     * shard that cannot reach {@code waitReplicas} costs only its own calls (a bulkhead per master).
     */
    record Replies(List<Object> replies, long[] acknowledgedPerCall) {
        /** Whether call {@code i} reached {@code replicas}. */
        boolean confirmed(int i, Replicas replicas) {
            return !(replies.get(i) instanceof ScriptPipeline.CallFailed) && acknowledgedPerCall[i] >= replicas.count();
        }
    }

    final UnifiedJedis jedis;
    final String target;
    /** Fails calls fast while Redis keeps failing (the lock API's); null: every call goes out. */
    private final CircuitBreaker breaker;
    /** A Redlock node's restart quarantine, read per batch (none: no uptime is read). */
    private final RestartQuarantine quarantine;

    RedisCalls(UnifiedJedis jedis, String target) {
        this(jedis, target, null);
    }

    RedisCalls(UnifiedJedis jedis, String target, CircuitBreaker breaker) {
        this(jedis, target, breaker, () -> 0);
    }

    RedisCalls(UnifiedJedis jedis, String target, CircuitBreaker breaker, java.time.Duration quarantine) {
        this(jedis, target, breaker, quarantine::toMillis);
    }

    /**
     * @param quarantine when positive, every batch first reads the server's uptime on the same
     *     connection and throws {@link RestartQuarantine.Quarantined} (after running the calls) while it is shorter
     */
    RedisCalls(UnifiedJedis jedis, String target, CircuitBreaker breaker, java.util.function.LongSupplier quarantineMillis) {
        this(jedis, target, breaker, quarantineMillis, null, false);
    }

    /**
     * @param markerKey Redlock: the master's deployment marker, read with its uptime; a master
     *     within its quarantine counts when the marker vouches for it (see {@link RestartQuarantine#vouches})
     * @param durable whether the master keeps its data across a restart (declared in
     *     {@code redis.redlock.durable})
     */
    RedisCalls(UnifiedJedis jedis, String target, CircuitBreaker breaker, java.util.function.LongSupplier quarantineMillis, String markerKey,
            boolean durable) {
        this.jedis = jedis;
        this.target = target;
        this.breaker = breaker;
        this.quarantine = new RestartQuarantine(jedis, target, quarantineMillis, markerKey, durable);
    }

    /** This node's restart quarantine: its uptime read, and whether it is trusted before its end. */
    RestartQuarantine quarantine() {
        return quarantine;
    }

    /** Its circuit breaker's state ({@code closed}, {@code open}, {@code half_open}), or {@code disabled} without one. */
    String circuitState() {
        return breaker == null ? "disabled" : breaker.getState().name().toLowerCase(java.util.Locale.ROOT);
    }

    /**
     * Runs {@code action} through the circuit breaker, if there is one: refused at once while it is
     * open; a failure to reach the server counts against it, any answer of the server for it.
     */
    private <R> R guarded(String operation, Supplier<R> action) {
        if (breaker == null) {
            return action.get();
        }
        if (!breaker.tryAcquirePermission()) {
            throw new LockException(target, target + ": " + operation + ": circuit open (Redis kept failing; calls fail fast "
                    + "until a probe gets through)", null);
        }
        long start = System.nanoTime();
        try {
            R result = action.get();
            breaker.onSuccess(System.nanoTime() - start, TimeUnit.NANOSECONDS);
            return result;
        } catch (LockException e) {
            if (e.getCause() instanceof JedisConnectionException) {
                breaker.onError(System.nanoTime() - start, TimeUnit.NANOSECONDS, e);
            } else {
                breaker.onSuccess(System.nanoTime() - start, TimeUnit.NANOSECONDS); // the server answered
            }
            throw e;
        } catch (RuntimeException e) {
            breaker.releasePermission();
            throw e;
        }
    }

    /**
     * Runs one script call per item in one pipeline (one round trip). Calls the server answers with
     * NOSCRIPT (a restart flushed its script cache) are sent again by {@code EVAL}, and only those:
     * the others already ran, and running a script twice is not a retry we need to make.
     */
    <T> List<Object> batch(String operation, List<T> items, Function<T, Call> toCall) {
        List<Object> replies = batch(operation, items, toCall, Replicas.NONE).replies();
        for (Object reply : replies) {
            answered(operation, reply); // a master that failed fails the whole batch here
        }
        return replies;
    }


    /**
     * {@link #batch}, then a {@code WAIT} for {@code replicas} after each call, in the same round
     * trip; a call whose master failed while others answered is answered {@link ScriptPipeline.CallFailed}.
     */
    <T> Replies batch(String operation, List<T> items, Function<T, Call> toCall, Replicas replicas) {
        return guarded(operation, () -> unguardedBatch(operation, items, toCall, replicas));
    }

    private <T> Replies unguardedBatch(String operation, List<T> items, Function<T, Call> toCall, Replicas replicas) {
        List<Call> calls = new ArrayList<>(items.size() + 1);
        long quarantineMillis = quarantine.millis();
        boolean uptime = quarantineMillis > 0;
        if (uptime) {
            // First, on the same connection: a restart in between would break the connection, so the
            // uptime read is the uptime of the server that runs the calls.
            calls.add(quarantine.uptimeCall(quarantineMillis));
        }
        for (T item : items) {
            calls.add(toCall.apply(item));
        }
        try {
            long[] acknowledged = new long[calls.size()];
            java.util.Arrays.fill(acknowledged, Long.MAX_VALUE);
            List<Object> replies = ScriptPipeline.run(jedis, calls, replicas, acknowledged);
            if (uptime) {
                List<?> up = (List<?>) answered("uptime", replies.remove(0));
                long seconds = asLong("uptime", up.get(0));
                quarantine.check(up, seconds, quarantineMillis); // throws while it is within its quarantine
                acknowledged = java.util.Arrays.copyOfRange(acknowledged, 1, acknowledged.length);
            }
            return new Replies(replies, acknowledged);
        } catch (JedisException e) {
            throw wrap(operation, e);
        } catch (LockException e) {
            throw e;
        } catch (RuntimeException e) {
            // The client itself failed (seen: a cluster pipeline losing a node's connection mid-batch).
            throw new LockException(target, target + ": " + operation + ": client failed (" + e + ")", e);
        }
    }

    /** Runs a single script call without a pipeline. */
    Object call(String operation, Call call) {
        return guarded(operation, () -> unguardedCall(operation, call));
    }

    private Object unguardedCall(String operation, Call call) {
        try {
            try {
                return jedis.evalsha(call.script().sha(), call.keys(), call.args());
            } catch (JedisDataException e) {
                if (ScriptPipeline.isNoScript(e)) {
                    return jedis.eval(call.script().source(), call.keys(), call.args());
                }
                throw e;
            }
        } catch (JedisException e) {
            throw wrap(operation, e);
        }
    }

    /** {@code reply}, or a {@link LockException} when it is a {@link ScriptPipeline.CallFailed}. */
    Object answered(String operation, Object reply) {
        if (reply instanceof ScriptPipeline.CallFailed f) {
            throw wrap(operation, f.cause());
        }
        return reply;
    }

    /** A key prefix: non-empty, and without braces (they would break the hash tags). */
    static String checkKeyPrefix(String prefix) {
        if (prefix == null || prefix.isEmpty() || prefix.contains("{") || prefix.contains("}")) {
            throw new IllegalArgumentException("keyPrefix must be non-empty without braces, but was \"" + prefix + "\"");
        }
        return prefix;
    }

    static String asString(Object o) {
        return o instanceof byte[] bytes ? new String(bytes, StandardCharsets.UTF_8) : String.valueOf(o);
    }

    long asLong(String operation, Object o) {
        if (o instanceof Number n) {
            return n.longValue();
        }
        try {
            return Long.parseLong(asString(o));
        } catch (NumberFormatException e) {
            throw new LockException(target, operation + ": unexpected reply " + asString(o), e);
        }
    }

    /** {@code e} as one line naming this server, and dropping its pool's idle connections when it could not reach it ({@link RedisFailures}). */
    LockException wrap(String operation, JedisException e) {
        return RedisFailures.wrap(jedis, target, operation, e);
    }

    /** One slot's answer of claim.lua or recover.lua. */
    ClaimResult claimResult(Object reply) {
        if (!(reply instanceof List<?> list) || list.size() < 4) {
            throw new LockException(target, "claim: unexpected reply " + reply, null);
        }
        String status = RedisCalls.asString(list.get(0));
        long fence = asLong("claim", list.get(1));
        long now = asLong("claim", list.get(2));
        long runningUntil = asLong("claim", list.get(3));
        ClaimResult.Status s;
        try {
            s = ClaimResult.Status.valueOf(status.toUpperCase(java.util.Locale.ROOT)); // claimed, taken, skipped, ...
        } catch (IllegalArgumentException e) {
            throw new LockException(target, "claim: unexpected status " + status, null);
        }
        // A recovery claimed says why the run before it ended (recover.lua); a claim's fifth element is the
        // holder of a slot taken, read apart (holder()).
        String why = s == ClaimResult.Status.CLAIMED && list.size() > 4 ? RedisCalls.asString(list.get(4)) : "";
        // A claim's sixth element: 1 when a claim made ahead is the run's start, 0 when it is staged (claim.lua).
        boolean started = list.size() > 5 && asLong("claim", list.get(5)) == 1;
        return new ClaimResult(s, fence, now, runningUntil, why, started);
    }

    /**
     * Per call of one batch, the latest of {@code times} the server read during the batch (0: the
     * call has no time, e.g. it failed; left 0). One pipeline's calls run one after another on one
     * server and its replies arrive only after the last of them ran, so the latest time the server's
     * clock read during the batch bounds that clock at the arrival of every reply: the tightest
     * bound the batch gives. On a Redis Cluster each call keeps its own time: masters' clocks are
     * not one another's, and telling which master a call went to would cost a lookup per call
     * (a pooled connection each, which a master that is down makes wait its connect timeout).
     */
    long[] latestOfBatch(long[] times) {
        if (JedisLines.isCluster(jedis)) {
            return times.clone();
        }
        long latest = 0;
        for (long t : times) {
            latest = Math.max(latest, t);
        }
        long[] out = new long[times.length];
        for (int g = 0; g < times.length; g++) {
            out[g] = times[g] > 0 ? latest : 0;
        }
        return out;
    }

    /** The token whose record holds the slot, from claim.lua's answer {@code taken}; empty otherwise. */
    static String holder(Object reply) {
        return reply instanceof List<?> list && list.size() > 4 ? asString(list.get(4)) : "";
    }
}
