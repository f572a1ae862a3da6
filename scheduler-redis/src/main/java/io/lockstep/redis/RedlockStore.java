package io.lockstep.redis;

import io.lockstep.scheduler.config.RedisSettings;
import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.ClaimResult;
import io.lockstep.scheduler.lock.Completion;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.RunsInFlight;
import io.lockstep.scheduler.lock.SlotState;
import io.lockstep.scheduler.lock.StartAnswer;
import io.lockstep.scheduler.lock.StartRequest;
import io.lockstep.scheduler.lock.Watchdog;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

/**
 * The scheduler's store over N independent masters (Redlock, {@code redis.redlock}). Every claim,
 * renewal, completion and recovery runs the same scripts as on one server, on every master at
 * once (each answer awaited at most {@code nodeTimeout}); a decision counts only when a majority
 * (N/2 + 1) of the masters agree, so any two decisions share a master.
 *
 * <ul>
 *   <li><b>Claims.</b> A slot is ours when a majority answered {@code claimed} within the lease's
 *       validity. Its fencing token is the highest the majority answered, and before the run
 *       starts the job's fence counters (and the slot records) are raised to it on a majority
 *       ({@code fence_raise.lua}; see {@link RedlockLocks} for why). Any other majority answer
 *       (missed, skipped, paused, ...) is the decision; {@code taken} counts only when a majority
 *       name the same other token. Without a majority, what the claim wrote is given back on every
 *       master ({@code unclaim.lua}) and the answer is {@link ClaimResult.Status#NO_QUORUM}: the
 *       scheduler asks again after a random delay within the slot's grace, and past it records the
 *       slot as missed, so a slot is never dropped silently.</li>
 *   <li><b>Renewals and completions</b> count with a majority of {@code 1}s; fewer answering
 *       masters than a majority is an outage ({@link LockException}: the scheduler retries).</li>
 *   <li><b>Restart quarantine.</b> A master whose uptime is shorter than the longest record ttl
 *       may have restarted without records it held: it is written to, but its answers do not
 *       count. The quarantine grows to the longest record ttl of any claim made.</li>
 * </ul>
 *
 * Membership, triggers and config go to every master; reads merge what the masters answer
 * ({@link RedlockMembers}, reached through {@link #members()}). Thread-safe.
 */
final class RedlockStore {

    private final Quorum<RedisLockProvider> nodes;
    private final Duration nodeWait;
    /** The restart quarantine now, ms; -1: off. */
    private final AtomicLong quarantineMillis;
    /** Whether the quarantine grows with the record ttls of the claims made (not set in the config). */
    private final boolean auto;
    /** Heartbeats, configs and leaving, on every master. */
    private final RedlockMembers members;

    /**
     * @param quarantineMillis shared with the masters' calls (each reads it per batch); -1 turns the
     *     quarantine off
     * @param auto whether it grows with the longest record ttl of the claims made
     */
    RedlockStore(List<RedisLockProvider> masters, List<String> names, Duration nodeWait, AtomicLong quarantineMillis, boolean auto) {
        masters.forEach(RedisLockProvider::stageEveryClaimAhead); // masters could disagree on started: start calls settle it
        this.nodes = new Quorum<>(masters, names, Quorum.SCHEDULER_IN_FLIGHT, RedisLockProvider::serverTimeMillis);
        this.nodeWait = nodeWait;
        this.quarantineMillis = quarantineMillis;
        this.auto = auto;
        this.members = new RedlockMembers(nodes, nodeWait);
    }

    /**
     * The store over {@code r}'s masters: one provider per master, each on a client of its own
     * (with {@code settings}' credentials, TLS and timeout).
     */
    static RedlockStore create(RedisSettings settings, RedisSettings.Redlock r, int historyKeep) {
        // Off (-1) when set to zero; the given value when set; otherwise (auto) it starts at 0 and
        // grows with the record ttl of every claim made.
        AtomicLong quarantine = new AtomicLong(r.quarantine().map(q -> q.isZero() ? -1L : q.toMillis()).orElse(0L));
        String scheme = settings.tls().enabled() ? "rediss://" : "redis://";
        List<RedisLockProvider> masters = new ArrayList<>();
        try {
            for (String node : r.nodes()) {
                RedisClients.Built built = RedisClients.create(settings.with(new RedisSettings.Standalone(scheme + node)));
                masters.add(new RedisLockProvider(built.client(), true, settings.keyPrefix(), built.description(), RedisCalls.Replicas.NONE,
                        historyKeep, () -> Math.max(0, quarantine.get()), r.durable().contains(node)));
            }
        } catch (RuntimeException e) {
            masters.forEach(RedisLockProvider::close);
            throw e;
        }
        return new RedlockStore(masters, r.nodes(), r.nodeTimeout(), quarantine, r.quarantine().isEmpty());
    }

