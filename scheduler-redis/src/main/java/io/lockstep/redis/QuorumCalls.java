package io.lockstep.redis;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * How a {@link Quorum}'s calls reach its nodes: each on a thread of its own, so that a stalled node
 * never holds up the others, and at most a bound of them in flight to one node, so that the calls
 * to a stalled node do not pile up (one thread each) and none waits for a connection to be sent
 * after the fan-out stopped waiting for it (what a late claim writes on a minority is an orphan).
 * An undo reaches each node only after the call it undoes ended there. A call not sent fails at
 * once: {@link LeftOut} (its node left out by its health) or {@link Busy} (at its bound). Apart from
 * {@link Quorum}, which waits for the answers and says which of them count. Thread-safe.
 *
 * @param <N> what a node is to the caller (its calls, or its store)
 */
final class QuorumCalls<N> {

    private static final AtomicInteger THREADS = new AtomicInteger();
    private final List<N> nodes;
    private final int inFlightPerNode;
    /** Per node, the calls it may still be sent ({@link #inFlightPerNode} at most in flight). */
    private final java.util.concurrent.Semaphore[] inFlight;
    /** One thread per call in flight (at most {@link #inFlightPerNode} per node), so that a stalled node never holds up the others. Daemon. */
    private final ExecutorService pool;

    /** @param inFlightPerNode at most this many calls in flight to one node (see {@link Quorum}'s constructor) */
    QuorumCalls(List<N> nodes, int inFlightPerNode) {
        this.nodes = nodes;
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

    /** The pool the calls run on, for the probes of the nodes left out ({@link QuorumHealth}). */
    Executor pool() {
        return pool;
    }

    /**
     * Waits up to {@code waitNanos} for the calls still in flight to land (see
     * {@link Quorum#awaitInFlight}). A stalled node's calls are not waited past it.
     */
    void awaitInFlight(long waitNanos) {
        long deadline = System.nanoTime() + waitNanos;
        for (java.util.concurrent.Semaphore permits : inFlight) {
            try {
                if (permits.tryAcquire(inFlightPerNode, Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                    permits.release(inFlightPerNode);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /**
     * Sends {@code action} to every node, one call each: not to a node in {@code notAsked} (left out
     * by its health) unless {@code alsoLeftOut}, and then only if the call it undoes went there (its
     * call reads {@link LeftOut} all the same: it is not waited for); on each node only after the
     * call of {@code after} there has ended, when given (an {@link Quorum.Asked#calls()}).
     *
     * @return one call per node, in node order (a call not sent is a failed future)
     */
    <T> List<CompletableFuture<T>> send(Function<N, T> action, List<Integer> notAsked, boolean alsoLeftOut,
            List<? extends CompletableFuture<?>> after) {
        List<CompletableFuture<T>> futures = new ArrayList<>(nodes.size());
        for (int i = 0; i < nodes.size(); i++) {
            boolean leftOut = notAsked.contains(i);
            if (leftOut && !alsoLeftOut) {
                futures.add(CompletableFuture.failedFuture(new LeftOut()));
                continue;
            }
            CompletableFuture<?> before = after == null ? null : after.get(i);
            if (leftOut && before != null && notSent(before)) {
                // The call it undoes never went there: nothing to undo on a node left out (and nothing
                // piles up on a stalled one, one thread per call, until the bound).
                futures.add(CompletableFuture.failedFuture(new LeftOut()));
                continue;
            }
            int node = i;
            CompletableFuture<T> sent = before == null || before.isDone() ? send(i, action)
                    : before.handle((r, t) -> null).thenCompose(x -> send(node, action));
            futures.add(leftOut ? CompletableFuture.failedFuture(new LeftOut()) : sent);
        }
        return futures;
    }

    /** Sends {@code action} to node {@code i} if it has a call left within its bound, else a failed {@link Busy} future. */
    private <T> CompletableFuture<T> send(int i, Function<N, T> action) {
        N node = nodes.get(i);
        java.util.concurrent.Semaphore permits = inFlight[i];
        if (!permits.tryAcquire()) {
            return CompletableFuture.failedFuture(new Busy(inFlightPerNode));
        }
        try {
            return CompletableFuture.supplyAsync(() -> {
                try {
                    return action.apply(node);
                } finally {
                    permits.release();
                }
            }, pool);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            permits.release();
            return CompletableFuture.failedFuture(new Busy(inFlightPerNode));
        }
    }

    /** Whether a fan-out's call was not sent at all (its node left out, or at its bound). */
    private static boolean notSent(CompletableFuture<?> call) {
        if (!call.isCompletedExceptionally()) {
            return false;
        }
        Throwable t = call.handle((r, e) -> e).getNow(null);
        return t instanceof LeftOut || t instanceof Busy;
    }

    /** A node left out by its {@link MasterHealth}: this call was not sent. */
    static final class LeftOut extends RuntimeException {
        LeftOut() {
            super("left out: it did not answer in time lately (probed in the background)", null, false, false);
        }
    }

    /** A node with as many calls in flight as the bound: this one was not sent. */
    static final class Busy extends RuntimeException {
        Busy(int inFlight) {
            super("busy: " + inFlight + " calls in flight to it (slow or stalled), this one not sent", null, false, false);
        }
    }
}
