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
     * @param acknowledged per call of the whole batch, set here from each call's WAIT
     * @param at the index in the whole batch of each of {@code calls} (null: the same)
     * @return the replies in order; with {@code bySha}, {@link #NOSCRIPT} where the server did not know the script
     */
    private static List<Object> pipeline(UnifiedJedis jedis, List<RedisCalls.Call> calls, boolean bySha, RedisCalls.Replicas replicas,
            long[] acknowledged, List<Integer> at) {
        List<Response<Object>> responses = new ArrayList<>(calls.size());
        List<Response<Long>> waits = new ArrayList<>();
        List<Integer> waited = new ArrayList<>();
        // On a Redis Cluster one pipeline spans the masters: a master that cannot be reached fails
        // only its own calls (a bulkhead per master). A call that could not be sent, or whose reply
        // never came while others did, is answered CallFailed; when every call failed, the batch
        // fails as a whole, as on one server.
        JedisException failure = null;
        try (AbstractPipeline p = jedis.pipelined()) {
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