    List<RedisLockProvider> masters() {
        return nodes.nodes();
    }

    /** How long each master's answer is awaited. */
    Duration nodeWait() {
        return nodeWait;
    }

    Quorum<RedisLockProvider> quorum() {
        return nodes;
    }

    /** Membership over the masters: heartbeats, published configs, leaving, the live workers. */
    RedlockMembers members() {
        return members;
    }

    String describe() {
        return "redlock over " + String.join(",", nodes.names());
    }

    private <T> List<Quorum.Vote<T>> everywhere(String operation, Function<RedisLockProvider, T> action) {
        return everywhere(operation, action, null);
    }

    /**
     * {@code action} on every master, returning once {@code settled} holds for the answers in (a
     * majority decided: a stalled minority is not waited for, see {@link Quorum#ask(Function,
     * Duration, java.util.function.Predicate)}), or all answered, or the wait is over.
     */
    private <T> List<Quorum.Vote<T>> everywhere(String operation, Function<RedisLockProvider, T> action,
            java.util.function.Predicate<List<Quorum.Vote<T>>> settled) {
        return everywhereTracked(operation, action, settled).votes();
    }

    /** {@link #everywhere(String, Function, java.util.function.Predicate)} with its calls, for an undo that must follow them. */
    private <T> Quorum.Asked<T> everywhereTracked(String operation, Function<RedisLockProvider, T> action,
            java.util.function.Predicate<List<Quorum.Vote<T>>> settled) {
        Quorum.Asked<T> asked = nodes.askTracked(action, nodeWait, settled);
        if (Quorum.counting(asked.votes()) < nodes.quorum()) {
            throw nodes.tooFew(operation, asked.votes(), Quorum.describe(asked.votes(), a -> "answered"));
        }
        return asked;
    }

    // ---------------------------------------------------------------- claims

