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
 * ({@link RedlockMembers}, reached through {@link #members()}). The claim votes, the fence raise
 * and the give-back are {@link RedlockClaims}'; this class keeps the other votes and the
 * quarantine. Thread-safe.
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
    /** The claim votes, and the give-backs they remember. */
    private final RedlockClaims claims;

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
        this.claims = new RedlockClaims(this); // last: it reads the quorum and the wait set above
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
                masters.add(new RedisLockProvider(new ServerStore(built.client(), true, settings.keyPrefix(), built.description(),
                        RedisCalls.Replicas.NONE, historyKeep, () -> Math.max(0, quarantine.get()), r.durable().contains(node))));
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

    /**
     * {@link #everywhere(String, Function, java.util.function.Predicate)} with its calls, for an undo
     * that must follow them (a split start's record here, a claim's give-back in {@link RedlockClaims}).
     */
    <T> Quorum.Asked<T> everywhereTracked(String operation, Function<RedisLockProvider, T> action,
            java.util.function.Predicate<List<Quorum.Vote<T>>> settled) {
        Quorum.Asked<T> asked = nodes.askTracked(action, nodeWait, settled);
        if (Quorum.counting(asked.votes()) < nodes.quorum()) {
            throw nodes.tooFew(operation, asked.votes(), Quorum.describe(asked.votes(), a -> "answered"));
        }
        return asked;
    }

    // ---------------------------------------------------------------- claims

    /** The claim votes are {@link RedlockClaims}'; here the restart quarantine grows with the claims made. */
    List<ClaimResult> claim(List<ClaimRequest> requests) {
        if (requests.isEmpty()) {
            return List.of();
        }
        if (auto) {
            // Never shorter than the records this process writes: a master that lost them sits out as long.
            long longest = requests.stream().mapToLong(r -> r.recordTtl().toMillis()).max().orElse(0);
            quarantineMillis.accumulateAndGet(longest, Math::max);
        }
        return claims.claim(requests);
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
