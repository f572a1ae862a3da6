package io.lockstep.redis;

import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.ClaimResult;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.LockException;
import java.util.ArrayList;
import java.util.List;

/**
 * The claim side of one server's store: {@code claim.lua} (many slots to a call) and
 * {@code recover.lua} batched into one round trip, their answers parsed; and, for Redlock, the
 * fence raise and the give-back of a claim that reached no majority (with the prune of what a
 * give-back missed, {@link RedlockRuns}); on one server also the replicas' acknowledgement
 * ({@link #claim}: an unacknowledged win is disowned). {@link RedisLockProvider} delegates to it;
 * {@link RedlockStore} counts these answers over its masters. What happens to a claim once won
 * (start, renewals, the outcome) is {@link LeaseScripts}'; the looks at slots and runs that write
 * nothing (slot states, runs in flight, last slots) are {@link SlotReads}'. Thread-safe.
 */
final class ClaimScripts {

    /**
     * Reasons the claim script gives a record itself, each with a meaning of its own (a repeat of an
     * {@code order} miss is answered {@code superseded}): a worker's miss code that is one of them is
     * kept as {@code reported}, never as the store's reason (a worker's {@code order} means an older
     * slot had not started, the store's a later one had).
     */
    static final java.util.Set<String> STORE_REASONS = java.util.Set.of("order", "late", "disowned", "not_started", "paused", "overlap",
            "reported", "no_quorum", "lease_lost", "handed_over");

    private static final LuaScript CLAIM = LuaScript.load("claim.lua");
    private static final LuaScript RECOVER = LuaScript.load("recover.lua");
    private static final LuaScript UNCLAIM = LuaScript.load("unclaim.lua");

    private final RedisCalls calls;
    private final RedisKeys keys;
    private final RedisCalls.Replicas replicas;
    private final String target;
    /** How many entries each job's history keeps: decisions without a run are recorded there too. */
    private final String historyKeep;

    /** How close to its slot a claim made ahead is the run's start (claim.lua's ARGV 15); 0 on a Redlock master: staged. */
    private volatile long startWindowMillis = ClaimRequest.START_WINDOW.toMillis();

    /** Every claim made ahead is staged from now on (a Redlock master: its masters could disagree). */
    void stageEveryClaimAhead() {
        startWindowMillis = 0;
    }

    java.time.Duration startWindow() {
        return java.time.Duration.ofMillis(startWindowMillis);
    }

    ClaimScripts(RedisCalls calls, RedisKeys keys, RedisCalls.Replicas replicas, String target, int historyKeep) {
        this.historyKeep = Integer.toString(historyKeep);
        this.calls = calls;
        this.keys = keys;
        this.replicas = replicas;
        this.target = target;
    }

    /**
     * This server's answers to a batch of claims, and for each {@code taken} the token whose record
     * holds the slot (Redlock counts a {@code taken} by it); {@code confirmed}: per request, whether
     * the replicas required acknowledged its call.
     */
    record Decided(ClaimResult[] results, String[] holders, boolean[] confirmed) {}

    /**
     * {@link io.lockstep.scheduler.lock.LockProvider#claim} on this server: {@link #decide}, then
     * the replicas' acknowledgement. Fewer replicas than {@code waitReplicas} acknowledged some
     * calls (each judged on its own shard): a failover now could lose those claims and let another
     * worker run the slots. Each claim won in such a call is disowned (the same token asks to
     * record the slot as missed) and answered {@link ClaimResult.Status#UNCONFIRMED}: it never
     * runs. If the disown fails too, the claim's lease runs out and recovery applies. Claims on
     * healthy shards are not touched. (Redlock's masters never wait for replicas: {@link RedlockStore}
     * calls {@link #decide} itself.)
     */
    List<ClaimResult> claim(List<ClaimRequest> requests) {
        if (requests.isEmpty()) {
            return List.of();
        }
        Decided decided = decide(requests);
        ClaimResult[] results = decided.results();
        unconfirmed(requests, results, decided.confirmed());
        return List.of(results);
    }

    private void unconfirmed(List<ClaimRequest> requests, ClaimResult[] results, boolean[] confirmed) {
        List<ClaimRequest> disown = new ArrayList<>();
        for (int i = 0; i < results.length; i++) {
            ClaimResult r = results[i];
            if (r.status() == ClaimResult.Status.CLAIMED && !confirmed[i]) {
                ClaimRequest q = requests.get(i);
                disown.add(new ClaimRequest(q.lease(), q.workerId(), q.misfireGrace(), ClaimRequest.Mode.MISS_ONLY, false, q.manual()));
                results[i] = new ClaimResult(ClaimResult.Status.UNCONFIRMED, r.fencingToken(), r.serverTimeMillis(),
                        r.runningUntilMillis());
            }
        }
        if (!disown.isEmpty()) {
            try {
                // Without waiting for replicas: a master that cannot reach them would make the disown
                // wait waitTimeout again, and every other shard's answers with it. If a failover loses
                // the disown, it loses the claim with it, and this worker never runs the slot either way.
                decide(disown, RedisCalls.Replicas.NONE);
            } catch (LockException e) {
                // The claims never start either way; their leases run out and the job's recover policy applies.
            }
        }
    }

