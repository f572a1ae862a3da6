package io.lockstep.redis;

import io.lockstep.scheduler.lock.LockException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

/**
 * Which of a {@link Quorum}'s nodes are asked: one {@link MasterHealth} per node, told how each call
 * went ({@link #record}, {@link #recordLater} for calls a majority settled without), and the
 * background probes that bring a node left out back. Never more than N - quorum nodes are left
 * out. The fan-out itself is {@link Quorum}'s. Thread-safe.
 *
 * @param <N> what a node is to the caller (its calls, or its store)
 */
final class QuorumHealth<N> {

    /** One daemon thread for every quorum's probes and late records; the probes themselves run on each quorum's pool. */
    private static final ScheduledExecutorService PROBES = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "lockstep-redlock-probes");
        t.setDaemon(true);
        return t;
    });

    private final List<N> nodes;
    private final int quorum;
    private final Function<N, ?> probe;
    private final Executor pool;
    private final MasterHealth[] health;
    /**
     * The shortest wait of any fan-out so far: a probe must answer within it to bring a node back (a
     * node that answers only slower would miss the waits of the steps and flap out again). An
     * admin's read with a long wait does not raise it.
     */
    private final AtomicLong probeWaitNanos = new AtomicLong(Long.MAX_VALUE);

    /**
     * @param probe tried every {@link MasterHealth#PROBE_EVERY} on each node left out, on {@code pool}:
     *     an answer within the shortest wait brings it back
     */
    QuorumHealth(List<N> nodes, List<String> names, int quorum, Function<N, ?> probe, Executor pool) {
        this.nodes = nodes;
        this.quorum = quorum;
        this.probe = probe;
        this.pool = pool;
        this.health = new MasterHealth[nodes.size()];
        for (int i = 0; i < health.length; i++) {
            health[i] = new MasterHealth(names.get(i));
        }
        PROBES.scheduleWithFixedDelay(new Prober(this), MasterHealth.PROBE_EVERY.toMillis(), MasterHealth.PROBE_EVERY.toMillis(),
                TimeUnit.MILLISECONDS);
    }

    /** Probes the nodes left out; holds the health weakly, and ends once it is gone (its quorum closed and dropped). */
    private static final class Prober implements Runnable {
        private final java.lang.ref.WeakReference<QuorumHealth<?>> health;

        Prober(QuorumHealth<?> health) {
            this.health = new java.lang.ref.WeakReference<>(health);
        }

        @Override
        public void run() {
            QuorumHealth<?> h = health.get();
            if (h == null) {
                throw new IllegalStateException("quorum gone"); // ends this schedule
            }
            try {
                h.probeLeftOut();
            } catch (Throwable t) {
                // anything else must not end the schedule: only a probe brings a master back
            }
        }
    }

    /** A fan-out waits {@code wait}: the probes' limit is the shortest seen. */
    void waitSeen(Duration wait) {
        probeWaitNanos.accumulateAndGet(wait.toNanos(), Math::min);
    }

    private void probeLeftOut() {
        for (int i = 0; i < health.length; i++) {
            MasterHealth h = health[i];
            if (!h.startProbe()) {
                continue;
            }
            N node = nodes.get(i);
            try {
                long waitNanos = probeWaitNanos.get();
                pool.execute(() -> {
                    boolean answered = false;
                    long started = System.nanoTime();
                    try {
                        probe.apply(node);
                        answered = System.nanoTime() - started <= waitNanos; // slower than the wait: still too slow to ask
                    } catch (RuntimeException e) {
                        // still unreachable: probed again next time
                    } finally {
                        h.probed(answered);
                    }
                });
            } catch (RuntimeException | Error e) {
                h.probed(false); // not sent (the pool is full, or no thread could be made): next time
            }
        }
    }

    /** Each node's state by name, in order: {@code closed} (asked) or {@code open} (left out). */
    Map<String, String> states() {
        Map<String, String> states = new LinkedHashMap<>();
        for (MasterHealth h : health) {
            states.put(h.name(), h.state());
        }
        return states;
    }

    /** The nodes left out, in node order. */
    List<Integer> leftOut() {
        List<Integer> out = new ArrayList<>(2);
        for (int i = 0; i < health.length; i++) {
            if (!health[i].asked()) {
                out.add(i);
            }
        }
        return out;
    }

    /**
     * Tells node {@code i}'s health how it took part in a call: no answer within the wait, too many
     * calls in flight, or unreachable count against it; any answer of the server's (an error too)
     * for it.
     */
    void record(int i, Quorum.Vote<?> v, CompletableFuture<?> future, long nanos) {
        MasterHealth h = health[i];
        if (v.kind() != Quorum.Kind.FAILED) {
            h.answered(nanos);
            return;
        }
        if ("interrupted".equals(v.failure())) {
            return; // our thread was stopped (a shutdown): says nothing of the node
        }
        Throwable cause = future.isCompletedExceptionally() ? future.handle((r, t) -> t).getNow(null) : null;
        cause = cause instanceof java.util.concurrent.CompletionException && cause.getCause() != null ? cause.getCause() : cause;
        if (cause instanceof QuorumCalls.LeftOut) {
            return;
        }
        if (cause == null || cause instanceof QuorumCalls.Busy || cause instanceof LockException le
                && le.getCause() instanceof redis.clients.jedis.exceptions.JedisConnectionException) {
            fail(h, nanos, cause != null ? cause : new TimeoutException(v.failure()));
        } else {
            h.answered(nanos); // the server answered, with an error
        }
    }

    /**
     * A call not awaited (the answers in decided first) still tells node {@code i}'s health how it
     * went: an answer within the wait for it, none by then against it. Otherwise a stalled node in a
     * step that a majority settles early would never be left out.
     */
    void recordLater(int i, CompletableFuture<?> future, long sent, Duration wait) {
        MasterHealth h = health[i];
        AtomicBoolean recorded = new AtomicBoolean();
        future.whenComplete((r, t) -> {
            long nanos = System.nanoTime() - sent;
            // An answer (or error) within the wait counts now; a late one is the timer's to judge.
            if (nanos <= wait.toNanos() && recorded.compareAndSet(false, true)) {
                record(i, Quorum.vote("", future, 0, wait), future, nanos);
            }
        });
        long deadline = sent + wait.toNanos();
        PROBES.schedule(() -> {
            long late = System.nanoTime() - deadline;
            // A timer that ran a whole wait late is our own pause (GC, CPU): it says nothing of the node.
            if (!future.isDone() && late <= wait.toNanos() && recorded.compareAndSet(false, true)) {
                fail(h, System.nanoTime() - sent, new TimeoutException("no answer within " + wait.toMillis() + " ms"));
            }
        }, Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
    }

    /**
     * Counts a failure against a node, unless as many nodes as may be (N - quorum) are left out
     * already: leaving out one more would leave too few to decide anything without it, so it stays
     * asked (and costs its wait) whatever it does.
     */
    private synchronized void fail(MasterHealth h, long nanos, Throwable why) {
        if (h.asked() && leftOut().size() >= nodes.size() - quorum) {
            return;
        }
        h.failed(nanos, why);
    }
}
