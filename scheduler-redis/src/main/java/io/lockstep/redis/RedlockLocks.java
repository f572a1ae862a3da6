package io.lockstep.redis;

import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.github.resilience4j.circuitbreaker.CircuitBreakerConfig;
import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.Watchdog;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import redis.clients.jedis.UnifiedJedis;

/**
 * The lock API over N independent masters (Redlock), as the Redis distlock page describes it, with
 * a fencing token that never goes back across quorums. {@link RedisLocks} delegates here when built
 * with several masters; the lock it hands out is the same {@link RedisLock}.
 *
 * <p><b>Acquire.</b> {@code lock_acquire.lua} ({@code SET NX PX} and the node's fence step) on every
 * node in parallel, each answer awaited at most {@link #nodeWait} (5 % of the lease, at least
 * {@link #MIN_NODE_WAIT}). The lock is ours when a quorum (N/2 + 1) granted it and time is left:
 * validity = lease - elapsed - drift (1 % of the lease + 2 ms, {@link Watchdog#validity}), counted
 * from the moment the acquire was sent. Otherwise it is released on <em>every</em> node, those that
 * seemed to fail included (their call may have landed), and, unless a quorum said the lock is held,
 * tried again after a random delay ({@code retryDelay} plus up to as much again), up to
 * {@code retries} times.
 *
 * <p><b>Fencing across quorums.</b> Each node's counter alone is not enough: two majorities can
 * answer different maxima. So the token is the highest counter among the nodes that granted the
 * lock, and before the lock is handed out {@code fence_raise.lua} raises the counters of a quorum
 * to it. Any later majority shares a node with that quorum, whose counter is at least our token,
 * so its token is higher. Assumes: a node that lost its counter (restart without persistence)
 * answers max(counter + 1, its clock in microseconds), so its clock must not be behind by more than
 * the time since the token was handed out; and the restart quarantine below.
 *
 * <p><b>Restart quarantine.</b> A node whose uptime is shorter than {@code maxLease} (the longest
 * lease handed out, so the longest a lock key can live) may have restarted without the keys it
 * held: it is written to, but does not count. Leases longer than {@code maxLease} are refused.
 *
 * <p>Extend needs a quorum within the lock's validity and restarts it from the send; release goes
 * to every node.
 *
 * <p><b>A stalled minority.</b> Masters that stop answering are left out ({@link Quorum},
 * {@link MasterHealth}). An acquire returns once a majority granted it, an extend once a majority
 * decided it; what is still on its way to the others lands later. A release goes to each master
 * only after the acquire there ended (else it could land first and leave the lock on that master
 * for its lease), and waits for every master asked, so that the next acquire of the same lock
 * never meets a release still on its way. Masters left out get the release too, unawaited.
 * Thread-safe.
 */
final class RedlockLocks {

    /** The shortest wait for a node's answer, whatever the lease. */
    static final Duration MIN_NODE_WAIT = Duration.ofMillis(10);
    /** The share of the lease each node's answer is awaited. */
    static final double NODE_WAIT_SHARE = 0.05;

    private final RedisLocks locks;
    final Quorum<RedisCalls> nodes;
    private final int retries;
    private final Duration retryDelay;
    final Duration maxLease;

    RedlockLocks(RedisLocks locks, Quorum<RedisCalls> nodes, int retries, Duration retryDelay, Duration maxLease) {
        this.locks = locks;
        this.nodes = nodes;
        this.retries = retries;
        this.retryDelay = retryDelay;
        this.maxLease = maxLease;
    }

    /**
     * Redlock over {@code masters} (named {@code names}, in order): each with a circuit breaker of
     * its own from {@code breaker} (null: none), so that a dead master fails fast while the others
     * still answer, and its restart quarantine of {@code maxLease}; a master that stalls is left out
     * and probed by a {@code PING} ({@link Quorum}).
     */
    static RedlockLocks over(RedisLocks locks, List<UnifiedJedis> masters, List<String> names, CircuitBreakerConfig breaker, int retries,
            Duration retryDelay, Duration maxLease) {
        // One circuit breaker per master: a dead master fails fast, the others still answer.
        List<RedisCalls> nodes = new ArrayList<>();
        for (int i = 0; i < masters.size(); i++) {
            nodes.add(new RedisCalls(masters.get(i), names.get(i),
                    breaker == null ? null : CircuitBreaker.of("lockstep-locks-" + i, breaker), maxLease));
        }
        return new RedlockLocks(locks, new Quorum<>(nodes, names, Quorum.LOCKS_IN_FLIGHT, c -> c.jedis.ping()), retries, retryDelay, maxLease);
    }

