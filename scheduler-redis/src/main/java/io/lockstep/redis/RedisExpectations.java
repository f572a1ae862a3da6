package io.lockstep.redis;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.lockstep.scheduler.lock.Expectations;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisException;

/**
 * {@link Expectations} on one server (or Sentinel, or Cluster): {@code expect.lua} judges a job
 * from its history and decisions streams, {@code expect_done.lua} records a verdict logged or
 * delivered. The keys are the job's ({@link RedisKeys#expectState} and beside it), in its group's
 * hash slot. Thread-safe.
 */
final class RedisExpectations implements Expectations {

    private static final LuaScript JUDGE = LuaScript.load("expect.lua");
    private static final LuaScript DONE = LuaScript.load("expect_done.lua");
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Slots judged at most per call: a worker behind catches up over a few seconds. */
    static final int MAX_DUE = 200;

    private final UnifiedJedis jedis;
    private final RedisCalls calls;
    private final RedisKeys keys;

    RedisExpectations(UnifiedJedis jedis, RedisCalls calls, RedisKeys keys) {
        this.jedis = jedis;
        this.calls = calls;
        this.keys = keys;
    }

    /** Looks per pipeline: bounds one round trip's replies (a few verdicts each at most). */
    static final int LOOKS_PER_BATCH = 100;

    @Override
    public Judgement judge(String job, String spec, long withinMillis, long everyMillis, List<Instant> due, String workerId,
            Duration deliveryLease) {
        return judgement(calls.call("expect", call(new Look(job, spec, withinMillis, everyMillis, due), workerId, deliveryLease)));
    }

    /**
     * The looks in pipelines of {@value #LOOKS_PER_BATCH} (one round trip each; on a Cluster, one per
     * node they touch). A call whose shard failed while the others answered is that look's failure.
     * A round trip that failed after others answered fails its looks and the later ones, never the
     * earlier (whose calls ran, and whose verdicts this worker must take); the first failing throws.
     */
    @Override
    public List<Judged> judge(List<Look> looks, String workerId, Duration deliveryLease) {
        List<Judged> out = new ArrayList<>(looks.size());
        for (int from = 0; from < looks.size(); from += LOOKS_PER_BATCH) {
            List<Look> chunk = looks.subList(from, Math.min(looks.size(), from + LOOKS_PER_BATCH));
            List<Object> replies;
            try {
                replies = calls.batch("expect", chunk, l -> call(l, workerId, deliveryLease), RedisCalls.Replicas.NONE).replies();
            } catch (RuntimeException e) {
                if (from == 0) {
                    throw e; // nothing judged yet: the store could not be asked
                }
                // The chunks before it stand (their verdicts are this worker's); this one and the rest
                // are not asked (a Redis that just failed a round trip would fail each after its timeout).
                looks.subList(from, looks.size()).forEach(l -> out.add(new Judged(l, null, e)));
                break;
            }
            for (int i = 0; i < chunk.size(); i++) {
                try {
                    out.add(new Judged(chunk.get(i), judgement(calls.answered("expect", replies.get(i))), null));
                } catch (RuntimeException e) { // that shard failed, or a verdict there is unreadable: the others stand
                    out.add(new Judged(chunk.get(i), null, e));
                }
            }
        }
        return out;
    }

    private RedisCalls.Call call(Look l, String workerId, Duration deliveryLease) {
        List<String> args = new ArrayList<>(List.of(l.spec(), Long.toString(l.withinMillis()), Long.toString(l.everyMillis()), workerId,
                Long.toString(deliveryLease.toMillis()), l.job()));
        for (Instant slot : l.due().subList(0, Math.min(l.due().size(), MAX_DUE))) {
            args.add(Long.toString(slot.toEpochMilli()));
        }
        String job = l.job();
        return new RedisCalls.Call(JUDGE,
                List.of(keys.history(job), keys.decisions(job), keys.expectState(job), keys.expectFates(job), keys.expectOutbox(job)), args);
    }

    private Judgement judgement(Object reply) {
        List<?> list = (List<?>) reply;
        long judged = calls.asLong("expect", list.get(0));
        long now = calls.asLong("expect", list.get(1));
        List<Notice> notices = new ArrayList<>();
        for (int i = 2; i + 1 < list.size(); i += 2) {
            notices.add(notice(RedisCalls.asString(list.get(i)), "1".equals(RedisCalls.asString(list.get(i + 1)))));
        }
        return new Judgement(judged, now, notices);
    }

    private static Notice notice(String json, boolean logged) {
        try {
            JsonNode n = JSON.readTree(json);
            return new Notice(n.path("id").asText(), n.path("job").asText(), n.path("kind").asText(), n.path("expectation").asText(),
                    n.path("slot").asLong(), n.path("deadline").asLong(), n.path("happened").asText(), n.path("lastSuccess").asLong(),
                    n.path("decided").asLong(), logged);
        } catch (IOException e) {
            throw new IllegalStateException("unreadable verdict in the store: " + json, e);
        }
    }

    @Override
    public void logged(String job, String id) {
        done(job, id, "logged");
    }

    @Override
    public void delivered(String job, String id) {
        done(job, id, "delivered");
    }

    @Override
    public boolean sending(String job, String id, String workerId, Duration lease) {
        return calls.asLong("expect sending", calls.call("expect sending", new RedisCalls.Call(DONE,
                List.of(keys.expectState(job), keys.expectOutbox(job)), List.of(id, "sending", workerId, Long.toString(lease.toMillis()))))) == 1L;
    }

    private void done(String job, String id, String what) {
        calls.call("expect " + what, new RedisCalls.Call(DONE, List.of(keys.expectState(job), keys.expectOutbox(job)),
                List.of(id, what, "", "0")));
    }

    @Override
    public Map<String, State> states(List<String> jobs) {
        Map<String, State> states = new LinkedHashMap<>();
        try {
            for (String job : jobs) {
                List<String> f = jedis.hmget(keys.expectState(job), "spec", "wopen", "eopen", "ok_at");
                if (f.get(0) == null) {
                    continue;
                }
                states.put(job, new State(number(f.get(1)), number(f.get(2)), number(f.get(3))));
            }
        } catch (JedisException e) {
            throw calls.wrap("expectations", e);
        }
        return states;
    }

    private static long number(String s) {
        return s == null || s.isEmpty() ? 0 : Long.parseLong(s);
    }
}
