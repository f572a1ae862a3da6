package io.lockstep.scheduler;

import java.util.List;

import io.lockstep.scheduler.lock.Checkpoint;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.LockProvider;
import io.lockstep.scheduler.lock.Watchdog;
import java.time.Instant;
import java.util.Map;

/**
 * One claimed slot from its claim to its completion: the {@link JobContext} a job sees, and the
 * handle the {@link Watchdog} keeps its lease by. Thread-safe.
 */
final class SlotRun implements JobContext {


    final JobDefinition definition;
    final Job job;
    final Lease lease;
    final String lockName;
    private final long fencingToken;
    private final String workerId;
    /** The claim's round trip started here (monotonic nanos): the lease deadline counts from it. */
    final long claimSentNanos;
    /**
     * Not before this moment (monotonic nanos) does the run start: its slot by the store's clock,
     * for a claim made ahead ({@link io.lockstep.scheduler.lock.ClaimResult#startDelayMillis}).
     */
    volatile long startAtNanos;
    /**
     * Past this moment (monotonic nanos) the slot's grace has certainly begun to pass by the store's
     * clock, so a run claimed ahead that has not started yet must not start (a stall between the
     * store's start and ours); {@link Long#MAX_VALUE} for runs without one (recoveries, catch-up).
     */
    volatile long graceEndsNanos = Long.MAX_VALUE;
    /**
     * The store's clock as this run's own last reply read it: its claim's, then its start's (for a
     * claim made ahead). How late the run starts is measured by it, not by the worker's
     * {@link ClusterClock} (whose anchor may be 30 s old, and the store's clock may have been stepped
     * or slewed since); the time since is a fraction of a second of this host's monotonic clock.
     * Null before the claim's reply.
     */
    private volatile StoreReading storeReading;

    /**
     * A reading of the store's clock: {@code micros} (epoch µs), read by a call sent at
     * {@code sentNanos} and answered at {@code receivedNanos} (monotonic), about a decision made no
     * earlier than {@code decidedMillis} by that clock (the reading itself, or, for a repeat after a
     * lost reply, the reading less the time since the first request: the repeat is answered later
     * than the claim was decided).
     */
    record StoreReading(long micros, long sentNanos, long receivedNanos, long decidedMillis) {}
    /** A manual run ({@code trigger}); its events carry {@code manual: true}. */
    final boolean manual;
    /** A rerun of a slot whose earlier run lost its lease or never started ({@code slot_recovered}); {@code rerun: true}. */
    final boolean recovered;
    /** A slot caught up at start ({@code catchUp}); its {@code job_started} carries {@code catch_up: true}. */
    final boolean catchUp;
    /** A slot of a backfill ({@code lockstep backfill}): its id, else null; its events carry {@code origin: backfill}. Set before its hand-off. */
    String backfill;
    /** The run's trace, from its first attempt's start ({@link RunTracer}). */
    volatile RunSpan span = RunSpan.NONE;
    /** The watchdog's view of the lease; set once, before the run is handed to a job thread. */
    private volatile Watchdog<SlotRun>.Watch watch;
    private volatile int attempt = 1;
    /** When the first attempt started (monotonic nanos), 0 before; and the last attempt's failure, "" if none. */
    volatile long firstStartNanos;
    volatile String lastError = "";
    /** The last attempt's failure, or null. */
    volatile Throwable lastFailure;
    private volatile Thread thread;
    /** Where the run's checkpoints go ({@link #checkpoint}): the store that decided its claim. */
    private final LockProvider store;
    /** Checkpoints this run saved (each one's sequence). */
    private final java.util.concurrent.atomic.AtomicLong checkpoints = new java.util.concurrent.atomic.AtomicLong();
    /** The slot's last checkpoint as this run knows it; null until read from the store or saved. */
    private volatile java.util.Optional<String> lastCheckpoint;

    SlotRun(JobDefinition definition, Job job, Lease lease, String lockName, long fencingToken, String workerId,
            long claimSentNanos, boolean manual, boolean recovered, boolean catchUp, LockProvider store) {
        this.store = store;
        this.manual = manual;
        this.recovered = recovered;
        this.catchUp = catchUp;
        this.definition = definition;
        this.job = job;
        this.lease = lease;
        this.lockName = lockName;
        this.fencingToken = fencingToken;
        this.workerId = workerId;
        this.claimSentNanos = claimSentNanos;
    }

    /**
     * Notes the store's clock as a reply of this run's read it: {@code serverMicros}, by a call sent at
     * {@code sentNanos} and answered at {@code receivedNanos}; the slot was first asked at
     * {@code askedSinceNanos} (earlier than {@code sentNanos} for a repeat), all monotonic.
     */
    void storeClock(long serverMicros, long sentNanos, long receivedNanos, long askedSinceNanos) {
        if (serverMicros > 0) {
            long decided = serverMicros / 1_000 - (askedSinceNanos != 0 && askedSinceNanos < sentNanos ? (receivedNanos - askedSinceNanos) / 1_000_000 : 0);
            storeReading = new StoreReading(serverMicros, sentNanos, receivedNanos, decided);
        }
    }