    Decided decide(List<ClaimRequest> requests) {
        return decide(requests, replicas);
    }

    private Decided decide(List<ClaimRequest> requests, RedisCalls.Replicas replicas) {
        // Claims go many to a script call (see claim.lua); recoveries, rare, one each.
        List<List<Integer>> groups = new ArrayList<>();
        List<Integer> claims = new ArrayList<>();
        for (int i = 0; i < requests.size(); i++) {
            switch (requests.get(i).mode()) {
                case RECOVER, ABANDON -> groups.add(List.of(i));
                default -> claims.add(i);
            }
        }
        groups.addAll(keys.groups(claims, i -> requests.get(i).lease().job()));
        RedisCalls.Replies answered = calls.batch("claim", groups, group -> {
            ClaimRequest first = requests.get(group.get(0));
            if (first.mode() == ClaimRequest.Mode.RECOVER || first.mode() == ClaimRequest.Mode.ABANDON) {
                Lease lease = first.lease();
                long slot = lease.slot().toEpochMilli();
                String job = lease.job();
                return new RedisCalls.Call(RECOVER,
                        List.of(keys.slot(job, slot), keys.lease(lease), keys.running(job), keys.marks(job), keys.decisions(job)),
                        List.of(lease.token(), Long.toString(slot), Long.toString(lease.ttl().toMillis()),
                        Long.toString(first.recordTtl().toMillis()), first.workerId(),
                        first.mode() == ClaimRequest.Mode.RECOVER ? "rerun" : "abandon",
                        Long.toString(ClaimRequest.LAST_SLOT_TTL.toMillis()), Long.toString(first.misfireGrace().toMillis()),
                        historyKeep, RedisKeys.markField(job)));
            }
            List<String> callKeys = new ArrayList<>(group.size() * 6);
            List<String> args = new ArrayList<>(group.size() * 15);
            for (int i : group) {
                ClaimRequest request = requests.get(i);
                Lease lease = request.lease();
                long slot = lease.slot().toEpochMilli();
                String job = lease.job();
                callKeys.addAll(List.of(keys.slot(job, slot), keys.lease(lease), keys.running(job), keys.marks(job),
                        keys.paused(job), keys.decisions(job)));
                args.addAll(List.of(lease.token(), Long.toString(slot), Long.toString(request.misfireGrace().toMillis()),
                        Long.toString(lease.ttl().toMillis()), Long.toString(request.recordTtl().toMillis()), request.workerId(),
                        switch (request.mode()) {
                            case MISS_ONLY -> request.missCode() == null || STORE_REASONS.contains(request.missCode()) ? "miss"
                                    : "miss:" + request.missCode();
                            case SKIP_ONLY -> "skip:" + request.missCode();
                            case CATCH_UP -> "catchup";
                            default -> "claim";
                        },
                        request.replace() ? "1" : "0", Long.toString(ClaimRequest.LAST_SLOT_TTL.toMillis()),
                        request.manual() ? "1" : request.backfill() != null ? "b:" + request.backfill() : "0",
                        Long.toString(request.ahead().toMillis()),
                        // The staged lease also covers the replicas' wait: the reply (and so the start)
                        // can come that much later.
                        Long.toString(ClaimRequest.STAGED_MARGIN.plus(replicas.count() > 0 ? replicas.timeout()
                                : java.time.Duration.ZERO).toMillis()), historyKeep, RedisKeys.markField(job),
                        Long.toString(startWindowMillis)));
            }
            return new RedisCalls.Call(CLAIM, callKeys, args);
        }, replicas);
        List<Object> replies = answered.replies();
        ClaimResult[] results = new ClaimResult[requests.size()];
        String[] holders = new String[requests.size()];
        boolean[] confirmed = new boolean[requests.size()];
        for (int g = 0; g < groups.size(); g++) {
            List<Integer> group = groups.get(g);
            for (int i : group) {
                confirmed[i] = answered.confirmed(g, replicas);
            }
            if (replies.get(g) instanceof ScriptPipeline.CallFailed) {
                // Its master alone failed: nothing is known of these requests (asked again, same tokens).
                for (int i : group) {
                    results[i] = new ClaimResult(ClaimResult.Status.UNANSWERED, 0, 0, 0);
                    holders[i] = "";
                }
                continue;
            }
            ClaimRequest first = requests.get(group.get(0));
            if (first.mode() == ClaimRequest.Mode.RECOVER || first.mode() == ClaimRequest.Mode.ABANDON) {
                results[group.get(0)] = calls.claimResult(replies.get(g));
                holders[group.get(0)] = "";
                continue;
            }
            if (!(replies.get(g) instanceof List<?> list) || list.size() != group.size()) {
                throw new LockException(target, "claim: unexpected reply " + replies.get(g), null);
            }
            for (int j = 0; j < group.size(); j++) {
                results[group.get(j)] = calls.claimResult(list.get(j));
                holders[group.get(j)] = RedisCalls.holder(list.get(j));
            }
        }
        // Every reply of the pipeline arrives after its last call ran: the latest time the server read
        // in the batch bounds its clock at their arrival, the tightest bound each claim's run can start by
        // (a claim's own call time, up to the batch's length earlier, would start its run that much late).
        long[] times = new long[groups.size()];
        for (int g = 0; g < groups.size(); g++) {
            ClaimResult first = results[groups.get(g).get(0)];
            times[g] = first.status() == ClaimResult.Status.UNANSWERED ? 0 : first.serverTimeMillis();
        }
        long[] latest = calls.latestOfBatch(times);
        for (int g = 0; g < groups.size(); g++) {
            for (int i : groups.get(g)) {
                ClaimResult r = results[i];
                if (latest[g] > r.serverTimeMillis()) {
                    results[i] = new ClaimResult(r.status(), r.fencingToken(), latest[g], r.runningUntilMillis(), r.why(), r.started());
                }
            }
        }
        return new Decided(results, holders, confirmed);
    }

