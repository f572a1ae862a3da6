package io.lockstep.scheduler.lock;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;

/**
 * {@link Permits} in one JVM, with the rules of the Redis semaphore ({@code semaphore_acquire.lua}):
 * n permits per limit, each a lease; waiters queued by priority (then id), dropped a couple of
 * seconds after their last try; a try gets a permit only while fewer waiters come before it than
 * permits are free. Leases count on the monotonic clock; a watched permit is renewed by nobody (a
 * test stands in for a holder that died by not releasing it). Thread-safe.
 */
public final class InMemoryPermits implements Permits {

    /** How long a waiter stays queued without trying, as on Redis. */
    static final Duration WAITER_TTL = Duration.ofSeconds(2);

    private final Map<String, Limit> limits = new HashMap<>();
    private long fence;

    private static final class Limit {
        final Map<Integer, Held> held = new HashMap<>();
        final TreeSet<Waiting> queue = new TreeSet<>((a, b) -> a.priority != b.priority ? Long.compare(a.priority, b.priority)
                : a.id.compareTo(b.id));
        final Map<String, Waiting> waiters = new HashMap<>();
    }

    private record Waiting(String id, long priority, long[] expires) {}

    private final class Held implements Permit {
        final String limit;
        final int index;
        final long token;
        final String holder;
        final Duration lease;
        volatile long endsNanos;
        /** Renewed until released: in one JVM its holder lives as long as the store. */
        volatile boolean watched;

        Held(String limit, int index, long token, String holder, Duration lease) {
            this.limit = limit;
            this.index = index;
            this.token = token;
            this.holder = holder;
            this.lease = lease;
            this.endsNanos = System.nanoTime() + lease.toNanos();
        }

        @Override
        public String limit() {
            return limit;
        }

        @Override
        public int index() {
            return index;
        }

        @Override
        public long fencingToken() {
            return token;
        }

        @Override
        public void watch(Runnable onLost) {
            watched = true;
        }

        @Override
        public boolean release() {
            synchronized (InMemoryPermits.this) {
                Limit l = limits.get(limit);
                if (l != null && l.held.get(index) == this) {
                    l.held.remove(index);
                    return true;
                }
                return false;
            }
        }

        @Override
        public String toString() {
            return limit + "#" + index + " (token " + token + ")";
        }
    }

    @Override
    public synchronized Optional<Permit> tryAcquire(String limit, int size, String waiter, long priorityMillis, String holder,
            Duration lease) {
        long now = System.nanoTime();
        Limit l = limits.computeIfAbsent(limit, k -> new Limit());
        l.held.values().removeIf(h -> !h.watched && h.endsNanos - now <= 0);
        l.waiters.values().removeIf(w -> {
            boolean gone = w.expires[0] - now <= 0;
            if (gone) {
                l.queue.remove(w);
            }
            return gone;
        });
        List<Integer> free = new ArrayList<>();
        for (int i = 0; i < size; i++) {
            if (!l.held.containsKey(i)) {
                free.add(i);
            }
        }
        int before = l.queue.size();
        if (!waiter.isEmpty()) {
            Waiting w = l.waiters.computeIfAbsent(waiter, id -> {
                Waiting n = new Waiting(id, priorityMillis < 0 ? System.currentTimeMillis() : priorityMillis, new long[1]);
                l.queue.add(n);
                return n;
            });
            w.expires[0] = now + WAITER_TTL.toNanos();
            before = l.queue.headSet(w).size();
        }
        if (before >= free.size()) {
            return Optional.empty();
        }
        Held h = new Held(limit, free.get(0), ++fence, holder, lease);
        l.held.put(h.index, h);
        Waiting w = l.waiters.remove(waiter);
        if (w != null) {
            l.queue.remove(w);
        }
        return Optional.of(h);
    }

    @Override
    public synchronized void leave(String limit, String waiter) {
        Limit l = limits.get(limit);
        if (l != null) {
            Waiting w = l.waiters.remove(waiter);
            if (w != null) {
                l.queue.remove(w);
            }
        }
    }

    @Override
    public synchronized Map<String, State> states(Map<String, Integer> sizes) {
        Map<String, State> out = new java.util.LinkedHashMap<>();
        long now = System.nanoTime();
        sizes.forEach((name, size) -> {
            Limit l = limits.get(name);
            List<Holder> holders = new ArrayList<>();
            List<Waiter> waiters = new ArrayList<>();
            if (l != null) {
                l.held.values().stream().filter(h -> h.watched || h.endsNanos - now > 0).sorted((a, b) -> Integer.compare(a.index, b.index))
                        .forEach(h -> holders.add(new Holder(h.index, h.holder, h.watched ? h.lease : Duration.ofNanos(h.endsNanos - now))));
                l.queue.forEach(w -> waiters.add(new Waiter(w.id, Instant.ofEpochMilli(w.priority))));
            }
            out.put(name, new State(size, holders, waiters));
        });
        return out;
    }
}
