package io.lockstep.redis;

import io.lockstep.scheduler.lock.LockException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

/**
 * Redlock's fan-out: the same action on every node at once, the answers that came within a wait,
 * and which of them count. A node counts when it answered and is past its restart quarantine
 * ({@link RestartQuarantine.Quarantined}); a decision needs {@link #quorum()} of all nodes (N/2 + 1), so
 * that any two decisions share a node. How each call gets to its node (a thread each, a bound
 * in flight per node) is {@link QuorumCalls}'; which nodes are asked, {@link QuorumHealth}'s.
 * Thread-safe.
 *
 * @param <N> what a node is to the caller (its calls, or its store)
 */
final class Quorum<N> {

    /** How one node took part. */
    enum Kind { ANSWERED, QUARANTINED, FAILED }

    /** One node's part in one fan-out: its answer when it counts, otherwise why not. */
    record Vote<T>(String node, Kind kind, T answer, String failure) {
        boolean counts() {
            return kind == Kind.ANSWERED;
        }
    }

    /**
     * The scheduler's bound on calls in flight to one node: its connection pool's size
     * ({@link RedlockStore} builds the pools). A call beyond it would wait for a connection, and
     * could be sent after the fan-out stopped waiting for it: it would land late, and what a late
     * claim writes on a minority is an orphan. With a stalled node the calls to it would also pile
     * up, one thread each, at the rate of the fan-outs times the wait.
     */
    static final int SCHEDULER_IN_FLIGHT = RedisClients.POOL_SIZE;
    /** The lock API's bound: its clients are the application's (their pools sized by it), so only a bound on threads. */
    static final int LOCKS_IN_FLIGHT = 256;

    private final List<N> nodes;
    private final List<String> names;
    private final int quorum;

    /**
     * @param inFlightPerNode at most this many calls in flight to one node: a fan-out that finds a
     *     node full does not send it the call, and its vote is {@link Kind#FAILED} at once ("busy"),
     *     as for a node that does not answer; the others decide as usual
     */
    Quorum(List<N> nodes, List<String> names, int inFlightPerNode) {
        this(nodes, names, inFlightPerNode, null);
    }

    /**
     * @param probe when not null, each node has a {@link MasterHealth}: a node that did not answer
     *     within the wait in two of its last four calls is left out (its vote failed at once, the call
     *     not sent) until {@code probe} on it, tried every {@link MasterHealth#PROBE_EVERY} in the
     *     background, returns
     */
    Quorum(List<N> nodes, List<String> names, int inFlightPerNode, Function<N, ?> probe) {
        if (nodes.size() < 3 || nodes.size() != names.size()) {
            throw new IllegalArgumentException("redlock needs at least 3 independent masters (5 is usual), but was given " + nodes.size());
        }
        this.nodes = List.copyOf(nodes);
        this.names = List.copyOf(names);
        this.quorum = nodes.size() / 2 + 1;
        this.calls = new QuorumCalls<>(this.nodes, inFlightPerNode);
        this.health = probe == null ? null : new QuorumHealth<>(this.nodes, this.names, quorum, probe, calls.pool());
    }

    /** How the calls reach the nodes: one thread per call, at most {@code inFlightPerNode} in flight to one node. */
    private final QuorumCalls<N> calls;

    /** Per node, whether it is asked and how its calls went; null without a probe (every node always asked). */
    private final QuorumHealth<N> health;
    /** The longest wait of any fan-out so far: how long {@link #awaitInFlight} waits at most. */
    private final java.util.concurrent.atomic.AtomicLong longestWaitNanos = new java.util.concurrent.atomic.AtomicLong();

    /**
     * Waits up to the longest fan-out wait for the calls still in flight (the rest of steps a
     * majority settled early: a release's, an outcome's) to land, so that closing the clients right
     * after does not cut them short on the other nodes. A stalled node's calls are not waited past it.
     */
    void awaitInFlight() {
        calls.awaitInFlight(longestWaitNanos.get());
    }