    List<ClaimResult> claim(List<ClaimRequest> requests) {
        if (requests.isEmpty()) {
            return List.of();
        }
        if (auto) {
            // Never shorter than the records this process writes: a master that lost them sits out as long.
            long longest = requests.stream().mapToLong(r -> r.recordTtl().toMillis()).max().orElse(0);
            quarantineMillis.accumulateAndGet(longest, Math::max);
        }
        long sent = System.nanoTime();
        // Decided once a majority claimed every request: a stalled minority is not waited for. Any other
        // outcome waits for every master asked, so that what is given back comes after what they took.
        Quorum.Asked<ClaimScripts.Decided> asked = everywhereTracked("claim", p -> p.claims().decide(requests), in -> {
            if (Quorum.counting(in) < nodes.quorum()) {
                return false;
            }
            for (int i = 0; i < requests.size(); i++) {
                if (combine(requests.get(i), in, i).result().status() != ClaimResult.Status.CLAIMED) {
                    return false;
                }
            }
            return true;
        });
        List<Quorum.Vote<ClaimScripts.Decided>> votes = asked.votes();
        ClaimResult[] results = new ClaimResult[requests.size()];
        List<Lease> won = new ArrayList<>();
        List<Long> tokens = new ArrayList<>();
        List<Integer> wonAt = new ArrayList<>();
        List<ClaimScripts.GiveBack> giveBack = new ArrayList<>();
        for (int i = 0; i < requests.size(); i++) {
            ClaimRequest request = requests.get(i);
            Combined c = combine(request, votes, i);
            results[i] = c.result();
            boolean ordinary = request.mode() != ClaimRequest.Mode.RECOVER && request.mode() != ClaimRequest.Mode.ABANDON;
            if (c.result().status() == ClaimResult.Status.CLAIMED) {
                won.add(request.lease());
                tokens.add(c.result().fencingToken());
                wonAt.add(i);
            } else if (c.giveBack() != null) {
                giveBack.add(ordinary ? c.giveBack().apply(request.lease()) : new ClaimScripts.GiveBack(request.lease(),
                        switch (c.result().status()) {
                            case MISSED -> "recovery:missed"; // a majority decided the recovery: that stays
                            case ABANDONED -> "recovery:abandoned";
                            case TAKEN -> "recovery-taken"; // another recoverer won: no dead run left to find here
                            default -> "recovery"; // split: the dead run as it was, to be recovered again
                        }));
            }
        }
        if (!won.isEmpty()) {
            List<Quorum.Vote<Boolean>> raised = nodes.ask(p -> {
                p.claims().raiseFences(won, tokens);
                return true;
            }, nodeWait); // every master asked: a run's outcome must not reach one before the token it carries
            long elapsed = System.nanoTime() - sent;
            boolean raisedOnMajority = Quorum.written(raised) >= nodes.quorum();
            for (int k = 0; k < won.size(); k++) {
                Lease lease = won.get(k);
                if (!raisedOnMajority || elapsed >= Watchdog.validity(lease.ttl()).toNanos()) {
                    // Too slow to use (or the token could not be made safe): as the distlock page says, a failed acquire.
                    ClaimResult r = results[wonAt.get(k)];
                    results[wonAt.get(k)] = new ClaimResult(ClaimResult.Status.NO_QUORUM, 0, r.serverTimeMillis(), r.runningUntilMillis());
                    giveBack.add(requests.get(wonAt.get(k)).mode() == ClaimRequest.Mode.RECOVER
                            ? new ClaimScripts.GiveBack(lease, "recovery") : new ClaimScripts.GiveBack(lease, true));
                }
            }
        }
        // A master that answered 'taken' for a token we gave back (the give-back missed it: busy, or
        // it landed first) is told again, so that a split's leftover cannot outvote every new token.
        long now = System.nanoTime();
        givenBack.values().removeIf(g -> now - g.atNanos() > GIVEN_BACK_KEPT.toNanos());
        for (Quorum.Vote<ClaimScripts.Decided> v : votes) {
            for (int i = 0; v.counts() && !givenBack.isEmpty() && i < requests.size(); i++) {
                GivenBack again = givenBack.remove(v.answer().holders()[i] == null ? "" : v.answer().holders()[i]);
                if (again != null) {
                    giveBack.add(again.giveBack());
                }
            }
        }
        giveBack.forEach(g -> givenBack.put(g.lease().token(), new GivenBack(g, now)));
        if (!giveBack.isEmpty()) {
            // To every master, those that seemed to fail too: their part of the claim may have landed.
            // Waits for every master asked: what it took must go. Each master gets it after the claim there
            // ended (it may be on its way still), a master left out too if the claim went to it.
            nodes.tellAfter(p -> {
                p.claims().unclaim(giveBack);
                return true;
            }, nodeWait, null, asked.calls());
        }
        return List.of(results);
    }

    /** Our give-backs of the last {@link #GIVEN_BACK_KEPT}, by token (see {@link #claim}). */
    private final Map<String, GivenBack> givenBack = new java.util.concurrent.ConcurrentHashMap<>();
    private static final Duration GIVEN_BACK_KEPT = Duration.ofMinutes(2);

    private record GivenBack(ClaimScripts.GiveBack giveBack, long atNanos) {}

    /**
     * One request's decision from the masters' answers, and what of ours to give back (null: nothing).
     */
    private record Combined(ClaimResult result, GiveBackMode giveBack) {}

    /** What a request that did not win gives back on every master. */
    private enum GiveBackMode {
        /** Every record of ours but a done one: nothing was decided. */
        ALL,
        /** Only records of ours still running: a majority decided otherwise (missed, skipped, ...), which stays. */
        RUNNING;

        ClaimScripts.GiveBack apply(Lease lease) {
            return new ClaimScripts.GiveBack(lease, this == ALL);
        }
    }

