package io.lockstep.redis;

import java.util.ArrayList;
import java.util.List;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisException;

/**
 * The pipeline mechanics under {@link RedisCalls#batch}: a batch of script calls in one pipeline
 * (one round trip) by {@code EVALSHA}, each followed by its own {@code WAIT} when replicas must
 * acknowledge it, then again by {@code EVAL} only the calls the server answered NOSCRIPT (a restart
 * flushed its script cache: the others already ran). A call whose master failed while others in
 * the batch answered is answered {@link CallFailed} (a bulkhead per master on Redis Cluster); when
 * every call failed, the batch throws, as on one server.
 *
 * <p>Static and stateless: {@link RedisCalls} owns the client, the circuit breaker, the restart
 * quarantine and the wrapping of Jedis failures into {@link io.lockstep.scheduler.lock.LockException}s;
 * what is thrown here is Jedis's own. Thread-safe as far as the client is.
 */
final class ScriptPipeline {

    private ScriptPipeline() {}

    /**
     * A pipelined reply, or {@code fallback} when there is none to read: its master never answered
     * (Jedis's cluster pipeline leaves a failed node's replies unset, and {@code get} then throws
     * {@link IllegalStateException}) or answered with an error (a MOVED while slots move).
     */
    static <T> T answeredOr(Response<T> response, T fallback) {
        try {
            return response.get();
        } catch (RuntimeException e) {
            return fallback;
        }
    }

    /** A pipelined reply; one its master never sent is a connection failure, as the rest of the call's. */
    static <T> T answered(Response<T> response) {
        try {
            return response.get();
        } catch (IllegalStateException e) {
            throw new JedisConnectionException("no reply from its master", e);
        }
    }

    /**
     * The reply of a call whose master could not be reached while others in the same batch were
     * ({@link #pipeline}); nothing is known of what it did.
     */
    record CallFailed(JedisException cause) {}

    /** Marks a reply the server gave as NOSCRIPT. */
    private static final Object NOSCRIPT = new Object();

    /**
     * Runs {@code calls} in one pipeline by {@code EVALSHA}, and those the server answered NOSCRIPT
     * again in a second one by {@code EVAL}.
     *
     * @param acknowledged per call, set here from each call's WAIT (left as it is for a call that
     *     did not wait)
     * @return the replies in order, {@link CallFailed} for a call whose master failed
     * @throws JedisException when no call was answered, or on a data error outside any call's reply
     */
    static List<Object> run(UnifiedJedis jedis, List<RedisCalls.Call> calls, RedisCalls.Replicas replicas, long[] acknowledged) {
        List<Object> replies = pipeline(jedis, calls, true, replicas, acknowledged, null);
        List<Integer> unknown = new ArrayList<>();
        for (int i = 0; i < replies.size(); i++) {
            if (replies.get(i) == NOSCRIPT) {
                unknown.add(i);
            }
        }
        if (!unknown.isEmpty()) {
            List<Object> again = pipeline(jedis, unknown.stream().map(calls::get).toList(), false, replicas, acknowledged, unknown);
            for (int j = 0; j < unknown.size(); j++) {
                replies.set(unknown.get(j), again.get(j));
            }
        }
        return replies;
    }

    /**
     * The master each call goes to (host:port on a Redis Cluster, by its first key's hash slot; one
     * and the same otherwise). A slot whose master cannot be looked up gets a name of its own, so
     * its calls are acknowledged apart.
     */
    private static String[] nodes(UnifiedJedis jedis, List<RedisCalls.Call> calls) {
        String[] nodes = new String[calls.size()];
        if (!JedisLines.isCluster(jedis)) {
            java.util.Arrays.fill(nodes, "");
            return nodes;
        }
        java.util.function.IntFunction<redis.clients.jedis.Connection> connection = JedisLines.connectionForSlot(jedis);
        java.util.Map<Integer, String> bySlot = new java.util.HashMap<>();
        for (int i = 0; i < calls.size(); i++) {
            if (calls.get(i).keys().isEmpty()) {
                nodes[i] = "";
                continue;
            }
            int slot = redis.clients.jedis.util.JedisClusterCRC16.getSlot(calls.get(i).keys().get(0));
            nodes[i] = bySlot.computeIfAbsent(slot, s -> {
                try (redis.clients.jedis.Connection c = connection.apply(s)) {
                    return JedisLines.hostAndPort(c);
                } catch (RuntimeException e) {
                    return "slot " + s;
                }
            });
        }
        return nodes;
    }

    /**
     * @param acknowledged per call of the whole batch, set here from its master's WAIT
     * @param at the index in the whole batch of each of {@code calls} (null: the same)
     * @return the replies in order; with {@code bySha}, {@link #NOSCRIPT} where the server did not know the script
     */
    private static List<Object> pipeline(UnifiedJedis jedis, List<RedisCalls.Call> calls, boolean bySha, RedisCalls.Replicas replicas,
            long[] acknowledged, List<Integer> at) {
        List<Response<Object>> responses = new ArrayList<>(calls.size());
        // One WAIT per master, after its last call of the batch: WAIT covers every write made
        // before it on the same connection, and the pipeline sends each master's calls in order
        // on one connection. (A WAIT after each call would make a master that cannot reach its
        // replicas block waitTimeout once per call, and every other master's answers wait for it.)
        String[] nodes = replicas.count() > 0 ? nodes(jedis, calls) : null;
        java.util.Map<String, Integer> lastOf = new java.util.HashMap<>();
        if (nodes != null) {
            for (int i = 0; i < calls.size(); i++) {
                if (!calls.get(i).keys().isEmpty()) {
                    lastOf.put(nodes[i], i);
                }
            }
        }
        java.util.Map<String, Response<Long>> waits = new java.util.HashMap<>();
        // On a Redis Cluster one pipeline spans the masters: a master that cannot be reached fails
        // only its own calls (a bulkhead per master). A call that could not be sent, or whose reply
        // never came while others did, is answered CallFailed; when every call failed, the batch
        // fails as a whole, as on one server.
        JedisException failure = null;
        try (AbstractPipeline p = JedisLines.pipelined(jedis)) {
            for (RedisCalls.Call call : calls) {
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
                if (nodes != null && lastOf.getOrDefault(nodes[i], -1) == i) {
                    // Routed by the call's first key: the same master, the same connection as its writes.
                    try {
                        waits.put(nodes[i], p.waitReplicas(call.keys().get(0), replicas.count(), replicas.timeout().toMillis()));
                    } catch (JedisDataException e) {
                        throw e;
                    } catch (JedisException e) {
                        failure = e; // not acknowledged (0, below)
                    }
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
        if (nodes != null) {
            java.util.Map<String, Long> acks = new java.util.HashMap<>();
            waits.forEach((node, wait) -> {
                try {
                    acks.put(node, wait.get());
                } catch (RuntimeException e) {
                    acks.put(node, 0L); // no answer from its master (Jedis leaves a failed node's replies unset)
                }
            });
            for (int i = 0; i < calls.size(); i++) {
                if (!calls.get(i).keys().isEmpty()) {
                    acknowledged[at == null ? i : at.get(i)] = acks.getOrDefault(nodes[i], 0L);
                }
            }
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
                        : new JedisConnectionException("no reply from the master for this call: " + e.getMessage(), e);
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

    /** Whether the server did not know the script ({@code EVALSHA} after a restart flushed its cache). */
    static boolean isNoScript(JedisDataException e) {
        return e.getMessage() != null && e.getMessage().startsWith("NOSCRIPT");
    }
}
