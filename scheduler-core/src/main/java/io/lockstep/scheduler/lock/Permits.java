package io.lockstep.scheduler.lock;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Cluster-wide concurrency limits ({@code limits:} and a job's {@code uses:}), as a store keeps
 * them ({@link LockProvider#permits}): a limit of size n is a semaphore of n permits, each a lease
 * with a fencing token of its own, renewed by a watchdog while its run goes on; a run waiting for
 * one waits in a queue ordered by its slot's time. Thread-safe.
 */
public interface Permits {

    /**
     * One try for a permit of {@code limit} as the waiter {@code waiter}, which joins the limit's
     * queue at {@code priorityMillis} (its slot's time) and stays in it a couple of seconds past
     * its last try; it gets a permit only when fewer waiters come before it than permits are free.
     *
     * @param size the limit's size (its permits)
     * @param holder what the store shows as the permit's holder ({@code job@slot on worker})
     * @return the permit, or empty when none is free for it now
     * @throws LockException when the store cannot be reached
     */
    Optional<Permit> tryAcquire(String limit, int size, String waiter, long priorityMillis, String holder, Duration lease);

    /** The waiter gave up (its slot's grace ended, its run stopped): it leaves the queue now. */
    void leave(String limit, String waiter);

    /** Each limit's holders and waiters, for {@code status}. */
    Map<String, State> states(Map<String, Integer> limits);

    /** A permit held: renewed by the store's watchdog from {@link #watch} until {@link #release}. */
    interface Permit {
        String limit();

        /** Which permit of the limit (0-based). */
        int index();

        /** Strictly increasing per permit of the limit: a resource the limit guards fences per permit. */
        long fencingToken();

        /** Has it renewed every lease/3 until released; {@code onLost} is called once if it is lost. */
        void watch(Runnable onLost);

        /**
         * Gives it back, owner-checked.
         *
         * @return whether it was still ours
         */
        boolean release();
    }

    /** One permit held: by whom ({@code job@slot on worker}), and its lease left. */
    record Holder(int permit, String holder, Duration leaseLeft) {}

    /** One waiter: which run, and its place (its slot's time). */
    record Waiter(String waiter, Instant priority) {}

    /** A limit's holders and waiters (first first). */
    record State(int size, List<Holder> holders, List<Waiter> waiters) {
        public State {
            holders = List.copyOf(holders);
            waiters = List.copyOf(waiters);
        }
    }
}