    /** The state most masters' circuit breakers are in ({@link RedisLocks#circuitState()}). */
    String circuitState() {
        Map<String, Long> counts = circuitStates().values().stream()
                .collect(java.util.stream.Collectors.groupingBy(s -> s, java.util.stream.Collectors.counting()));
        // The state a majority of the masters' breakers are in; none: some fail, the rest still decide.
        return counts.entrySet().stream().filter(e -> e.getValue() >= nodes.quorum()).map(Map.Entry::getKey).findFirst()
                .orElse("half_open");
    }

    /** Each master's circuit breaker state by its name, in order ({@link RedisLocks#circuitStates()}). */
    Map<String, String> circuitStates() {
        Map<String, String> states = new java.util.LinkedHashMap<>();
        for (int i = 0; i < nodes.nodes().size(); i++) {
            String name = nodes.names().get(i);
            // Left out by the fan-out (it stalled: MasterHealth) reads as open too.
            states.put(name, "open".equals(nodes.states().get(name)) ? "open" : nodes.nodes().get(i).circuitState());
        }
        return states;
    }

    static Duration nodeWait(Duration lease) {
        Duration share = Duration.ofNanos((long) (lease.toNanos() * NODE_WAIT_SHARE));
        return share.compareTo(MIN_NODE_WAIT) < 0 ? MIN_NODE_WAIT : share;
    }

    /**
     * One decision (with up to {@code retries} more after a split vote): see the class comment.
     *
     * @return the lock, or empty when a quorum said another owner holds it, or no quorum formed
     * @throws LockException when too few nodes answered and count to decide anything
     */
    java.util.Optional<RedisLock> tryAcquire(String name, String key, Duration lease) {
        if (lease.compareTo(maxLease) > 0) {
            throw new IllegalArgumentException("lock lease must be at most maxLease (" + maxLease + "; the restart quarantine), but was "
                    + lease);
        }
        Duration wait = nodeWait(lease);
        for (int attempt = 0; ; attempt++) {
            String token = LockScripts.newToken();
            long sent = System.nanoTime();
            Quorum.Asked<Long> asked = nodes.askTracked(c -> c.asLong("acquire", c.batch("acquire", List.of(key),
                    k -> new RedisCalls.Call(LockScripts.ACQUIRE, List.of(k, k + ":fence"), List.of(token,
                            Long.toString(lease.toMillis()), Long.toString(LockScripts.FENCE_TTL.toMillis())))).get(0)), wait,
                    // settled once a majority granted it: a stalled minority is not waited for (otherwise every node
                    // asked is, so that the release below comes after what they took)
                    in -> Quorum.count(in, fence -> fence > 0) >= nodes.quorum());
            List<Quorum.Vote<Long>> votes = asked.votes();
            int granted = Quorum.count(votes, fence -> fence > 0);
            int held = Quorum.count(votes, fence -> fence == 0);
            String who = Quorum.describe(votes, fence -> fence > 0 ? "granted (fence " + fence + ")" : "held by another owner");
            if (granted >= nodes.quorum()) {
                long fence = 0;
                for (Quorum.Vote<Long> v : votes) {
                    if (v.counts() && v.answer() > fence) {
                        fence = v.answer();
                    }
                }
                long agreed = fence;
                List<Quorum.Vote<Long>> raised = nodes.ask(c -> c.asLong("fence", c.batch("fence", List.of(key),
                        k -> new RedisCalls.Call(FENCE_RAISE, List.of(k + ":fence"), List.of(token, Long.toString(agreed),
                                Long.toString(LockScripts.FENCE_TTL.toMillis())))).get(0)), wait,
                        in -> Quorum.written(in) >= nodes.quorum());
                long elapsed = System.nanoTime() - sent;
                if (Quorum.written(raised) >= nodes.quorum() && elapsed < Watchdog.validity(lease).toNanos()) {
                    log("lock_acquired", key, token, elapsed, true, who).addKeyValue("fencing_token", agreed).log("lock acquired");
                    locks.meters.acquire("acquired");
                    RedisLock lock = new RedisLock(locks, name, key, token, agreed, lease, sent);
                    lock.acquireCalls = asked.calls(); // its release reaches each master after the acquire there ended
                    return java.util.Optional.of(lock);
                }
                who = who + (elapsed >= Watchdog.validity(lease).toNanos() ? "; no validity left after " + elapsed / 1_000_000 + " ms"
                        : "; the fence raise reached too few nodes");
            }
            // Not ours: give back whatever we took, on every node (a call that seemed to fail may have landed).
            nodes.tellAfter(c -> c.batch("release", List.of(key), k -> new RedisCalls.Call(LockScripts.RELEASE, List.of(k), List.of(token))), wait,
                    null, asked.calls());
            if (held >= nodes.quorum()) {
                log("lock_contended", key, token, System.nanoTime() - sent, false, who).log("lock held by another owner");
                locks.meters.acquire("contended");
                return java.util.Optional.empty();
            }
            if (Quorum.counting(votes) < nodes.quorum()) {
                locks.meters.acquire("error");
                throw nodes.tooFew("acquire " + key, votes, who);
            }
            if (attempt >= retries) {
                log("lock_contended", key, token, System.nanoTime() - sent, false, who)
                        .log("no quorum for the lock after " + (retries + 1) + " tries; released everywhere");
                locks.meters.acquire("contended");
                return java.util.Optional.empty();
            }
            try {
                long base = retryDelay.toNanos();
                TimeUnit.NANOSECONDS.sleep(base + ThreadLocalRandom.current().nextLong(base + 1));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return java.util.Optional.empty();
            }
        }
    }

