package io.lockstep.redis;

import io.lockstep.scheduler.lock.LockException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * Redlock's fan-out: the same action on every node at once, the answers that came within a wait,
 * and which of them count. A node counts when it answered and is past its restart quarantine
 * ({@link RedisCalls.Quarantined}); a decision needs {@link #quorum()} of all nodes (N/2 + 1), so
 * that any two decisions share a node. Thread-safe.
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
        if (nodes.size() < 3 || nodes.size() != names.size()) {
            throw new IllegalArgumentException("redlock needs at least 3 independent masters (5 is usual), but was given " + nodes.size());
        }
        this.nodes = List.copyOf(nodes);
        this.names = List.copyOf(names);
        this.quorum = nodes.size() / 2 + 1;
        this.inFlight = new java.util.concurrent.Semaphore[nodes.size()];
        for (int i = 0; i < inFlight.length; i++) {
            inFlight[i] = new java.util.concurrent.Semaphore(inFlightPerNode);
        }
        this.inFlightPerNode = inFlightPerNode;
        // As a cached pool (idle threads are reused, and end after a minute), bounded: the permits
        // bound the calls in flight, and twice that in threads leaves room for a thread that has
        // released its permit and not yet gone back to the pool.
        java.util.concurrent.ThreadPoolExecutor pool = new java.util.concurrent.ThreadPoolExecutor(0, 2 * nodes.size() * inFlightPerNode,
                60, TimeUnit.SECONDS, new java.util.concurrent.SynchronousQueue<>(), r -> {
                    Thread t = new Thread(r, "lockstep-redlock-" + THREADS.incrementAndGet());
                    t.setDaemon(true);
                    return t;
                });
        this.pool = pool;
    }

    private static final AtomicInteger THREADS = new AtomicInteger();
    private final int inFlightPerNode;
    /** Per node, the calls it may still be sent ({@link #inFlightPerNode} at most in flight). */
    private final java.util.concurrent.Semaphore[] inFlight;
    /** One thread per call in flight (at most {@link #inFlightPerNode} per node), so that a stalled node never holds up the others. Daemon. */
    private final ExecutorService pool;

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
        List<CompletableFuture<T>> futures = new ArrayList<>(nodes.size());
        for (int i = 0; i < nodes.size(); i++) {
            N node = nodes.get(i);
            java.util.concurrent.Semaphore permits = inFlight[i];
            if (!permits.tryAcquire()) {
                futures.add(CompletableFuture.failedFuture(new Busy(inFlightPerNode)));
                continue;
            }
            try {
                futures.add(CompletableFuture.supplyAsync(() -> {
                    try {
                        return action.apply(node);
                    } finally {
                        permits.release();
                    }
                }, pool));
            } catch (java.util.concurrent.RejectedExecutionException e) {
                permits.release();
                futures.add(CompletableFuture.failedFuture(new Busy(inFlightPerNode)));
            }
        }
        long deadline = System.nanoTime() + wait.toNanos();
        List<Vote<T>> votes = new ArrayList<>(nodes.size());
        for (int i = 0; i < nodes.size(); i++) {
            votes.add(vote(names.get(i), futures.get(i), Math.max(0, deadline - System.nanoTime()), wait));
        }
        return votes;
    }

    private static <T> Vote<T> vote(String name, CompletableFuture<T> future, long waitNanos, Duration wait) {
        try {
            return new Vote<>(name, Kind.ANSWERED, future.get(waitNanos, TimeUnit.NANOSECONDS), null);
        } catch (TimeoutException e) {
            return new Vote<>(name, Kind.FAILED, null, "no answer within " + wait.toMillis() + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Vote<>(name, Kind.FAILED, null, "interrupted");
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof Busy b) {
                return new Vote<>(name, Kind.FAILED, null, b.getMessage());
            }
            if (cause instanceof RedisCalls.Quarantined q) {
                return new Vote<>(name, Kind.QUARANTINED, null, q.getMessage());
            }
            return new Vote<>(name, Kind.FAILED, null, cause instanceof LockException le ? le.getMessage() : String.valueOf(cause));
        }
    }

    /** A node with as many calls in flight as the bound: this one was not sent. */
    static final class Busy extends RuntimeException {
        Busy(int inFlight) {
            super("busy: " + inFlight + " calls in flight to it (slow or stalled), this one not sent", null, false, false);
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