    private Combined combine(ClaimRequest request, List<Quorum.Vote<ClaimScripts.Decided>> votes, int i) {
        Map<ClaimResult.Status, Integer> byStatus = new java.util.EnumMap<>(ClaimResult.Status.class);
        Map<String, Integer> takenBy = new HashMap<>();
        List<Long> times = new ArrayList<>();
        long fence = 0;
        long runningUntil = 0;
        long earlyTime = 0;
        boolean anyOurs = false;
        Map<Long, Integer> abandonedTokens = new HashMap<>(); // the dead run's token, as each master's record has it
        Map<Long, Integer> claimedTokens = new HashMap<>(); // our token, as each master's record has it
        String why = ""; // a rerun's: why the run before it ended, as a master that claimed it says
        for (Quorum.Vote<ClaimScripts.Decided> v : votes) {
            if (!v.counts()) {
                anyOurs = true; // it may have written, or may yet
                continue;
            }
            ClaimResult r = v.answer().results()[i];
            byStatus.merge(r.status(), 1, Integer::sum);
            times.add(r.serverTimeMillis());
            if (r.status() == ClaimResult.Status.TAKEN) {
                takenBy.merge(v.answer().holders()[i], 1, Integer::sum);
            } else if (r.status() == ClaimResult.Status.EARLY) {
                earlyTime = Math.max(earlyTime, r.serverTimeMillis());
            } else {
                anyOurs |= r.status() != ClaimResult.Status.STALE && r.status() != ClaimResult.Status.BUSY;
            }
            fence = Math.max(fence, r.fencingToken());
            if (r.status() == ClaimResult.Status.ABANDONED) {
                abandonedTokens.merge(r.fencingToken(), 1, Integer::sum);
            } else if (r.status() == ClaimResult.Status.CLAIMED) {
                claimedTokens.merge(r.fencingToken(), 1, Integer::sum);
                why = why.isEmpty() ? r.why() : why;
            }
            if (r.runningUntilMillis() > 0 && (runningUntil == 0 || r.runningUntilMillis() < runningUntil)) {
                runningUntil = r.runningUntilMillis();
            }
        }
        times.sort(java.util.Comparator.reverseOrder());
        long quorumTime = times.get(nodes.quorum() - 1); // by then a majority of the masters' clocks had passed
        int q = nodes.quorum();
        if (byStatus.getOrDefault(ClaimResult.Status.CLAIMED, 0) >= q) {
            // A fresh claim: each master drew its own token, the highest is ours (and raised everywhere after).
            // A repeat (a lost reply): the token a majority's records were raised to, not a higher one of a
            // master that wrote the claim after that raise (the early return left it behind): the same answer.
            long agreed = claimedTokens.entrySet().stream().filter(e -> e.getValue() >= q).map(Map.Entry::getKey).findFirst().orElse(fence);
            return new Combined(new ClaimResult(ClaimResult.Status.CLAIMED, agreed, quorumTime, runningUntil, why), null);
        }
        boolean recovery = request.mode() == ClaimRequest.Mode.RECOVER || request.mode() == ClaimRequest.Mode.ABANDON;
        for (Map.Entry<ClaimResult.Status, Integer> e : byStatus.entrySet()) {
            ClaimResult.Status s = e.getKey();
            boolean decisive = s != ClaimResult.Status.CLAIMED && s != ClaimResult.Status.EARLY
                    && (s != ClaimResult.Status.TAKEN || recovery);
            if (decisive && e.getValue() >= q) {
                // The abandoned run's token is the one most masters' records have (ties: the highest): the
                // claim that took it returned once a majority decided, and a master that answered after
                // that may keep a token of its own (the fence raise only lifts, and may miss a master);
                // the masters that decided have the run's. (It names the run in slot_abandoned.)
                long token = s == ClaimResult.Status.ABANDONED ? abandonedTokens.entrySet().stream()
                        .max(Map.Entry.<Long, Integer>comparingByValue().thenComparing(Map.Entry.comparingByKey()))
                        .map(Map.Entry::getKey).orElse(fence) : 0;
                return new Combined(new ClaimResult(s, token, quorumTime, runningUntil), anyOurs ? GiveBackMode.RUNNING : null);
            }
        }
        for (Map.Entry<String, Integer> e : takenBy.entrySet()) {
            if (e.getValue() >= q) {
                // One other token holds a majority: the slot is its.
                return new Combined(new ClaimResult(ClaimResult.Status.TAKEN, 0, quorumTime, runningUntil), anyOurs ? GiveBackMode.ALL : null);
            }
        }
        if (byStatus.containsKey(ClaimResult.Status.EARLY)) {
            // Some masters' clocks have not reached the slot: ask again when they have (what we took is kept).
            return new Combined(new ClaimResult(ClaimResult.Status.EARLY, 0, earlyTime, runningUntil), null);
        }
        return new Combined(new ClaimResult(ClaimResult.Status.NO_QUORUM, 0, quorumTime, runningUntil), anyOurs ? GiveBackMode.ALL : null);
    }

    // ---------------------------------------------------------------- leases

