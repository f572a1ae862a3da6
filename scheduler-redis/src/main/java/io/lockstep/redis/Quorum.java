package io.lockstep.redis;

import io.lockstep.scheduler.lock.LockException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
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

    /** One thread per call in flight, so that a stalled node never holds up the others. Daemon. */
    private static final ExecutorService POOL = Executors.newCachedThreadPool(new java.util.concurrent.ThreadFactory() {
        private final AtomicInteger count = new AtomicInteger();

        @Override
        public Thread newThread(Runnable r) {
            Thread t = new Thread(r, "lockstep-redlock-" + count.incrementAndGet());
            t.setDaemon(true);
            return t;
        }
    });

    private final List<N> nodes;
    private final List<String> names;
    private final int quorum;

    Quorum(List<N> nodes, List<String> names) {
        if (nodes.size() < 3 || nodes.size() != names.size()) {
            throw new IllegalArgumentException("redlock needs at least 3 independent masters (5 is usual), but was given " + nodes.size());
        }
        this.nodes = List.copyOf(nodes);
        this.names = List.copyOf(names);
        this.quorum = nodes.size() / 2 + 1;
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
        List<CompletableFuture<T>> futures = new ArrayList<>(nodes.size());
        for (N node : nodes) {
            futures.add(CompletableFuture.supplyAsync(() -> action.apply(node), POOL));
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
            if (cause instanceof RedisCalls.Quarantined q) {
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
