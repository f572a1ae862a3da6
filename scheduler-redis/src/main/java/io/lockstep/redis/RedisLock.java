package io.lockstep.redis;

import io.lockstep.scheduler.lock.Watchdog;
import java.time.Duration;
import java.util.List;
import java.util.function.Consumer;

/**
 * A held lock from {@link RedisLocks}: its name, owner token, fencing token and remaining
 * validity. {@link #isHeld()} and {@link #remaining()} are read from the monotonic clock without a
 * round trip; they turn false and zero before Redis lets anyone else take the lock (the lease is
 * counted from the moment the acquire or the last extension was sent, less a drift allowance).
 *
 * <p>{@link #close()} releases it, so try-with-resources gives it back. Thread-safe.
 */
public final class RedisLock implements AutoCloseable {

    private final RedisLocks locks;
    private final String name;
    private final String key;
    private final String token;
    private final long fencingToken;
    private final Duration lease;
    private volatile Watchdog<RedisLock>.Watch watch;
    private volatile Consumer<RedisLock> onLost;
    private volatile boolean released;
    private final long acquiredNanos;
    /**
     * On Redlock, the acquire's call to each master (one may still be on its way when a majority
     * granted it): the release goes to each master only after it ended there. Null on one server.
     */
    volatile List<? extends java.util.concurrent.CompletableFuture<?>> acquireCalls = null;

    RedisLock(RedisLocks locks, String name, String key, String token, long fencingToken, Duration lease, long sentNanos) {
        this.acquiredNanos = sentNanos;
        this.locks = locks;
        this.name = name;
        this.key = key;
        this.token = token;
        this.fencingToken = fencingToken;
        this.lease = lease;
        this.watch = locks.watchdog.watch(this, lease, sentNanos, false);
    }

    /** The lock's name, as given to {@link RedisLocks#tryAcquire}. */
    public String name() {
        return name;
    }

    /** The Redis key that holds the lock. */
    public String key() {
        return key;
    }

    /** The random owner token stored in the key; only its holder can extend or release the lock. */
    public String token() {
        return token;
    }

    /** The lock's fencing token: strictly increasing per lock name across all holders. */
    public long fencingToken() {
        return fencingToken;
    }

    /** The lease each acquire and extension grants. */
    public Duration lease() {
        return lease;
    }

    /** How long the lock is still ours for certain; zero once released, lost or expired. */
    public Duration remaining() {
        return released ? Duration.ZERO : watch.remaining();
    }

    /** Whether the lock is still ours: not released, not declared lost, and its lease not run out. */
    public boolean isHeld() {
        return !released && !watch.isLost();
    }

    /**
     * Extends the lease by {@link #lease()} from now, only if we still own the lock.
     *
     * @return whether we still owned it; when false the lock is lost for good
     * @throws io.lockstep.scheduler.lock.LockException when Redis cannot be reached (the lock is
     *     then still counted as held until its current lease runs out)
     */
    public boolean extend() {
        if (released || watch.lostReason().isPresent()) {
            return false;
        }
        long sent = System.nanoTime();
        boolean owned = locks.extend(this);
        if (owned) {
            watch.renewed(sent);
        } else if (watch.markLost("extend refused: the token no longer owns the lock")) {
            lost("extend refused: the token no longer owns the lock");
        }
        return owned;
    }

    /**
     * Has the lock renewed every lease/3 by the watchdog thread until it is released; when a renewal
     * is refused or its lease runs out unconfirmed (Redis unreachable), {@code onLost} is called once,
     * on the watchdog thread, and renewal stops. Interrupt your work from it.
     *
     * @return this lock
     */
    public synchronized RedisLock autoRenew(Consumer<RedisLock> onLost) {
        this.onLost = onLost;
        Watchdog<RedisLock>.Watch old = watch;
        if (!released && old.lostReason().isEmpty()) {
            long valid = Watchdog.validity(lease).toNanos();
            watch = locks.watchdog.watch(this, lease, old.deadlineNanos() - valid, true);
            old.markLost("replaced by a renewing watch");
        }
        return this;
    }

    /**
     * Deletes the lock if we still own it, and stops renewing it.
     *
     * @return whether it was still ours (false: it had expired, or another holder has it now)
     * @throws io.lockstep.scheduler.lock.LockException when Redis cannot be reached (the lock then
     *     expires after its lease)
     */
    public boolean release() {
        synchronized (this) {
            if (released) {
                return false;
            }
            released = true;
        }
        watch.markLost("released");
        long sent = System.nanoTime();
        boolean owned = locks.release(this);
        RedisLocks.EVENTS.atDebug().addKeyValue("event", "lock_released").addKeyValue("lock_name", key)
                .addKeyValue("action", "release").addKeyValue("identifier", token)
                .addKeyValue("duration_ms", (System.nanoTime() - sent) / 1_000_000).addKeyValue("success", owned)
                .log(owned ? "lock released" : "lock was no longer ours");
        if (owned) {
            locks.meters.held(System.nanoTime() - acquiredNanos);
        }
        return owned;
    }

    /** {@link #release()}, for try-with-resources. */
    @Override
    public void close() {
        release();
    }

    RedisCalls.Call extendCall() {
        return new RedisCalls.Call(LockScripts.EXTEND, List.of(key), List.of(token, Long.toString(lease.toMillis())));
    }

    /** The lock is gone (refused on extension or renewal, or run out unconfirmed): say so, once. */
    void lost(String reason) {
        RedisLocks.EVENTS.atWarn().addKeyValue("event", "lock_lost").addKeyValue("lock_name", key)
                .addKeyValue("action", "expire").addKeyValue("identifier", token)
                .addKeyValue("fencing_token", fencingToken).addKeyValue("success", false)
                .addKeyValue("reason", reason).log("lock lost");
        locks.meters.lost();
        Consumer<RedisLock> callback = onLost;
        if (callback != null) {
            callback.accept(this);
        }
    }

    @Override
    public String toString() {
        return "RedisLock[" + key + ", fence " + fencingToken + (isHeld() ? ", held" : ", not held") + "]";
    }
}