    /**
     * A slot's state counts when a majority of the masters say the same kind (the latest lease end
     * of those); any split reads as undecided, so the worker claims the slot and the claim decides.
     */
    List<SlotState> slotStates(List<SlotState.Ref> refs) {
        if (refs.isEmpty()) {
            return List.of();
        }
        List<Quorum.Vote<List<SlotState>>> votes = everywhere("states", p -> p.reads().slotRecords(refs));
        List<SlotState> states = new ArrayList<>(refs.size());
        for (int i = 0; i < refs.size(); i++) {
            Map<SlotState.Kind, Integer> counts = new java.util.EnumMap<>(SlotState.Kind.class);
            Map<SlotState.Kind, Long> ends = new java.util.EnumMap<>(SlotState.Kind.class);
            for (Quorum.Vote<List<SlotState>> v : votes) {
                if (v.counts()) {
                    SlotState s = v.answer().get(i);
                    counts.merge(s.kind(), 1, Integer::sum);
                    ends.merge(s.kind(), s.leaseEndMillis(), Math::max);
                }
            }
            SlotState decided = SlotState.NONE;
            for (Map.Entry<SlotState.Kind, Integer> e : counts.entrySet()) {
                if (e.getValue() >= nodes.quorum()) {
                    decided = new SlotState(e.getKey(), ends.get(e.getKey()));
                }
            }
            states.add(decided);
        }
        return states;
    }

    /**
     * A start counts when a majority of the masters answer the same (started, late, paused, lost).
     * While a master that counts has not answered ({@link StartAnswer#UNANSWERED}) and none of that
     * holds, the answer is {@code UNANSWERED}: asked again while the short lease lasts. Any other
     * split (say paused on one live master and started on another, a third down; or late on one
     * master's clock and started on another's) is {@link StartAnswer#SPLIT} (M1 of the 2026-12-04
     * review): the run does not start, and since the peers see the slot held by this token and no
     * majority calls anything of it dead, nobody else would ever run or report it. So the slot is
     * decided here, once: recorded missed ({@code no_quorum}, {@code start.lua}'s split mode) on
     * every master where this token still holds the claim (where it started, where it is still
     * staged, and on a master that was slow: it may have landed there), which leaves the masters
     * that answered all saying "decided without a run", with no entry for a recovery to find; its
     * worker reports it missed (code {@code no_quorum}). Recording it, rather than handing the
     * claim back, is what keeps the report single: a handed-back claim on one master plus the staged
     * one on a master that comes back would be a majority that runs or reports the slot a second
     * time. (Where this write does not land, that master's leftover is a minority the prune drops.)
     */
    List<io.lockstep.scheduler.lock.StartReply> start(List<StartRequest> requests) {
        if (requests.isEmpty()) {
            return List.of();
        }
        // Decided once every start has one answer from a majority; any split waits for every master.
        Quorum.Asked<List<io.lockstep.scheduler.lock.StartReply>> asked = everywhereTracked("start", p -> p.start(requests), in -> {
            for (int i = 0; i < requests.size(); i++) {
                int index = i;
                boolean one = false;
                for (StartAnswer a : StartAnswer.values()) {
                    one |= a != StartAnswer.UNANSWERED && Quorum.count(in, replies -> replies.get(index).answer() == a) >= nodes.quorum();
                }
                if (!one) {
                    return false;
                }
            }
            return true;
        });
        List<Quorum.Vote<List<io.lockstep.scheduler.lock.StartReply>>> votes = asked.votes();
        List<io.lockstep.scheduler.lock.StartReply> answers = new ArrayList<>(requests.size());
        List<StartRequest> split = new ArrayList<>();
        for (int i = 0; i < requests.size(); i++) {
            Map<StartAnswer, Integer> counts = new java.util.EnumMap<>(StartAnswer.class);
            List<Long> times = new ArrayList<>();
            for (Quorum.Vote<List<io.lockstep.scheduler.lock.StartReply>> v : votes) {
                if (v.counts()) {
                    io.lockstep.scheduler.lock.StartReply r = v.answer().get(i);
                    counts.merge(r.answer(), 1, Integer::sum);
                    if (r.serverTimeMicros() > 0) {
                        times.add(r.serverTimeMicros());
                    }
                }
            }
            StartAnswer decided = counts.containsKey(StartAnswer.UNANSWERED) ? StartAnswer.UNANSWERED : StartAnswer.SPLIT;
            for (Map.Entry<StartAnswer, Integer> e : counts.entrySet()) {
                if (e.getValue() >= nodes.quorum() && e.getKey() != StartAnswer.UNANSWERED) {
                    decided = e.getKey();
                }
            }
            if (decided == StartAnswer.SPLIT) {
                split.add(requests.get(i));
            }
            // A time a majority of the masters' clocks had reached when their replies arrived (as the claim's).
            times.sort(java.util.Comparator.reverseOrder());
            answers.add(new io.lockstep.scheduler.lock.StartReply(decided, times.size() >= nodes.quorum() ? times.get(nodes.quorum() - 1) : 0));
        }
        if (!split.isEmpty()) {
            // To every master the start went to, those that seemed to fail too (it may have landed there), after it ended there.
            nodes.tellAfter(p -> p.recordSplit(split), nodeWait, null, asked.calls());
        }
        return answers;
    }

