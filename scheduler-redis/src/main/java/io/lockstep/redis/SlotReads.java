package io.lockstep.redis;

import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.RunsInFlight;
import io.lockstep.scheduler.lock.SlotState;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.exceptions.JedisException;

/**
 * What one server's records say, for the scheduler's looks besides claiming: whether a slot is
 * decided or running ({@link #slotStates}, from the marks, and {@code states.lua} for what they
 * cannot tell), the runs in flight whose lease ran out ({@code runs.lua}) and each job's last
 * decided slot. {@link RedisLockProvider} delegates to it on one server, Sentinel or Cluster;
 * {@link RedlockStore} counts a master's {@link #slotRecords} and its runs in flight
 * ({@link RedlockRuns}) over the masters.
 *
 * <p>Apart from {@link ClaimScripts}, which decides who holds a slot and writes it: nothing here
 * writes or decides anything, and nothing waits for replicas (a read has nothing to lose in a
 * failover). A look is one pipeline of reads; two for the rare slot the marks cannot tell.
 * Thread-safe.
 */
final class SlotReads {

    private static final LuaScript RUNS = LuaScript.load("runs.lua");
    private static final LuaScript STATES = LuaScript.load("states.lua");
    /** At most this many expired runs per job per look; the rest come with the next one. */
    private static final int EXPIRED_PER_JOB = 16;

    private final RedisCalls calls;
    private final RedisKeys keys;
    private final String target;

    SlotReads(RedisCalls calls, RedisKeys keys, String target) {
        this.calls = calls;
        this.keys = keys;
        this.target = target;
    }

    /**
     * {@link io.lockstep.scheduler.lock.LockProvider#slotStates} on one server, from the marks: one
     * {@code HMGET} per group of jobs, however many slots (so that the workers that stepped aside
     * cost Redis one command per group per round, not two per slot each). Per slot: the job's
     * {@code decided} mark before the slot: no record ({@link SlotState#NONE}: claim it); the slot
     * {@code closed} (its run ended, or it was decided without one): {@link SlotState#DECIDED}; the
     * slot decided and the lease's {@code holder}: a run (or a claim made ahead) whose lease ends at
     * {@code until}; anything else (a later slot decided first, a manual run or a recovery took the
     * lease since: rare), what the slot's own record says ({@link #slotRecords}).
     */
    List<SlotState> slotStates(List<SlotState.Ref> refs) {
        if (refs.isEmpty()) {
            return List.of();
        }
        Map<String, List<Integer>> byKey = new java.util.LinkedHashMap<>();
        for (int i = 0; i < refs.size(); i++) {
            byKey.computeIfAbsent(keys.marks(refs.get(i).job()), k -> new ArrayList<>()).add(i);
        }
        SlotState[] states = new SlotState[refs.size()];
        List<Integer> later = new ArrayList<>();
        List<Map.Entry<String, List<Integer>>> entries = List.copyOf(byKey.entrySet());
        List<Response<List<String>>> responses = new ArrayList<>(entries.size());
        try (AbstractPipeline p = JedisLines.pipelined(calls.jedis)) {
            for (Map.Entry<String, List<Integer>> e : entries) {
                List<String> fields = new ArrayList<>(e.getValue().size() * 4);
                for (int i : e.getValue()) {
                    String f = RedisKeys.markField(refs.get(i).job());
                    fields.addAll(List.of(f + "decided", f + "holder", f + "until", f + "closed"));
                }
                responses.add(p.hmget(e.getKey(), fields.toArray(String[]::new)));
            }
            p.sync();
        } catch (JedisException e) {
            throw calls.wrap("states", e);
        }
        for (int k = 0; k < entries.size(); k++) {
            List<Integer> items = entries.get(k).getValue();
            // A master that did not answer (a Cluster node down) leaves its reply unset: no marks read, its slots are claimed.
            List<String> values = ScriptPipeline.answeredOr(responses.get(k), java.util.Collections.nCopies(4 * items.size(), null));
            for (int j = 0; j < items.size(); j++) {
                int i = items.get(j);
                String slot = Long.toString(refs.get(i).slot().toEpochMilli());
                long decided = values.get(4 * j) == null ? 0 : calls.asLong("states", values.get(4 * j));
                long at = refs.get(i).slot().toEpochMilli();
                if (decided < at) {
                    states[i] = SlotState.NONE;
                } else if (slot.equals(values.get(4 * j + 3))) {
                    states[i] = SlotState.DECIDED; // decided, and nothing of it in flight: closed, or decided without a run
                } else if (decided == at && slot.equals(values.get(4 * j + 1))) {
                    states[i] = new SlotState(SlotState.Kind.RUNNING, calls.asLong("states", values.get(4 * j + 2)));
                } else {
                    later.add(i); // a later slot was decided first, or a manual run or a recovery took the lease since
                }
            }
        }
        if (!later.isEmpty()) {
            List<SlotState> records = slotRecords(later.stream().map(refs::get).toList());
            for (int j = 0; j < later.size(); j++) {
                states[later.get(j)] = records.get(j);
            }
        }
        return List.of(states);
    }

