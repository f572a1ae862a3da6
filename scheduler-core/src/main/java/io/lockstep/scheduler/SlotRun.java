package io.lockstep.scheduler;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.lockstep.scheduler.lock.Lease;
import java.time.Instant;
import java.util.Map;

/**
 * One claimed slot from its claim to its completion: the {@link JobContext} a job sees, and the
 * lease state the watchdog keeps. Lease deadlines are on the monotonic clock, counted from the
 * moment the claim or the last confirmed renewal was sent. Thread-safe.
 */
final class SlotRun implements JobContext {

    private static final ObjectMapper PARAMS = new ObjectMapper();

    final JobDefinition definition;
    final Job job;
    final Lease lease;
    final String lockName;
    private final long fencingToken;
    private final String workerId;

    /** The renewal the watchdog owes next, monotonic nanos. Guarded by the watchdog's monitor. */
    long nextRenewNanos;
    /** When the lease may already be gone if no renewal is confirmed, monotonic nanos. */
    private volatile long deadlineNanos;
    /** When the run must end, monotonic nanos; {@link Long#MAX_VALUE} for no timeout. */
    volatile long timeoutNanos = Long.MAX_VALUE;
    private volatile String lostReason;
    private volatile boolean timedOut;
    private volatile Thread thread;

    SlotRun(JobDefinition definition, Job job, Lease lease, String lockName, long fencingToken, String workerId,
            long claimSentNanos) {
        this.definition = definition;
        this.job = job;
        this.lease = lease;
        this.lockName = lockName;
        this.fencingToken = fencingToken;
        this.workerId = workerId;
        long ttl = lease.ttl().toNanos();
        this.deadlineNanos = claimSentNanos + ttl;
        this.nextRenewNanos = claimSentNanos + ttl / 3;
    }

    @Override
    public String jobName() {
        return definition.name();
    }

    @Override
    public Instant scheduledTime() {
        return lease.slot();
    }

    @Override
    public long fencingToken() {
        return fencingToken;
    }

    @Override
    public String workerId() {
        return workerId;
    }

    @Override
    public int attempt() {
        return 1;
    }

    @Override
    public Map<String, Object> params() {
        return definition.params();
    }

    @Override
    public <T> T params(Class<T> type) {
        try {
            return PARAMS.convertValue(definition.params(), type);
        } catch (IllegalArgumentException e) {
            throw new LockstepException("params of job " + definition.name() + " do not fit " + type.getName() + ": "
                    + e.getMessage().lines().findFirst().orElse(""), e);
        }
    }

    @Override
    public boolean isLeaseLost() {
        return lostReason != null || System.nanoTime() - deadlineNanos >= 0;
    }

    @Override
    public void checkLease() {
        if (isLeaseLost()) {
            throw new LeaseLostException(definition.name(), lease.slot(),
                    lostReason != null ? lostReason : "lease deadline passed without a confirmed renewal");
        }
    }

    long deadlineNanos() {
        return deadlineNanos;
    }

    /** A renewal sent at {@code sentNanos} was confirmed. */
    void renewed(long sentNanos) {
        deadlineNanos = sentNanos + lease.ttl().toNanos();
    }

    /**
     * Marks the lease lost and interrupts the job thread.
     *
     * @return false when it was already marked
     */
    synchronized boolean markLost(String reason) {
        if (lostReason != null) {
            return false;
        }
        lostReason = reason;
        Thread t = thread;
        if (t != null) {
            t.interrupt();
        }
        return true;
    }

    String lostReason() {
        return lostReason;
    }

    /** Marks the run timed out and interrupts the job thread. */
    synchronized void markTimedOut() {
        timedOut = true;
        Thread t = thread;
        if (t != null) {
            t.interrupt();
        }
    }

    boolean timedOut() {
        return timedOut;
    }

    synchronized void attach(Thread t) {
        thread = t;
        if (lostReason != null || timedOut) {
            t.interrupt();
        }
    }

    synchronized void detach() {
        thread = null;
        Thread.interrupted();
    }
}