    List<Boolean> renew(List<Lease> leases) {
        if (leases.isEmpty()) {
            return List.of();
        }
        return nodes.majorityPerItem(everywhere("renew", p -> p.renew(leases), in -> nodes.decidedPerItem(in, leases.size(), List::get)),
                leases.size(), List::get);
    }

    List<Boolean> complete(List<Completion> completions) {
        if (completions.isEmpty()) {
            return List.of();
        }
        return nodes.majorityPerItem(everywhere("complete", p -> p.complete(completions),
                in -> nodes.decidedPerItem(in, completions.size(), List::get)), completions.size(), List::get);
    }

    /** Saved on every master that answers; saved when a majority saved it (the run holds the slot there). */
    boolean checkpoint(io.lockstep.scheduler.lock.Lease lease, io.lockstep.scheduler.lock.Checkpoint checkpoint) {
        return nodes.majorityPerItem(everywhere("checkpoint", p -> List.of(p.checkpoint(lease, checkpoint))), 1, List::get).get(0);
    }

    /**
     * The latest checkpoint any master that answered holds (by fencing token, then sequence): every
     * copy was saved by a run that held the slot on that master, and a save counted only on a
     * majority, so a majority of answers holds the last counted one, or a later one.
     */
    java.util.Optional<io.lockstep.scheduler.lock.Checkpoint> lastCheckpoint(String job, Instant slot) {
        io.lockstep.scheduler.lock.Checkpoint latest = null;
        for (Quorum.Vote<java.util.Optional<io.lockstep.scheduler.lock.Checkpoint>> v
                : everywhere("checkpoint", p -> p.lastCheckpoint(job, slot))) {
            if (v.counts() && v.answer().isPresent() && v.answer().get().after(latest)) {
                latest = v.answer().get();
            }
        }
        return java.util.Optional.ofNullable(latest);
    }

    List<Boolean> recordLate(String workerId, List<Completion> completions) {
        if (completions.isEmpty()) {
            return List.of();
        }
        return nodes.majorityPerItem(everywhere("late", p -> p.recordLate(workerId, completions)), completions.size(), List::get);
    }

    List<RunsInFlight> runsInFlight(List<String> jobs) {
        return jobs.isEmpty() ? List.of() : RedlockRuns.inFlight(nodes, nodeWait, jobs, everywhere("runs", p -> p.runsInFlight(jobs)));
    }

    Map<String, Instant> lastSlots(List<String> jobs) {
        Map<String, Instant> last = new HashMap<>();
        for (Quorum.Vote<Map<String, Instant>> v : everywhere("last", p -> p.lastSlots(jobs))) {
            if (v.counts()) {
                v.answer().forEach((job, slot) -> last.merge(job, slot, (a, b) -> a.isAfter(b) ? a : b));
            }
        }
        return last;
    }

    /** The time by which a majority of the masters' clocks have passed: the clock claims are decided by. */
    long serverTimeMillis() {
        List<Quorum.Vote<Long>> votes = nodes.ask(RedisLockProvider::serverTimeMillis, nodeWait);
        List<Long> times = new ArrayList<>();
        votes.stream().filter(v -> v.kind() != Quorum.Kind.FAILED).forEach(v -> times.add(v.answer()));
        if (times.size() < nodes.quorum()) {
            throw nodes.tooFew("time", votes, Quorum.describe(votes, t -> "answered"));
        }
        times.sort(java.util.Comparator.reverseOrder());
        return times.get(nodes.quorum() - 1);
    }
}