    /**
     * What the records of these slots say ({@code states.lua}, many slots to a call): Redlock's
     * view of one master (the marks stay where a claim without a majority was given back, so
     * Redlock counts the records), and the rare slot the marks cannot tell.
     */
    List<SlotState> slotRecords(List<SlotState.Ref> refs) {
        if (refs.isEmpty()) {
            return List.of();
        }
        List<List<Integer>> groups = keys.groups(java.util.stream.IntStream.range(0, refs.size()).boxed().toList(),
                i -> refs.get(i).job());
        List<Object> replies = calls.batch("states", groups, group -> {
            List<String> callKeys = new ArrayList<>(group.size() * 2);
            List<String> args = new ArrayList<>(group.size());
            for (int i : group) {
                SlotState.Ref r = refs.get(i);
                long slot = r.slot().toEpochMilli();
                callKeys.addAll(List.of(keys.slot(r.job(), slot), keys.running(r.job())));
                args.add(Long.toString(slot));
            }
            return new RedisCalls.Call(STATES, callKeys, args);
        });
        SlotState[] states = new SlotState[refs.size()];
        for (int g = 0; g < groups.size(); g++) {
            List<Integer> group = groups.get(g);
            if (!(replies.get(g) instanceof List<?> list) || list.size() != 2 * group.size()) {
                throw new LockException(target, "states: unexpected reply " + replies.get(g), null);
            }
            for (int j = 0; j < group.size(); j++) {
                states[group.get(j)] = SlotState.of(RedisCalls.asString(list.get(2 * j)), calls.asLong("states", list.get(2 * j + 1)));
            }
        }
        return List.of(states);
    }

    /** {@link io.lockstep.scheduler.lock.LockProvider#runsInFlight} on this server ({@code runs.lua}, one round trip). */
    List<RunsInFlight> runsInFlight(List<String> jobs) {
        if (jobs.isEmpty()) {
            return List.of();
        }
        List<Object> replies = calls.batch("runs", jobs, job -> new RedisCalls.Call(RUNS, List.of(keys.running(job)),
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

    /** {@link io.lockstep.scheduler.lock.LockProvider#lastSlots} on this server: each job's 'decided' mark, one pipeline. */
    Map<String, Instant> lastSlots(List<String> jobs) {
        Map<String, Instant> last = new HashMap<>();
        if (jobs.isEmpty()) {
            return last;
        }
        List<Response<String>> responses = new ArrayList<>(jobs.size());
        try (AbstractPipeline p = JedisLines.pipelined(calls.jedis)) {
            for (String job : jobs) {
                responses.add(p.hget(keys.marks(job), RedisKeys.markField(job) + "decided"));
            }
            p.sync();
            for (int i = 0; i < jobs.size(); i++) {
                String value = ScriptPipeline.answered(responses.get(i));
                if (value != null) {
                    last.put(jobs.get(i), Instant.ofEpochMilli(calls.asLong("last", value)));
                }
            }
        } catch (JedisException e) {
            throw calls.wrap("last", e);
        }
        return last;
    }
}