    /** Extends each lock on every node; per lock, whether a quorum still owned it. */
    List<Boolean> extend(List<RedisLock> held) {
        Duration wait = nodeWait(held.get(0).lease());
        List<Quorum.Vote<List<Object>>> votes = nodes.ask(c -> c.batch("extend", held, RedisLock::extendCall), wait,
                in -> nodes.decidedPerItem(in, held.size(), (replies, i) -> RedisCalls.asString(replies.get(i)).equals("1")));
        if (Quorum.counting(votes) < nodes.quorum()) {
            throw nodes.tooFew("extend", votes, Quorum.describe(votes, r -> "answered"));
        }
        return nodes.majorityPerItem(votes, held.size(), (replies, i) -> RedisCalls.asString(replies.get(i)).equals("1"));
    }

    /** Releases the lock on every node; whether a quorum still held it for us. */
    boolean release(RedisLock lock) {
        List<Quorum.Vote<Long>> votes = nodes.tellAfter(c -> c.asLong("release", c.batch("release", List.of(lock.key()),
                k -> new RedisCalls.Call(LockScripts.RELEASE, List.of(k), List.of(lock.token()))).get(0)), nodeWait(lock.lease()),
                // every master asked, not just a majority: an acquire of the same lock right after (this process's
                // next cycle) must not find a release still on its way, which would read as held by another owner
                null, lock.acquireCalls);
        int owned = Quorum.count(votes, n -> n == 1L);
        if (owned < nodes.quorum() && Quorum.counting(votes) < nodes.quorum()) {
            throw nodes.tooFew("release " + lock.key(), votes, Quorum.describe(votes, n -> n == 1L ? "released" : "not ours"));
        }
        return owned >= nodes.quorum();
    }

    private org.slf4j.spi.LoggingEventBuilder log(String event, String key, String token, long elapsedNanos, boolean success, String votes) {
        return RedisLocks.EVENTS.atDebug().addKeyValue("event", event).addKeyValue("lock_name", key).addKeyValue("action", "acquire")
                .addKeyValue("identifier", token).addKeyValue("duration_ms", elapsedNanos / 1_000_000).addKeyValue("success", success)
                .addKeyValue("votes", votes);
    }

    static final LuaScript FENCE_RAISE = LuaScript.load("fence_raise.lua");
}