    /** Each node's state by name, in order: {@code closed} (asked) or {@code open} (left out); {@code closed} for all without a probe. */
    java.util.Map<String, String> states() {
        if (health != null) {
            return health.states();
        }
        java.util.Map<String, String> states = new java.util.LinkedHashMap<>();
        names.forEach(name -> states.put(name, "closed"));
        return states;
    }

    /** How many counting answers a decision needs: a majority of all nodes, N/2 + 1. */
    int quorum() {
        return quorum;
    }

    List<N> nodes() {
        return nodes;
    }

    List<String> names() {
        return names;
    }

    /**
     * Runs {@code action} on every node in parallel and waits for all of them, at most {@code wait}.
     * A node that did not answer in time counts as failed; its call may still land later (callers
     * that must undo it send the undo to every node).
     *
     * @return one vote per node, in node order
     */
    <T> List<Vote<T>> ask(Function<N, T> action, Duration wait) {
        return ask(action, wait, null);
    }

    /**
     * {@link #ask(Function, Duration)} that returns as soon as {@code settled} holds for the votes in
     * so far (the nodes not answered yet read as failed, "pending"): a decision a majority already
     * made does not wait for a slow or stalled minority. Those are left to finish in the background
     * (what they write is an orphan the callers already handle, or the same as the majority's), and
     * their votes read failed ("not awaited"); each still counts for or against its node's health
     * when it answers or its wait is over.
     *
     * <p>A failure counts against a node's health only when another node answered in time (no
     * answer at all, or a poll that woke a whole wait late, is our own pause or an outage of all),
     * and never leaves out more than N - quorum nodes.
     */
    <T> List<Vote<T>> ask(Function<N, T> action, Duration wait, java.util.function.Predicate<List<Vote<T>>> settled) {
        return ask(action, wait, settled, false, null).votes();
    }

    /** A fan-out's votes and its calls, one per node in node order (a call not sent is a failed future). */
    record Asked<T>(List<Vote<T>> votes, List<CompletableFuture<T>> calls) {}

    /**
     * {@link #ask(Function, Duration, java.util.function.Predicate)} with its calls, for a caller
     * whose undo must reach each node after the call it undoes ({@link #tellAfter}).
     */
    <T> Asked<T> askTracked(Function<N, T> action, Duration wait, java.util.function.Predicate<List<Vote<T>>> settled) {
        return ask(action, wait, settled, false, null);
    }

    /**
     * {@link #ask(Function, Duration, java.util.function.Predicate)} for an undo (a give-back, a
     * release, a split's record) of the calls in {@code after} (an {@link Asked#calls()}). It goes to
     * each node the call went to, a node left out since included (the call that left it out may have
     * landed there; it is not waited for there, its vote reads failed, "left out"), and reaches each
     * only after that node's call has ended, answered or failed: a call a majority settled without
     * waiting for it can still be on its way, and an undo sent on another connection could land
     * before it and leave what it took behind (a lock on a minority, held for its lease). A call that
     * ended in a client-side timeout may still be queued on a stalled server, and its undo can then
     * land first: what it took stays on that one master until its ttl (for the scheduler, the
     * give-back is told again when that master answers "taken" for it). Sent at once to the nodes whose call has ended; not to a node
     * left out that the call never went to.
     */
    <T> List<Vote<T>> tellAfter(Function<N, T> action, Duration wait, java.util.function.Predicate<List<Vote<T>>> settled,
            List<? extends CompletableFuture<?>> after) {
        return ask(action, wait, settled, true, after).votes();
    }