    /**
     * Redlock: raises each claimed lease's fence counter (and its slot record's token) to the token
     * a quorum agreed on ({@code fence_raise.lua}). One round trip.
     */
    void raiseFences(List<Lease> leases, List<Long> agreed) {
        calls.batch("fence", java.util.stream.IntStream.range(0, leases.size()).boxed().toList(), i -> {
            Lease l = leases.get(i);
            return new RedisCalls.Call(RedlockLocks.FENCE_RAISE, List.of(keys.marks(l.job()), keys.slot(l.job(), l.slot().toEpochMilli())),
                    List.of(l.token(), Long.toString(agreed.get(i)), Long.toString(ClaimRequest.LAST_SLOT_TTL.toMillis()),
                            RedisKeys.markField(l.job()) + "fence"));
        });
    }

    /**
     * A request to give back ({@code unclaim.lua}): its lease, and what goes: {@code all} records of
     * the claim, or only a {@code running} one (a majority decided the slot otherwise); for a
     * recovery, {@code recovery} (the dead run as it was, to be recovered again),
     * {@code recovery-taken} (its record as it was, but out of the running index: another recoverer
     * won) or {@code recovery:<state>} (except a record of ours in that state: a majority decided it).
     */
    record GiveBack(Lease lease, String mode) {

        GiveBack(Lease lease, boolean all) {
            this(lease, all ? "all" : "running");
        }
    }

    /**
     * Redlock: gives back what claims that reached no quorum wrote here ({@code unclaim.lua}): their
     * records, leases and running entries. One round trip.
     */
    void unclaim(List<GiveBack> claims) {
        calls.batch("unclaim", claims, g -> {
            Lease l = g.lease();
            return new RedisCalls.Call(UNCLAIM, List.of(keys.slot(l.job(), l.slot().toEpochMilli()), keys.lease(l), keys.running(l.job()),
                    keys.marks(l.job())),
                    List.of(l.token(), Long.toString(l.slot().toEpochMilli()), g.mode(), RedisKeys.markField(l.job())));
        });
    }

    private static final LuaScript PRUNE = LuaScript.load("prune.lua");
    private static final LuaScript ENTRIES = LuaScript.load("entries.lua");

    /** Redlock: per slot of {@code job}, whether this master has it in the running index at all ({@code entries.lua}). */
    List<Boolean> hasEntries(String job, List<java.time.Instant> slots) {
        List<?> reply = (List<?>) calls.call("entries", new RedisCalls.Call(ENTRIES, List.of(keys.running(job)),
                slots.stream().map(s -> Long.toString(s.toEpochMilli())).toList()));
        return reply.stream().map(o -> calls.asLong("entries", o) == 1).toList();
    }

    /** Redlock: drops this master's stale entries of {@code job} that no majority reports expired ({@code prune.lua}). */
    void prune(String job, List<java.time.Instant> slots, java.time.Duration age) {
        List<String> callKeys = new ArrayList<>(1 + slots.size() * 3);
        List<String> args = new ArrayList<>(slots.size() + 1);
        callKeys.add(keys.running(job));
        for (java.time.Instant slot : slots) {
            callKeys.addAll(List.of(keys.slot(job, slot.toEpochMilli()), keys.lease(new Lease(job, slot, "-", age, true)),
                    keys.lease(new Lease(job, slot, "-", age, false))));
            args.add(Long.toString(slot.toEpochMilli()));
        }
        args.add(RedisKeys.markField(job));
        args.add(Long.toString(age.toMillis()));
        calls.call("prune", new RedisCalls.Call(PRUNE, callKeys, args));
    }

}
