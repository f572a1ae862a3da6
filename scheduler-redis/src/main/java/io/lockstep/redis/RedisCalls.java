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
import redis.clients.jedis.exceptions.JedisAccessControlException;
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
 * failed master's calls answered {@link ScriptPipeline.CallFailed}) is {@link ScriptPipeline}'s.
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
        this(jedis, target, breaker, quarantineMillis, null, false);
    }

    /**
     * @param markerKey Redlock: the master's deployment marker, read with its uptime; a master
     *     within its quarantine counts when the marker vouches for it (see {@link #vouches})
     * @param durable whether the master keeps its data across a restart (declared in
     *     {@code redis.redlock.durable})
     */
    RedisCalls(UnifiedJedis jedis, String target, CircuitBreaker breaker, java.util.function.LongSupplier quarantineMillis, String markerKey,
            boolean durable) {
        this.jedis = jedis;
        this.target = target;
        this.breaker = breaker;
        this.quarantineMillis = quarantineMillis;
        this.markerKey = markerKey;
        this.durable = durable;
    }

    private final String markerKey;
    private final boolean durable;

    /** Its circuit breaker's state ({@code closed}, {@code open}, {@code half_open}), or {@code disabled} without one. */
    String circuitState() {
        return breaker == null ? "disabled" : breaker.getState().name().toLowerCase(java.util.Locale.ROOT);
    }

    /** The uptime read (first in a pipeline): on the same connection as the calls. */
    Call uptimeCall(long quarantineMillis) {
        return new Call(UPTIME, markerKey == null ? List.of() : List.of(markerKey), List.of(Long.toString(quarantineMillis)));
    }

    /**
     * Whether a master up for less than its quarantine counts all the same, by its deployment
     * marker: the marker was written in this run of the server (its run_id) as the first of a new
     * deployment on a server without Lockstep's state (it had nothing a restart could have lost);
     * or the master keeps its data across restarts (declared durable) and its marker came back
     * with it from an earlier run. A marker copied to it in this run (it restarted empty: the
     * heartbeat copies its peers') vouches for nothing, durable or not. The lock API reads no
     * marker: nothing vouches there.
     *
     * @param reply {@code uptime.lua}'s
     */
    boolean vouches(List<?> reply) {
        if ("1".equals(text(reply.get(1)))) {
            return true;
        }
        if (!durable || !"1".equals(text(reply.get(3)))) {
            return false;
        }
        if (reply.size() > 4 && "1".equals(text(reply.get(4)))) {
            return true;
        }
        // Declared durable, but without its AOF (m4 of the 2026-12-04 review): its marker came back
        // from an RDB snapshot or a restored backup, with records older than its last writes.
        notDurable(reply.size() > 5 ? text(reply.get(5)) : "");
        return false;
    }

    /** Whether the master is declared durable ({@code redis.redlock.durable}). */
    boolean durable() {
        return durable;
    }

    /**
     * At the start, for a master declared durable: reads {@code INFO persistence}. Without
     * {@code aof_enabled:1} it logs so ({@link #notDurable}); with it, {@code appendfsync} as
     * {@code CONFIG GET} reads it (a warning unless {@code always}: a crash can lose the last second
     * of writes), where the ACL user may run {@code CONFIG} (otherwise nothing more is said).
     */
    void checkDurable() {
        String persistence;
        String run;
        try {
            persistence = jedis.info("persistence");
            run = jedis.info("server").lines().filter(l -> l.startsWith("run_id:"))
                    .map(l -> l.substring("run_id:".length()).trim()).findFirst().orElse("");
        } catch (JedisException e) {
            throw wrap("persistence", e);
        }
        if (!persistence.lines().anyMatch(l -> l.trim().equals("aof_enabled:1"))) {
            notDurable(run);
            return;
        }
        String fsync;
        try {
            fsync = JedisLines.configValue(jedis.sendCommand(redis.clients.jedis.Protocol.Command.CONFIG, "GET", "appendfsync"));
        } catch (JedisException e) {
            return; // CONFIG not allowed (an ACL, a renamed command): the AOF is on, that is what can be checked
        }
        org.slf4j.event.Level level = fsync.equals("always") ? org.slf4j.event.Level.INFO : org.slf4j.event.Level.WARN;
        org.slf4j.LoggerFactory.getLogger("io.lockstep.events").atLevel(level).addKeyValue("event", "redlock_durable")
                .addKeyValue("target", target).addKeyValue("appendfsync", fsync)
                .log(fsync.equals("always") ? target + " is durable: appendonly yes, appendfsync always"
                        : target + " is listed in redis.redlock.durable and runs with appendonly, but appendfsync " + fsync
                        + ": a crash can lose its last writes (up to a second), and it still counts at once after a restart;"
                        + " set appendfsync always there");
    }

    /** The server run ({@code run_id}, new at every start) this master's "durable without its AOF" line was last logged for. */
    private final java.util.concurrent.atomic.AtomicReference<String> notDurableRun = new java.util.concurrent.atomic.AtomicReference<>();

    /**
     * Logs, once per run of the server ({@code run}: its {@code run_id}), that this master is
     * declared durable but runs without {@code appendonly}: it is counted like any other master, so
     * it sits out the restart quarantine after a restart.
     */
    void notDurable(String run) {
        if (run.equals(notDurableRun.getAndSet(run))) {
            return;
        }
        org.slf4j.LoggerFactory.getLogger("io.lockstep.events").atWarn().addKeyValue("event", "redlock_durable_without_aof")
                .addKeyValue("target", target).log(target + " is listed in redis.redlock.durable, but runs without appendonly"
                        + " (INFO persistence: aof_enabled:0): not trusted to keep its data across a restart, it sits out the restart"
                        + " quarantine like any other master; set appendonly yes and appendfsync always there, or take it out of durable");
    }

    private static String text(Object o) {
        return o instanceof byte[] b ? new String(b, java.nio.charset.StandardCharsets.UTF_8) : String.valueOf(o);
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
        long quarantine = quarantineMillis.getAsLong();
        boolean uptime = quarantine > 0;
        if (uptime) {
            // First, on the same connection: a restart in between would break the connection, so the
            // uptime read is the uptime of the server that runs the calls.
            calls.add(uptimeCall(quarantine));
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
                if (!pastQuarantine(seconds, quarantine) && !vouches(up)) {
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

    private static boolean causedBy(Throwable t, Class<? extends Throwable> type) {
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (type.isInstance(c)) {
                return true;
            }
        }
        return false;
    }

    LockException wrap(String operation, JedisException e) {
        if (e instanceof JedisConnectionException) {
            // The other idle connections most likely went stale with this one (a restarted or
            // failed-over server): drop them, so that the next call opens a fresh connection instead
            // of failing once per stale one.
            JedisLines.clearPool(jedis);
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