    private <T> Asked<T> ask(Function<N, T> action, Duration wait, java.util.function.Predicate<List<Vote<T>>> settled,
            boolean alsoLeftOut, List<? extends CompletableFuture<?>> after) {
        if (health != null) {
            health.waitSeen(wait);
        }
        longestWaitNanos.accumulateAndGet(wait.toNanos(), Math::max);
        List<Integer> notAsked = health == null ? List.of() : health.leftOut();
        List<CompletableFuture<T>> futures = calls.send(action, notAsked, alsoLeftOut, after);
        long sent = System.nanoTime();
        long deadline = sent + wait.toNanos();
        int n = nodes.size();
        java.util.concurrent.BlockingQueue<Integer> done = new java.util.concurrent.LinkedBlockingQueue<>();
        for (int i = 0; i < n; i++) {
            int index = i;
            futures.get(i).whenComplete((r, t) -> done.add(index));
        }
        List<Vote<T>> votes = new ArrayList<>(java.util.Collections.nCopies(n, null));
        int remaining = n;
        int answers = 0; // nodes that answered in time, whatever they said
        boolean early = false;
        boolean interrupted = false;
        while (remaining > 0) {
            Integer i;
            try {
                i = done.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                interrupted = true;
                // keep the answers already in: they were given, whatever our thread does next
                for (Integer in = done.poll(); in != null; in = done.poll()) {
                    Vote<T> v = vote(names.get(in), futures.get(in), 0, wait);
                    votes.set(in, v);
                }
                break;
            }
            if (i == null) {
                // The wait is over. Answers already in the queue arrived in time (only our reading was late).
                for (Integer in = done.poll(); in != null; in = done.poll()) {
                    Vote<T> v = vote(names.get(in), futures.get(in), 0, wait);
                    votes.set(in, v);
                    if (health != null) {
                        health.record(in, v, futures.get(in), System.nanoTime() - sent);
                    }
                    if (v.kind() != Kind.FAILED) {
                        answers++;
                    }
                }
                break;
            }
            Vote<T> v = vote(names.get(i), futures.get(i), 0, wait);
            votes.set(i, v);
            if (health != null) {
                health.record(i, v, futures.get(i), System.nanoTime() - sent);
            }
            if (v.kind() != Kind.FAILED) {
                answers++;
            }
            remaining--;
            if (settled != null && remaining > 0 && settled.test(withPending(votes))) {
                early = true;
                break;
            }
        }
        // No node answered in time, or we looked a whole wait late: our own pause (GC, CPU) or an outage of
        // every node, which says nothing of any one of them, so it counts against none.
        boolean ourPause = answers == 0 || System.nanoTime() - deadline > wait.toNanos();
        for (int i = 0; i < n; i++) {
            if (votes.get(i) != null) {
                continue;
            }
            if (early || interrupted) {
                votes.set(i, new Vote<>(names.get(i), Kind.FAILED, null, interrupted ? "interrupted" : "not awaited: the answers in decided"));
                if (early && health != null) {
                    health.recordLater(i, futures.get(i), sent, wait);
                }
            } else {
                Vote<T> v = new Vote<>(names.get(i), Kind.FAILED, null, "no answer within " + wait.toMillis() + " ms");
                votes.set(i, v);
                if (health != null && !ourPause) {
                    health.record(i, v, futures.get(i), System.nanoTime() - sent);
                }
            }
        }
        return new Asked<>(votes, futures);
    }


    /** The votes in so far, the nodes not answered yet as failed ("pending"). */
    private <T> List<Vote<T>> withPending(List<Vote<T>> votes) {
        List<Vote<T>> all = new ArrayList<>(votes.size());
        for (int i = 0; i < votes.size(); i++) {
            all.add(votes.get(i) != null ? votes.get(i) : new Vote<>(names.get(i), Kind.FAILED, null, "pending"));
        }
        return all;
    }

