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
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisAccessControlException;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisException;

/**
 * The one place Lockstep talks to Jedis: runs Lua scripts in pipelined batches by {@code EVALSHA},
 * sends again with {@code EVAL} only the calls the server answered NOSCRIPT (a restart flushed its
 * script cache), and wraps every Jedis failure
 * once in a one-line {@link LockException} naming the server. Thread-safe.
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
            return !(replies.get(i) instanceof CallFailed) && acknowledgedPerCall[i] >= replicas.count();
        }
    }

    /**
     * A Redlock node's answers that must not count: it has not been up for the restart quarantine,
     * so it may have come back without records it held. The calls ran: the node is written to.
     */
    static final class Quarantined extends LockException {
        Quarantined(String target, long uptimeSeconds, long quarantineSeconds) {
            super(target, target + ": up " + uptimeSeconds + " s, not yet past the restart quarantine ("
                    + quarantineSeconds + " s; counted once uptime reads more): written to, but its answers do not count yet", null);
        }
    }

    static final LuaScript UPTIME = LuaScript.load("uptime.lua");

    /**
     * Whether a node whose {@code INFO} reads {@code uptimeSeconds} has been up longer than the
     * quarantine. {@code uptime_in_seconds} is the difference of two whole-second clock readings
     * (now and the start, each rounded down), so it reads {@code n} as early as a few ms past
     * {@code n - 1} s of real uptime: a node counts only once it reads more than the quarantine
     * (rounded up to whole seconds), which is never before the quarantine has fully passed (at most
     * one second after for a quarantine of whole seconds, under two otherwise). Uptime follows the
     * Redis host's wall clock.
     */
    static boolean pastQuarantine(long uptimeSeconds, long quarantineMillis) {
        return uptimeSeconds > (quarantineMillis + 999) / 1000;
    }

    final UnifiedJedis jedis;
    final String target;
    /** Fails calls fast while Redis keeps failing (the lock API's); null: every call goes out. */
    private final CircuitBreaker breaker;
    /** A Redlock node's restart quarantine in ms, read per batch; zero or less: none (no uptime is read). */
    private final java.util.function.LongSupplier quarantineMillis;

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
     *     connection and throws {@link Quarantined} (after running the calls) while it is shorter
     */
    RedisCalls(UnifiedJedis jedis, String target, CircuitBreaker breaker, java.util.function.LongSupplier quarantineMillis) {
        this.jedis = jedis;
        this.target = target;
        this.breaker = breaker;
        this.quarantineMillis = quarantineMillis;
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
     * trip; a call whose master failed while others answered is answered {@link CallFailed}.
     */
    <T> Replies batch(String operation, List<T> items, Function<T, Call> toCall, Replicas replicas) {
        return guarded(operation, () -> unguardedBatch(operation, items, toCall, replicas));
    }

    private <T> Replies unguardedBatch(String operation, List<T> items, Function<T, Call> toCall, Replicas replicas) {
        List<Call> calls = new ArrayList<>(items.size() + 1);
        long quarantine = quarantineMillis.getAsLong();
        boolean uptime = quarantine > 0;
        if (uptime) {
            // First, on the same connection: a restart in between would break the connection, so the
            // uptime read is the uptime of the server that runs the calls.
            calls.add(new Call(UPTIME, List.of(), List.of()));
        }
        for (T item : items) {
            calls.add(toCall.apply(item));
        }
        try {
            long[] acknowledged = new long[calls.size()];
            java.util.Arrays.fill(acknowledged, Long.MAX_VALUE);
            List<Object> replies = pipeline(calls, true, replicas, acknowledged, null);
            List<Integer> unknown = new ArrayList<>();
            for (int i = 0; i < replies.size(); i++) {
                if (replies.get(i) == NOSCRIPT) {
                    unknown.add(i);
                }
            }
            if (!unknown.isEmpty()) {
                List<Object> again = pipeline(unknown.stream().map(calls::get).toList(), false, replicas, acknowledged, unknown);
                for (int j = 0; j < unknown.size(); j++) {
                    replies.set(unknown.get(j), again.get(j));
                }
            }
            if (uptime) {
                long seconds = asLong("uptime", answered("uptime", replies.remove(0)));
                if (!pastQuarantine(seconds, quarantine)) {
                    throw new Quarantined(target, seconds, (quarantine + 999) / 1000);
                }
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
                if (isNoScript(e)) {
                    return jedis.eval(call.script().source(), call.keys(), call.args());
                }
                throw e;
            }
        } catch (JedisException e) {
            throw wrap(operation, e);
        }
    }

    /** Marks a reply the server gave as NOSCRIPT. */
    private static final Object NOSCRIPT = new Object();

    /**
     * @param acknowledged per call of the whole batch, set here from each call's WAIT
     * @param at the index in the whole batch of each of {@code calls} (null: the same)
     * @return the replies in order; with {@code bySha}, {@link #NOSCRIPT} where the server did not know the script
     */
    private List<Object> pipeline(List<Call> calls, boolean bySha, Replicas replicas, long[] acknowledged, List<Integer> at) {
        List<Response<Object>> responses = new ArrayList<>(calls.size());
        List<Response<Long>> waits = new ArrayList<>();
        List<Integer> waited = new ArrayList<>();
        // On a Redis Cluster one pipeline spans the masters: a master that cannot be reached fails
        // only its own calls (a bulkhead per master). A call that could not be sent, or whose reply
        // never came while others did, is answered CallFailed; when every call failed, the batch
        // fails as a whole, as on one server.
        JedisException failure = null;
        try (AbstractPipeline p = jedis.pipelined()) {
            for (Call call : calls) {
                int i = responses.size();
                try {
                    responses.add(bySha ? p.evalsha(call.script().sha(), call.keys(), call.args())
                            : p.eval(call.script().source(), call.keys(), call.args()));
                } catch (JedisDataException e) {
                    throw e;
                } catch (JedisException e) {
                    failure = e;
                    responses.add(null);
                    continue;
                }
                if (replicas.count() > 0 && !call.keys().isEmpty()) {
                    // Same connection as the write (on Cluster: routed by the call's first key, so
                    // the node that ran it): WAIT counts the replicas that have this client's writes.
                    waits.add(p.waitReplicas(call.keys().get(0), replicas.count(), replicas.timeout().toMillis()));
                    waited.add(at == null ? i : at.get(i));
                }
            }
            try {
                p.sync();
            } catch (JedisDataException e) {
                throw e;
            } catch (JedisException e) {
                failure = e;
            }
        } catch (JedisDataException e) {
            throw e;
        } catch (JedisException e) {
            failure = failure == null ? e : failure; // closing the pipeline syncs what is left
        }
        for (int k = 0; k < waits.size(); k++) {
            long acks = 0;
            try {
                acks = waits.get(k).get();
            } catch (RuntimeException e) {
                // No answer from its master (Jedis leaves a failed node's replies unset): none acknowledged.
            }
            acknowledged[waited.get(k)] = acks;
        }
        List<Object> replies = new ArrayList<>(responses.size());
        int failed = 0;
        JedisException first = failure;
        for (Response<Object> response : responses) {
            if (response == null) {
                replies.add(new CallFailed(failure));
                failed++;
                continue;
            }
            try {
                replies.add(response.get());
            } catch (JedisDataException e) {
                if (bySha && isNoScript(e)) {
                    replies.add(NOSCRIPT);
                    continue;
                }
                // An error reply to this call alone (MOVED, BUSY, LOADING, NOPERM, a script error): what
                // it did is unknown (a script's earlier writes are not rolled back), so it is a failed call.
                first = first == null ? e : first;
                replies.add(new CallFailed(e));
                failed++;
            } catch (RuntimeException e) {
                // Never answered: Jedis's cluster pipeline logs a node's connection failure and leaves
                // that node's replies unset. Only this master's calls fail.
                JedisException unanswered = failure != null ? failure
                        : new redis.clients.jedis.exceptions.JedisConnectionException("no reply from the master for this call: " + e.getMessage(), e);
                first = first == null ? unanswered : first;
                replies.add(new CallFailed(unanswered));
                failed++;
            }
        }
        if (failed == responses.size() && first != null) {
            throw first; // nothing answered (or nothing could be sent): the batch fails as a whole, as on one server
        }
        return replies;
    }

    /**
     * The reply of a call whose master could not be reached while others in the same batch were
     * ({@link #pipeline}); nothing is known of what it did.
     */
    record CallFailed(JedisException cause) {}

    /** {@code reply}, or a {@link LockException} when it is a {@link CallFailed}. */
    Object answered(String operation, Object reply) {
        if (reply instanceof CallFailed f) {
            throw wrap(operation, f.cause());
        }
        return reply;
    }

    private static boolean isNoScript(JedisDataException e) {
        return e.getMessage() != null && e.getMessage().startsWith("NOSCRIPT");
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

    private static boolean causedBy(Throwable t, Class<? extends Throwable> type) {
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (type.isInstance(c)) {
                return true;
            }
        }
        return false;
    }

    LockException wrap(String operation, JedisException e) {
        if (e instanceof JedisConnectionException && jedis instanceof RedisClient client) {
            // The other idle connections most likely went stale with this one (a restarted or
            // failed-over server): drop them, so that the next call opens a fresh connection instead
            // of failing once per stale one.
            client.getPool().clear();
        }
        String kind;
        if (e.getMessage() != null && (e.getMessage().contains("NOPERM") || e.getMessage().contains("no permissions")
                || e.getMessage().contains("can't run this command") || e.getMessage().contains("can't access"))) {
            kind = "permission denied to the ACL user" + LuaScript.named(e.getMessage())
                    .map(script -> ": " + script.name() + " runs " + String.join(" ", script.commands())
                            + " (see the README for the whole ACL line)").orElse("");
        } else if (e instanceof JedisAccessControlException || (e.getMessage() != null
                && (e.getMessage().startsWith("WRONGPASS") || e.getMessage().startsWith("NOAUTH")))) {
            kind = "authentication failed";
        } else if (causedBy(e, javax.net.ssl.SSLException.class)) {
            kind = "TLS handshake failed, check redis.tls and that the server speaks TLS";
        } else if (e instanceof JedisConnectionException) {
            kind = target.startsWith("rediss ") ? "cannot reach the server, or it does not speak TLS on that port" : "cannot reach the server";
        } else {
            kind = "command failed";
        }
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String detail = root.getMessage() == null ? root.getClass().getSimpleName() : root.getMessage();
        return new LockException(target, target + ": " + operation + ": " + kind + " (" + detail.replaceAll("\\s+", " ") + ")", e);
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
        return new ClaimResult(s, fence, now, runningUntil);
    }

    /** The token whose record holds the slot, from claim.lua's answer {@code taken}; empty otherwise. */
    static String holder(Object reply) {
        return reply instanceof List<?> list && list.size() > 4 ? asString(list.get(4)) : "";
    }
}
