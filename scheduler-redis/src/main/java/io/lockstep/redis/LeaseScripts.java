package io.lockstep.redis;

import io.lockstep.scheduler.lock.Completion;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.PartiallyConfirmed;
import io.lockstep.scheduler.lock.StartAnswer;
import io.lockstep.scheduler.lock.StartReply;
import io.lockstep.scheduler.lock.StartRequest;
import java.util.ArrayList;
import java.util.List;

/**
 * The lease side of one server's store, the counterpart of {@link ClaimScripts}: what happens to a
 * claim once won. {@code start.lua} turns a staged claim into a running one, {@code renew.lua}
 * extends a run's lease, {@code complete.lua} writes its outcome (or hands it over); each many
 * runs to a call, batched into one round trip, their answers parsed. A call whose master failed
 * while others answered ({@link ScriptPipeline.CallFailed}) costs only its own runs: starts are
 * answered {@link StartAnswer#UNANSWERED}, renewals and outcomes null inside a
 * {@link PartiallyConfirmed}. The replicas' acknowledgement ({@code waitReplicas}) is judged per
 * call here too. {@link RedisLockProvider} delegates to it on one server (or Sentinel, or
 * Cluster); {@link RedlockStore} counts these answers, through each master's provider, over its
 * masters. Thread-safe.
 */
final class LeaseScripts {

    private static final LuaScript START = LuaScript.load("start.lua");
    private static final LuaScript RENEW = LuaScript.load("renew.lua");
    private static final LuaScript COMPLETE = LuaScript.load("complete.lua");
    /** The longest error text kept in the run history. */
    private static final int MAX_ERROR = 500;

    private final RedisCalls calls;
    private final RedisKeys keys;
    /** How many replicas must acknowledge starts, renewals and outcomes ({@code waitReplicas}). */
    private final RedisCalls.Replicas replicas;
    private final String target;
    /** How many runs each job's history keeps ({@code history.keep}). */
    private final int historyKeep;

    LeaseScripts(RedisCalls calls, RedisKeys keys, RedisCalls.Replicas replicas, String target, int historyKeep) {
        this.calls = calls;
        this.keys = keys;
        this.replicas = replicas;
        this.target = target;
        this.historyKeep = historyKeep;
    }

    /**
     * This server's answers to a batch of starts ({@code start.lua}, many runs to a call), and how
     * many replicas have them.
     */
    record Started(List<StartReply> answers) {}

    Started start(List<StartRequest> requests) {
        return start(requests, false);
    }

    /**
     * Redlock's split ({@link RedlockStore#start}): records each of {@code requests} missed
     * ({@code no_quorum}) where this token still holds its claim, staged or started
     * ({@code start.lua}'s split mode); answered {@link StartAnswer#SPLIT} where it is (now) so,
     * {@link StartAnswer#LOST} where nothing here was the token's (or the slot was decided here
     * already: late, paused).
     */
    Started recordSplit(List<StartRequest> requests) {
        return start(requests, true);
    }

    private Started start(List<StartRequest> requests, boolean split) {
        if (requests.isEmpty()) {
            return new Started(List.of());
        }
        List<List<Integer>> groups = keys.groups(java.util.stream.IntStream.range(0, requests.size()).boxed().toList(),
                i -> requests.get(i).lease().job());
        RedisCalls.Replies answered = calls.batch("start", groups, group -> {
            List<String> callKeys = new ArrayList<>(group.size() * 6);
            List<String> args = new ArrayList<>(group.size() * 6);
            for (int i : group) {
                StartRequest r = requests.get(i);
                Lease l = r.lease();
                long slot = l.slot().toEpochMilli();
                callKeys.addAll(List.of(keys.slot(l.job(), slot), keys.lease(l), keys.running(l.job()), keys.paused(l.job()),
                        keys.decisions(l.job()), keys.marks(l.job())));
                args.addAll(List.of(l.token(), Long.toString(slot), Long.toString(l.ttl().toMillis()),
                        Long.toString(r.misfireGrace().toMillis()), Integer.toString(historyKeep), RedisKeys.markField(l.job())));
            }
            if (split) {
                args.add("no_quorum");
            }
            return new RedisCalls.Call(START, callKeys, args);
        }, replicas);
        List<Object> replies = answered.replies();
        StartAnswer[] answers = new StartAnswer[requests.size()];
        long[] times = new long[groups.size()];
        for (int g = 0; g < groups.size(); g++) {
            if (replies.get(g) instanceof ScriptPipeline.CallFailed) {
                for (int i : groups.get(g)) {
                    answers[i] = StartAnswer.UNANSWERED; // its master alone failed: asked again while the short lease lasts
                }
                continue;
            }
            if (!(replies.get(g) instanceof List<?> list) || list.size() != groups.get(g).size() + 1) {
                throw new LockException(target, "start: unexpected reply " + replies.get(g), null);
            }
            times[g] = calls.asLong("start", list.get(list.size() - 1)); // the server's clock, read last (µs)
            for (int j = 0; j < list.size() - 1; j++) {
                String status = RedisCalls.asString(list.get(j));
                try {
                    StartAnswer a = "missed".equals(status) ? StartAnswer.SPLIT : StartAnswer.valueOf(status.toUpperCase(java.util.Locale.ROOT));
                    // A start fewer replicas than waitReplicas acknowledged could be lost in a
                    // failover (a peer would then run the slot again): it must not start.
                    answers[groups.get(g).get(j)] = a == StartAnswer.STARTED && !answered.confirmed(g, replicas) ? StartAnswer.UNCONFIRMED : a;
                } catch (IllegalArgumentException e) {
                    throw new LockException(target, "start: unexpected status " + status, null);
                }
            }
        }
        long[] latest = calls.latestOfBatch(times);
        List<StartReply> out = new ArrayList<>(requests.size());
        long[] timeOf = new long[requests.size()];
        for (int g = 0; g < groups.size(); g++) {
            for (int i : groups.get(g)) {
                timeOf[i] = latest[g];
            }
        }
        for (int i = 0; i < requests.size(); i++) {
            out.add(new StartReply(answers[i], answers[i] == StartAnswer.UNANSWERED ? 0 : timeOf[i]));
        }
        return new Started(out);
    }

