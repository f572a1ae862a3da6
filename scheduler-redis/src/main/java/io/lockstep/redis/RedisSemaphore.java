package io.lockstep.redis;

import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.Watchdog;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * A cluster-wide semaphore of {@link #permits()} permits, from {@link RedisLocks#semaphore}: at most
 * that many holders at once, each holding one permit for a lease, extended by hand or by the
 * watchdog, released owner-checked. A permit is a {@link RedisLock}: permit {@code i} of semaphore
 * {@code s} is the lock {@code s#i}, with its own fencing token, strictly increasing per permit
 * (a resource a semaphore guards fences per permit: {@link #permitOf}).
 *
 * <pre>{@code
 * RedisSemaphore db = locks.semaphore("reporting-db", 2);
 * try (RedisLock permit = db.acquire(Duration.ofSeconds(30), Duration.ofSeconds(10)).orElseThrow()) {
 *     permit.autoRenew(p -> worker.interrupt());
 *     runReport();
 * }
 * }</pre>
 *
 * <p>Keys: {@code <prefix>:lock:{<name>}#<i>} holds permit i's owner token with its lease as ttl,
 * {@code ...#<i>:fence} its fence counter; {@code <prefix>:lock:{<name>}:waiters} and
 * {@code :waiting} the queue of {@link #acquire} on one server.
 *
 * <p><b>On one server</b> (standalone, Sentinel, Cluster) a try is one script call
 * ({@code semaphore_acquire.lua}); {@link #acquire} waits in a queue: permits go to the waiters in
 * the order they first asked, and a {@link #tryAcquire} never jumps it. <b>On Redlock</b> each permit
 * is a Redlock lock: a try asks for the permits one by one, from a random one, until a majority
 * grants one; waiters are not ordered there. Thread-safe.
 */
public final class RedisSemaphore {

    /** How long a waiter stays in the queue without trying again. */
    static final Duration WAITER_TTL = Duration.ofSeconds(2);
    /** The longest wait between two tries of {@link #acquire}: well within {@link #WAITER_TTL}. */
    private static final long MAX_POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(200);
    private static final LuaScript ACQUIRE = LuaScript.load("semaphore_acquire.lua");

    private final RedisLocks locks;
    private final String name;
    private final int permits;
    private final String tag;

    RedisSemaphore(RedisLocks locks, String name, int permits) {
        this.locks = locks;
        this.name = name;
        this.permits = permits;
        this.tag = locks.lockKey(name); // <prefix>:lock:{<name>}
    }

    /** The semaphore's name. */
    public String name() {
        return name;
    }

    /** How many holders it admits at once. */
    public int permits() {
        return permits;
    }

    /** The key of permit {@code i} (0-based). */
    String permitKey(int i) {
        return tag + "#" + i;
    }

    /** Which permit (0-based) {@code permit} is, for a resource that fences per permit. */
    public static int permitOf(RedisLock permit) {
        return Integer.parseInt(permit.name().substring(permit.name().lastIndexOf('#') + 1));
    }

    /**
     * Takes a permit if one is free and nobody waits for it (one round trip on one server).
     *
     * @return the permit (a {@link RedisLock} named {@code <name>#<i>}), or empty
     * @throws LockException when Redis cannot be reached
     */
    public Optional<RedisLock> tryAcquire(Duration lease) {
        return attempt(lease, "", -1, WAITER_TTL, LockScripts.newToken());
    }

    /**
     * Takes a permit, waiting up to {@code wait}: on one server in a queue, first come first
     * served (tries every 5 ms doubling to 200 ms, with jitter).
     *
     * @return the permit, or empty when none came within {@code wait}
     * @throws InterruptedException when the thread is interrupted while waiting (it leaves the queue)
     */
    public Optional<RedisLock> acquire(Duration lease, Duration wait) throws InterruptedException {
        String waiter = LockScripts.newToken(); // its owner token too: a try repeated after a lost reply finds its permit
        long deadline = System.nanoTime() + wait.toNanos();
        long ceiling = TimeUnit.MILLISECONDS.toNanos(5);
        boolean done = false;
        try {
            while (true) {
                Optional<RedisLock> permit = attempt(lease, waiter, -1, WAITER_TTL, waiter);
                if (permit.isPresent()) {
                    done = true;
                    return permit;
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return Optional.empty();
                }
                TimeUnit.NANOSECONDS.sleep(Math.min(left, ThreadLocalRandom.current().nextLong(ceiling / 2, ceiling + 1)));
                ceiling = Math.min(MAX_POLL_NANOS, ceiling * 2);
            }
        } finally {
            if (!done) {
                leave(waiter);
            }
        }
    }

    /**
     * One try as a named waiter ({@code ""}: none) of the given priority (lower first; -1: the
     * server's time at its first try), which stays in the queue {@code waiterTtl} past its last try.
     * The scheduler's limits use it with the slot's time, so that waiting slots run in slot order,
     * and a {@code holder} label ({@code job@slot on worker}, no spaces in the job or slot) that
     * {@link #holders} shows: the owner token is the label, a space, and the waiter's id (unique
     * per caller, and the same on each of its tries: a try repeated after a lost reply finds the
     * permit it took).
     */
    Optional<RedisLock> tryAcquire(Duration lease, String waiter, long priority, Duration waiterTtl, String holder) {
        return attempt(lease, waiter, priority, waiterTtl, holder.isEmpty() ? waiter : holder + " " + waiter);
    }

    private Optional<RedisLock> attempt(Duration lease, String waiter, long priority, Duration waiterTtl, String token) {
        if (lease.toMillis() < 10) {
            throw new IllegalArgumentException("lease must be at least 10ms, but was " + lease);
        }
        if (locks.redlock() != null) {
            return redlockTry(lease); // each try its own token: a lost reply leaves a permit for its lease
        }
        List<String> keys = new ArrayList<>(2 + 2 * permits);
        keys.add(tag + ":waiters");
        keys.add(tag + ":waiting");
        for (int i = 0; i < permits; i++) {
            keys.add(permitKey(i));
            keys.add(permitKey(i) + ":fence");
        }
        long sent = System.nanoTime();
        RedisCalls calls = locks.server().calls();
        List<?> reply = (List<?>) calls.call("semaphore", new RedisCalls.Call(ACQUIRE, keys, List.of(token,
                Long.toString(lease.toMillis()), Long.toString(LockScripts.FENCE_TTL.toMillis()), waiter, Long.toString(priority),
                Long.toString(waiterTtl.toMillis()), Integer.toString(ThreadLocalRandom.current().nextInt(permits)))));
        long index = calls.asLong("semaphore", reply.get(0));
        if (index < 0) {
            locks.meters.acquire("contended");
            return Optional.empty();
        }
        long fence = calls.asLong("semaphore", reply.get(1));
        RedisLock permit = new RedisLock(locks, name + "#" + index, permitKey((int) index), token, fence, lease, sent);
        if (System.nanoTime() - sent >= Watchdog.validity(lease).toNanos()) {
            permit.release(); // the round trip used up its validity: as a lock's acquire, no permit
            locks.meters.acquire("expired_on_arrival");
            return Optional.empty();
        }
        locks.meters.acquire("acquired");
        return Optional.of(permit);
    }

    /** Redlock: the permits one by one, from a random one, until a majority grants one. */
    private Optional<RedisLock> redlockTry(Duration lease) {
        int start = ThreadLocalRandom.current().nextInt(permits);
        for (int k = 0; k < permits; k++) {
            int i = (start + k) % permits;
            Optional<RedisLock> permit = locks.redlock().tryAcquire(name + "#" + i, permitKey(i), lease);
            if (permit.isPresent()) {
                return permit;
            }
        }
        return Optional.empty();
    }

    /** A waiter that gave up leaves the queue (else it would hold its place until {@link #WAITER_TTL}). */
    void leave(String waiter) {
        if (locks.redlock() != null) {
            return;
        }
        try {
            locks.server().calls().jedis.zrem(tag + ":waiters", waiter);
            locks.server().calls().jedis.zrem(tag + ":waiting", waiter);
        } catch (RuntimeException e) {
            // it leaves the queue by itself within WAITER_TTL
        }
    }

    /**
     * One holder: which permit, who holds it (the scheduler's {@code job@slot on worker}; empty for
     * the lock API's own) and how long its lease has left by Redis ({@link #holders}).
     */
    public record Holder(int permit, String holder, Duration leaseLeft) {}

    /** One waiter: its priority (ms) and id ({@link #waiters}). */
    public record Waiter(String id, Instant priority) {}

    /** The permits held now (one server; on Redlock, as the first master answers). */
    public List<Holder> holders() {
        var jedis = locks.redlock() != null ? locks.redlock().nodes.nodes().get(0).jedis : locks.server().calls().jedis;
        List<Holder> held = new ArrayList<>();
        for (int i = 0; i < permits; i++) {
            String token = jedis.get(permitKey(i));
            long ttl = jedis.pttl(permitKey(i));
            if (token != null && ttl > 0) {
                int space = token.lastIndexOf(' ');
                held.add(new Holder(i, space < 0 ? "" : token.substring(0, space), Duration.ofMillis(ttl)));
            }
        }
        return held;
    }

    /** The waiters, first first (one server; none on Redlock). */
    public List<Waiter> waiters() {
        if (locks.redlock() != null) {
            return List.of();
        }
        var jedis = locks.server().calls().jedis;
        long now = ServerClock.millis(jedis);
        java.util.Set<String> live = new java.util.HashSet<>(jedis.zrangeByScore(tag + ":waiting", now, Double.POSITIVE_INFINITY));
        List<Waiter> out = new ArrayList<>();
        for (var t : jedis.zrangeWithScores(tag + ":waiters", 0, -1)) {
            if (live.contains(t.getElement())) { // not one that stopped asking (dropped at the next try)
                out.add(new Waiter(t.getElement(), Instant.ofEpochMilli((long) t.getScore())));
            }
        }
        return out;
    }
}