    /**
     * For a batch of {@code size} items, whether more answers can change what
     * {@link #majorityPerItem} makes of them: every item has a majority of yes, or too few nodes are
     * left for one.
     */
    <A> boolean decidedPerItem(List<Vote<A>> votes, int size, java.util.function.BiPredicate<A, Integer> yes) {
        int pending = 0;
        for (Vote<A> v : votes) {
            if ("pending".equals(v.failure())) {
                pending++;
            }
        }
        int counting = counting(votes);
        if (counting < quorum && counting + pending >= quorum) {
            return false; // too few count yet for any answer to stand (a "no" from a minority is no decision)
        }
        for (int i = 0; i < size; i++) {
            int index = i;
            int y = count(votes, answer -> yes.test(answer, index));
            if (y < quorum && y + pending >= quorum) {
                return false;
            }
        }
        return true;
    }


    static <T> Vote<T> vote(String name, CompletableFuture<T> future, long waitNanos, Duration wait) {
        try {
            return new Vote<>(name, Kind.ANSWERED, future.get(waitNanos, TimeUnit.NANOSECONDS), null);
        } catch (TimeoutException e) {
            return new Vote<>(name, Kind.FAILED, null, "no answer within " + wait.toMillis() + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Vote<>(name, Kind.FAILED, null, "interrupted");
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof QuorumCalls.Busy || cause instanceof QuorumCalls.LeftOut) {
                return new Vote<>(name, Kind.FAILED, null, cause.getMessage());
            }
            if (cause instanceof RestartQuarantine.Quarantined q) {
                return new Vote<>(name, Kind.QUARANTINED, null, q.getMessage());
            }
            return new Vote<>(name, Kind.FAILED, null, cause instanceof LockException le ? le.getMessage() : String.valueOf(cause));
        }
    }

    /** How many votes count and satisfy {@code test}. */
    static <T> int count(List<Vote<T>> votes, java.util.function.Predicate<T> test) {
        int n = 0;
        for (Vote<T> v : votes) {
            if (v.counts() && test.test(v.answer())) {
                n++;
            }
        }
        return n;
    }

    /**
     * For a batch of {@code size} items, per item whether a majority of the nodes counted {@code yes}
     * for it ({@code yes} gets a node's answer and the item's index).
     */
    <A> List<Boolean> majorityPerItem(List<Vote<A>> votes, int size, java.util.function.BiPredicate<A, Integer> yes) {
        List<Boolean> result = new ArrayList<>(size);
        for (int i = 0; i < size; i++) {
            int index = i;
            result.add(count(votes, answer -> yes.test(answer, index)) >= quorum);
        }
        return result;
    }

    /**
     * How many nodes carried out a write: those that answered, quarantined ones included (the
     * quarantine is about what a node says, not about what it was told).
     */
    static int written(List<? extends Vote<?>> votes) {
        int n = 0;
        for (Vote<?> v : votes) {
            if (v.kind() != Kind.FAILED) {
                n++;
            }
        }
        return n;
    }

    /** How many votes count at all. */
    static int counting(List<? extends Vote<?>> votes) {
        int n = 0;
        for (Vote<?> v : votes) {
            if (v.counts()) {
                n++;
            }
        }
        return n;
    }

    /**
     * Who voted how, for errors and events (as redsync's {@code ErrTaken{Nodes}}): {@code node
     * answer} per node, with {@code describe} naming an answer.
     */
    static <T> String describe(List<Vote<T>> votes, Function<T, String> describe) {
        List<String> parts = new ArrayList<>(votes.size());
        for (Vote<T> v : votes) {
            parts.add(v.node() + " " + switch (v.kind()) {
                case ANSWERED -> describe.apply(v.answer());
                case QUARANTINED -> "quarantined (" + v.failure().substring(v.failure().indexOf(": ") + 2) + ")";
                case FAILED -> "failed (" + Objects.toString(v.failure(), "?") + ")";
            });
        }
        return String.join(", ", parts);
    }

    /** The failure when too few nodes counted to decide anything. */
    LockException tooFew(String operation, List<? extends Vote<?>> votes, String detail) {
        return new LockException("redlock", "redlock: " + operation + ": only " + counting(votes) + " of " + nodes.size()
                + " nodes answered and count (a decision needs " + quorum + "): " + detail, null);
    }
}