    /**
     * {@link io.lockstep.scheduler.lock.LockProvider#renew} on this server ({@code renew.lua}, one
     * call per lease). With {@code waitReplicas}, one {@code WAIT} per master follows the batch, in
     * the same round trip (m5 of the 2026-12-04 review): a renewal fewer replicas acknowledged could
     * be lost in a failover (the promoted replica would hold the lease only until the previous
     * renewal's end, and a peer could rerun the slot meanwhile), so it does not count: answered null,
     * sent again soon, the lease's deadline unchanged (the watchdog counts validity from the last
     * confirmed renewal, and declares the lease lost when none comes in time). A refusal (0) counts
     * as it is: it wrote nothing.
     *
     * @throws PartiallyConfirmed when a master failed while others answered, or fewer replicas than
     *     {@code waitReplicas} acknowledged: those leases are null
     */
    List<Boolean> renew(List<Lease> leases) {
        if (leases.isEmpty()) {
            return List.of();
        }
        RedisCalls.Replies answered = calls.batch("renew", leases, lease -> {
            long slot = lease.slot().toEpochMilli();
            return new RedisCalls.Call(RENEW, List.of(keys.lease(lease), keys.slot(lease.job(), slot), keys.running(lease.job())),
                    List.of(lease.token(), Long.toString(lease.ttl().toMillis()), Long.toString(slot), RedisKeys.leaseField(lease)));
        }, replicas);
        List<Object> replies = answered.replies();
        List<Boolean> owned = new ArrayList<>(replies.size());
        boolean failed = false;
        boolean unconfirmed = false;
        for (int i = 0; i < replies.size(); i++) {
            Object reply = replies.get(i);
            if (reply instanceof ScriptPipeline.CallFailed) {
                owned.add(null); // its master failed: sent again soon, the lease's deadline unchanged
                failed = true;
            } else if (calls.asLong("renew", reply) != 1L) {
                owned.add(false);
            } else if (!answered.confirmed(i, replicas)) {
                owned.add(null);
                unconfirmed = true;
            } else {
                owned.add(true);
            }
        }
        if (failed || unconfirmed) {
            throw new PartiallyConfirmed(target, target + ": renew: " + (failed ? "a master did not answer" : "")
                    + (failed && unconfirmed ? ", and " : "") + (unconfirmed ? "fewer than " + replicas.count()
                    + " replica(s) acknowledged some renewals within " + replicas.timeout().toMillis() + " ms (redis.waitReplicas: "
                    + replicas.count() + "; are that many replicas connected and in sync?)" : ""), owned);
        }
        return owned;
    }

