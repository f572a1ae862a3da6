package io.lockstep.redis;

import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.ClaimResult;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.Watchdog;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Redlock's claim votes ({@link RedlockStore#claim}): one claim batch on every master at once, each
 * request decided from the masters' answers ({@link #combine}: {@code claimed} by a majority within
 * the lease's validity, or any other answer of a majority, or {@code taken} when a majority name
 * the same other token, else {@link ClaimResult.Status#NO_QUORUM}), then the fence raise of what
 * was won and the give-back on every master of what was not ({@code unclaim.lua}), with the
 * give-backs of the last {@link #GIVEN_BACK_KEPT} remembered to tell again a master that still
 * answers with one of their tokens.
 *
 * <p>Apart from {@link RedlockStore}, which keeps the store's other votes (starts, renewals,
 * completions, checkpoints, slot states, runs in flight, the clock) and the restart quarantine:
 * each of those counts one answer per item, while a claim combines several (each master's token,
 * status and clock) into one decision, takes three steps (decide, raise the fence, give back) and
 * is the only vote that keeps state across calls (the give-backs it remembers). Each master's part
 * is its {@link ClaimScripts}. Thread-safe.
 */
final class RedlockClaims {

    /** The store whose fan-out every claim goes through ({@link RedlockStore#everywhereTracked}). */
    private final RedlockStore store;
    private final Quorum<RedisLockProvider> nodes;
    private final Duration nodeWait;

    RedlockClaims(RedlockStore store) {
        this.store = store;
        this.nodes = store.quorum();
        this.nodeWait = store.nodeWait();
    }

    /**
     * {@code requests}, not empty, decided over the masters ({@link RedlockStore#claim} answers none
     * at once, and grows the restart quarantine with them first).
     */
    List<ClaimResult> claim(List<ClaimRequest> requests) {
        long sent = System.nanoTime();
        // Decided once a majority claimed every request: a stalled minority is not waited for. Any other
        // outcome waits for every master asked, so that what is given back comes after what they took.
        Quorum.Asked<ClaimScripts.Decided> asked = store.everywhereTracked("claim", p -> p.claims().decide(requests), in -> {
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
}