    /** The reading this run's replies gave last, or null. */
    StoreReading storeReading() {
        return storeReading;
    }

    /**
     * The store's clock now as this run's last reply tells (epoch ms): the reading plus the monotonic
     * time since the reply arrived, the same count the in-order guard makes ({@code Runner}). The
     * store read its clock before the reply arrived, so a start by it never reads earlier than it
     * was: a run that begins at its slot by this count began at or after it by the store's clock
     * (later by the reply's time on the network, uncounted). {@code fallback} before any reply.
     */
    long storeNowMillis(long nowNanos, java.util.function.LongSupplier fallback) {
        StoreReading r = storeReading;
        return r == null ? fallback.getAsLong() : Math.floorDiv(r.micros() * 1_000 + (nowNanos - r.receivedNanos()), 1_000_000);
    }

    void watchedBy(Watchdog<SlotRun>.Watch w) {
        this.watch = w;
    }

    Watchdog<SlotRun>.Watch watch() {
        return watch;
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

    /** The permits of the limits its job uses, held while the job runs ({@link LimitPermits}); empty before. */
    volatile List<io.lockstep.scheduler.lock.Permits.Permit> permits = List.of();
    /** Why a permit of the run was lost ({@link LimitPermits}), or null: the job is interrupted and not retried. */
    volatile String permitLost;
    /** The code of the {@code slot_missed} a run closed {@link io.lockstep.scheduler.lock.Outcome#MISSED} reports. */
    volatile String missCode = "order";

    @Override
    public long permitToken(String limit) {
        return permit(limit).fencingToken();
    }

    @Override
    public int permitOf(String limit) {
        return permit(limit).index();
    }

    private io.lockstep.scheduler.lock.Permits.Permit permit(String limit) {
        return permits.stream().filter(p -> p.limit().equals(limit)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("this run holds no permit of " + limit + " (uses: " + definition.uses().keySet() + ")"));
    }

    @Override
    public String workerId() {
        return workerId;
    }

    @Override
    public int attempt() {
        return attempt;
    }

    void nextAttempt() {
        attempt++;
    }

    @Override
    public Map<String, Object> params() {
        return definition.params();
    }

    @Override
    public <T> T params(Class<T> type) {
        try {
            return Params.bind(definition.params(), type);
        } catch (IllegalArgumentException e) {
            throw new LockstepException("params of job " + definition.name() + " do not fit " + type.getName() + ": "
                    + e.getMessage().lines().findFirst().orElse(""), e);
        }
    }

    @Override
    public boolean isLeaseLost() {
        return watch.isLost();
    }

    @Override
    public void checkLease() {
        if (isLeaseLost()) {
            throw new LeaseLostException(definition.name(), lease.slot(),
                    watch.lostReason().orElse("lease deadline passed without a confirmed renewal"));
        }
    }

    @Override
    public void checkpoint(String value) {
        java.util.Objects.requireNonNull(value, "value");
        int bytes = value.getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
        if (bytes > Checkpoint.MAX_LENGTH) {
            throw new LockstepException("job " + definition.name() + ": a checkpoint of " + bytes
                    + " bytes (UTF-8); at most " + Checkpoint.MAX_LENGTH + " are kept");
        }
        checkLease();
        boolean saved;
        try {
            saved = store.checkpoint(lease, new Checkpoint(value, fencingToken, checkpoints.incrementAndGet()));
        } catch (UnsupportedOperationException e) {
            throw new LockstepException(e.getMessage(), e);
        }
        if (!saved) {
            throw new LeaseLostException(definition.name(), lease.slot(), "the slot is no longer this run's: the checkpoint was not saved");
        }
        lastCheckpoint = java.util.Optional.of(value);
    }

    @Override
    public java.util.Optional<String> lastCheckpoint() {
        java.util.Optional<String> known = lastCheckpoint;
        if (known == null) {
            if (!recovered) {
                known = java.util.Optional.empty(); // a first run: no earlier run of the slot saved anything
            } else {
                try {
                    known = store.lastCheckpoint(definition.name(), lease.slot()).map(Checkpoint::value);
                } catch (UnsupportedOperationException e) {
                    throw new LockstepException(e.getMessage(), e);
                }
            }
            lastCheckpoint = known;
        }
        return known;
    }

    boolean timedOut() {
        return watch.timedOut();
    }

    /**
     * Declares the lease lost and interrupts the job thread.
     *
     * @return false when it was already declared lost
     */
    boolean markLost(String reason) {
        boolean first = watch.markLost(reason);
        interrupt();
        return first;
    }

    /** Interrupts the job thread, if a job is running. */
    synchronized void interrupt() {
        Thread t = thread;
        if (t != null) {
            t.interrupt();
        }
    }

    synchronized void attach(Thread t) {
        thread = t;
        if (watch.lostReason().isPresent() || watch.timedOut() || permitLost != null) {
            t.interrupt();
        }
    }

    synchronized void detach() {
        thread = null;
        Thread.interrupted();
    }
}