    /**
     * {@link io.lockstep.scheduler.lock.LockProvider#complete} on this server ({@code complete.lua},
     * many outcomes to a call; the error text cut to 500 characters, the history capped at
     * {@code historyKeep}).
     *
     * @throws PartiallyConfirmed when a master failed, or fewer replicas than {@code waitReplicas}
     *     acknowledged some calls: those outcomes are null (written again; retry-safe)
     */
    List<Boolean> complete(List<Completion> completions) {
        if (completions.isEmpty()) {
            return List.of();
        }
        List<List<Integer>> groups = keys.groups(java.util.stream.IntStream.range(0, completions.size()).boxed().toList(),
                i -> completions.get(i).lease().job());
        RedisCalls.Replies answered = calls.batch("complete", groups, group -> {
            List<String> callKeys = new ArrayList<>(group.size() * 5);
            List<String> args = new ArrayList<>(group.size() * 10);
            for (int i : group) {
                Completion c = completions.get(i);
                Lease l = c.lease();
                long slot = l.slot().toEpochMilli();
                callKeys.addAll(List.of(keys.slot(l.job(), slot), keys.lease(l), keys.running(l.job()), keys.history(l.job()),
                        keys.marks(l.job())));
                String error = c.error().length() > MAX_ERROR ? c.error().substring(0, MAX_ERROR) + "..." : c.error();
                args.addAll(List.of(l.token(), c.outcome().label(), Long.toString(slot), Integer.toString(c.attempt()),
                        Long.toString(c.durationMs()), error, Integer.toString(historyKeep), c.handOverMode(), Long.toString(c.fencingToken()),
                        RedisKeys.markField(l.job())));
            }
            return new RedisCalls.Call(COMPLETE, callKeys, args);
        }, replicas);
        List<Object> replies = answered.replies();
        Boolean[] owned = new Boolean[completions.size()];
        boolean allConfirmed = true;
        for (int g = 0; g < groups.size(); g++) {
            if (replies.get(g) instanceof ScriptPipeline.CallFailed) {
                allConfirmed = false; // its master failed: written again (retry-safe)
                continue;
            }
            if (!(replies.get(g) instanceof List<?> list) || list.size() != groups.get(g).size()) {
                throw new LockException(target, "complete: unexpected reply " + replies.get(g), null);
            }
            boolean confirmed = answered.confirmed(g, replicas);
            allConfirmed &= confirmed;
            for (int j = 0; j < list.size(); j++) {
                // Written, but unconfirmed: a failover now could lose it; the caller writes it again (retry-safe).
                owned[groups.get(g).get(j)] = confirmed ? calls.asLong("complete", list.get(j)) == 1L : null;
            }
        }
        if (!allConfirmed) {
            throw new PartiallyConfirmed(target, target + ": complete: a master did not answer, or fewer than "
                    + replicas.count() + " replica(s) acknowledged some outcomes within " + replicas.timeout().toMillis()
                    + " ms (redis.waitReplicas: " + replicas.count() + "; are that many replicas connected and in sync?)",
                    java.util.Arrays.asList(owned));
        }
        return List.of(owned);
    }

    private static final LuaScript LATE = LuaScript.load("late.lua");

    /** {@link io.lockstep.scheduler.lock.LockProvider#recordLate} on this server ({@code late.lua}). */
    List<Boolean> recordLate(String workerId, List<Completion> completions) {
        if (completions.isEmpty()) {
            return List.of();
        }
        List<List<Integer>> groups = keys.groups(java.util.stream.IntStream.range(0, completions.size()).boxed().toList(),
                i -> completions.get(i).lease().job());
        List<Object> replies = calls.batch("late", groups, group -> {
            List<String> callKeys = new ArrayList<>(group.size() * 2);
            List<String> args = new ArrayList<>(group.size() * 8 + 1);
            for (int i : group) {
                Completion c = completions.get(i);
                Lease l = c.lease();
                callKeys.addAll(List.of(keys.slot(l.job(), l.slot().toEpochMilli()), keys.history(l.job())));
                String error = c.error().length() > MAX_ERROR ? c.error().substring(0, MAX_ERROR) + "..." : c.error();
                args.addAll(List.of(l.token(), c.outcome().label(), Long.toString(l.slot().toEpochMilli()), Integer.toString(c.attempt()),
                        Long.toString(c.durationMs()), error, Integer.toString(historyKeep), Long.toString(c.fencingToken())));
            }
            args.add(workerId);
            return new RedisCalls.Call(LATE, callKeys, args);
        });
        Boolean[] recorded = new Boolean[completions.size()];
        for (int g = 0; g < groups.size(); g++) {
            if (!(replies.get(g) instanceof List<?> list) || list.size() != groups.get(g).size()) {
                throw new LockException(target, "late: unexpected reply " + replies.get(g), null);
            }
            for (int j = 0; j < list.size(); j++) {
                recorded[groups.get(g).get(j)] = calls.asLong("late", list.get(j)) == 1L;
            }
        }
        return List.of(recorded);
    }
}
