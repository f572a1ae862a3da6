package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.ClaimResult;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.LockProvider;
import io.lockstep.scheduler.lock.Outcome;
import io.lockstep.scheduler.lock.RunsInFlight;
import io.lockstep.scheduler.lock.Watchdog;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.security.SecureRandom;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.PriorityQueue;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Runs a set of jobs on this worker, racing the other workers of the cluster for each slot through
 * a {@link LockProvider}: exactly one worker runs each (job, slot).
 *
 * <p>One tick thread ({@code lockstep-tick}) sleeps until the next due slot (a priority queue of
 * next fire times), then claims every slot due at that instant in one batch, but only as many as
 * it has free job threads: a busy worker leaves the rest to its peers and retries them itself
 * only while their grace lasts. Winners run on a bounded pool ({@code lockstep-job-N}), a
 * {@link Watchdog} renews their leases, and every step is logged as an event.
 *
 * <p>When things go wrong: every claim answer says when the earliest lease among the job's runs in
 * flight ends; at that moment (plus {@link #LOOK_MARGIN}) the tick thread asks the store whether
 * that run renewed, and recovers or abandons a run whose lease ran out without an outcome
 * ({@link Recover}). So a dead worker's run is noticed within its lease and a round trip, and a
 * cluster with nothing running sends nothing for it. At start a worker looks at every job once
 * and catches up the slots the whole cluster missed ({@link CatchUp}); a failed run is retried
 * within its slot ({@link Retry}); {@link Overlap#REPLACE} revokes a running lease.
 *
 * <pre>{@code
 * Scheduler scheduler = Scheduler.builder(lockProvider)
 *         .job(JobDefinition.of("report", CronSchedule.of("0 6 * * *", zone), ReportJob.class))
 *         .build();
 * scheduler.start();
 * ...
 * scheduler.close(); // drains running jobs up to the shutdown timeout
 * }</pre>
 *
 * <p>Thread-safe. {@link #start()} once; {@link #close()} is idempotent.
 */
public final class Scheduler implements AutoCloseable {

    public static final int DEFAULT_THREADS = 8;
    public static final Duration DEFAULT_SHUTDOWN_TIMEOUT = Duration.ofSeconds(30);
    /** How soon a claim that failed for want of the store, or of a free thread, is tried again. */
    static final Duration RETRY_DELAY = Duration.ofMillis(250);
    /**
     * How long after a run's lease end (by the store's clock) the tick thread looks whether it was
     * renewed: room for a renewal sent just before the end to land.
     */
    static final Duration LOOK_MARGIN = Duration.ofMillis(100);
    /** At most this many missed slots per job are caught up or reported at start. */
    private static final int MAX_CATCH_UP_SLOTS = 10_000;
    /** At most this many claim round trips per tick when lost races free reserved threads. */
    private static final int MAX_CLAIM_ROUNDS = 4;
    /** After the shutdown timeout and the interrupt, how long to wait for outcomes to be recorded. */
    private static final Duration INTERRUPT_GRACE = Duration.ofSeconds(5);
    private static final SecureRandom TOKENS = new SecureRandom();

    private record JobEntry(JobDefinition definition, Job job) {}

    /** A slot waiting for its turn: first by its fire time, then for a retry. */
    private static final class Due implements Comparable<Due> {
        final JobEntry entry;
        final Instant slot;
        final ClaimRequest.Mode mode;
        Instant retryAt;
        String token;
        boolean followerQueued;
        /** Why the slot is reported missed ({@link ClaimRequest.Mode#MISS_ONLY} at start). */
        String missReason;
        /** The catch-up slot to claim once this one is decided ({@code catchUp: all}, oldest first). */
        Due next;

        Due(JobEntry entry, Instant slot) {
            this(entry, slot, ClaimRequest.Mode.CLAIM);
        }

        Due(JobEntry entry, Instant slot, ClaimRequest.Mode mode) {
            this.entry = entry;
            this.slot = slot;
            this.mode = mode;
            this.retryAt = slot;
        }

        /** Until when the slot may start; only a plain claim has a grace. */
        Instant graceEnd() {
            return mode == ClaimRequest.Mode.CLAIM ? slot.plus(entry.definition.misfireGrace()) : Instant.MAX;
        }

        /** Whether winning it starts a run, so that it needs a free job thread. */
        boolean needsThread() {
            return mode == ClaimRequest.Mode.CLAIM || mode == ClaimRequest.Mode.CATCH_UP
                    || mode == ClaimRequest.Mode.RECOVER;
        }

        String key() {
            return entry.definition.name() + "@" + slot.toEpochMilli();
        }

        @Override
        public int compareTo(Due other) {
            return retryAt.compareTo(other.retryAt);
        }
    }

    private final LockProvider provider;
    private final String workerId;
    private final int threads;
    private final Duration shutdownTimeout;
    private final List<JobEntry> jobs;
    private final Map<String, JobEntry> jobsByName = new HashMap<>();
    private final ExecutorService executor;
    private final ClusterClock clock;
    private final Events events;
    private final Outage outage;
    private final Watchdog<SlotRun> watchdog;
    private final Completer completer;
    private final AtomicInteger busy = new AtomicInteger();
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition wake = lock.newCondition();
    /** Slots by fire time, and retries by retry time. Guarded by {@link #lock}. */
    private final PriorityQueue<Due> queue = new PriorityQueue<>();
    /** Due slots that found no free job thread; claimed again when one frees or their grace ends. */
    private final List<Due> waiting = new ArrayList<>();
    /** Stale runs being recovered or abandoned by this worker, by {@link Due#key()}. Guarded by {@link #lock}. */
    private final Set<String> recovering = new HashSet<>();
    /**
     * Per job, when (cluster time) to ask the store about its runs in flight: the earliest lease
     * end the store last told us of, plus {@link #LOOK_MARGIN}. Guarded by {@link #lock}.
     */
    private final Map<String, Instant> lookAt = new HashMap<>();
    /** A job finished since the tick thread last looked. Guarded by {@link #lock}. */
    private boolean threadFreed;
    private final Thread tickThread;
    private volatile boolean running;
    private volatile boolean closed;
    private final AtomicInteger started = new AtomicInteger();

    private Scheduler(Builder b) {
        this.provider = b.provider;
        this.workerId = b.workerId;
        this.threads = b.threads;
        this.shutdownTimeout = b.shutdownTimeout;
        this.events = new Events(workerId);
        this.outage = new Outage(events, provider.describe());
        this.clock = new ClusterClock(b.clock);
        this.watchdog = new Watchdog<>("lockstep-watchdog",
                runs -> provider.renew(runs.stream().map(run -> run.lease).toList()), new LeaseEvents());
        this.completer = new Completer(provider, events, outage);
        List<JobEntry> entries = new ArrayList<>();
        for (JobDefinition definition : b.jobs) {
            if (definition.enabled()) {
                entries.add(new JobEntry(definition, b.jobFactory.create(definition)));
            }
        }
        this.jobs = List.copyOf(entries);
        entries.forEach(e -> jobsByName.put(e.definition.name(), e));
        this.executor = b.executor != null ? b.executor : defaultExecutor(threads);
        this.tickThread = new Thread(this::tickLoop, "lockstep-tick");
    }

    /** A builder for a scheduler on {@code provider}. */
    public static Builder builder(LockProvider provider) {
        return new Builder(provider);
    }

    /** This worker's id, as it appears in every event. */
    public String workerId() {
        return workerId;
    }

    /**
     * Measures the offset to the store's clock and starts ticking. Fails, starting nothing, when
     * the store cannot be reached.
     *
     * @throws LockException when the lock store does not answer
     * @throws IllegalStateException when called twice
     */
    public void start() {
        if (started.getAndIncrement() != 0) {
            throw new IllegalStateException("scheduler already started");
        }
        clock.sync(provider);
        Map<String, Instant> lastSlots = provider.lastSlots(jobs.stream().map(e -> e.definition.name()).toList());
        Instant now = clock.now();
        lock.lock();
        try {
            for (JobEntry entry : jobs) {
                Instant last = lastSlots.get(entry.definition.name());
                if (last != null) {
                    queue.addAll(slotsSince(entry, last, now));
                }
                entry.definition.schedule().next(now).ifPresent(slot -> queue.add(new Due(entry, slot)));
            }
        } finally {
            lock.unlock();
        }
        lock.lock();
        try {
            // Runs of other workers may be in flight already: look at every job once.
            jobs.forEach(e -> lookAt.put(e.definition.name(), now));
        } finally {
            lock.unlock();
        }
        events.info("worker_started").addKeyValue("jobs", jobs.size()).addKeyValue("threads", threads)
                .addKeyValue("lock_store", provider.describe()).addKeyValue("clock_offset_ms", clock.offsetMillis())
                .log("worker started");
        running = true;
        completer.start();
        tickThread.start();
    }

    /**
     * Stops claiming, lets running jobs finish up to the shutdown timeout, interrupts the rest and
     * records their outcomes, then stops the watchdog. Does not close the provider: whoever built it
     * closes it.
     */
    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            running = false;
            wake.signalAll();
        } finally {
            lock.unlock();
        }
        joinQuietly(tickThread);
        executor.shutdown();
        boolean drained = awaitQuietly(shutdownTimeout);
        if (!drained) {
            executor.shutdownNow();
            drained = awaitQuietly(INTERRUPT_GRACE);
        }
        completer.close();
        watchdog.close();
        events.info("worker_stopped").addKeyValue("drained", drained).addKeyValue("busy", busy.get())
                .log("worker stopped");
    }

    // ---------------------------------------------------------------- the tick loop

    private void tickLoop() {
        while (running) {
            try {
                tickOnce();
            } catch (RuntimeException | Error e) {
                events.error("tick_failed").addKeyValue("error", Events.describe(e)).setCause(e)
                        .log("unexpected failure in the tick loop; continuing");
                pause(RETRY_DELAY);
            }
        }
    }

    /** Waits for the next due slot (or a freed thread for a waiting one), then claims what is due. */
    private void tickOnce() {
        List<Due> due = new ArrayList<>();
        lock.lock();
        try {
            while (running) {
                Instant now = clock.now();
                Due head = queue.peek();
                if (head != null && !head.retryAt.isAfter(now)) {
                    break;
                }
                if (!waiting.isEmpty() && threadFreed && busy.get() < threads) {
                    break;
                }
                Instant look = earliestLook();
                if (look != null && !look.isAfter(now)) {
                    break;
                }
                Instant until = head == null ? now.plusSeconds(1) : head.retryAt;
                if (look != null) {
                    until = earliest(until, look);
                }
                for (Due w : waiting) {
                    until = earliest(until, w.graceEnd());
                }
                if (!until.isAfter(now)) {
                    break;
                }
                long waitNanos = Math.min(Duration.between(now, until).toNanos(), TimeUnit.SECONDS.toNanos(1));
                wake.awaitNanos(waitNanos);
            }
            if (!running) {
                return;
            }
            threadFreed = false;
            Instant now = clock.now();
            while (!queue.isEmpty() && !queue.peek().retryAt.isAfter(now)) {
                due.add(queue.poll());
            }
            due.addAll(waiting);
            waiting.clear();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            running = false;
            return;
        } finally {
            lock.unlock();
        }
        claimInRounds(due); // first: the claims are what is late; the next fire times can wait a moment
        lock.lock();
        try {
            Instant now = clock.now();
            for (Due d : due) {
                if (!d.followerQueued) {
                    d.followerQueued = true;
                    scheduleFollowing(d, now);
                }
            }
        } finally {
            lock.unlock();
        }
        lookAtRuns();
        if (clock.syncDue()) {
            try {
                clock.sync(provider);
                outage.succeeded();
            } catch (LockException e) {
                outage.failed("time", e);
            }
        }
    }

    /**
     * Claims what is due; when lost races free threads that were reserved, claims again at once
     * for the slots that had to wait, so that no slot waits while some worker is free. What still
     * finds no thread waits for one, at the longest until its grace ends.
     */
    private void claimInRounds(List<Due> due) {
        List<Due> deferred = claim(due);
        for (int round = 1; round < MAX_CLAIM_ROUNDS && !deferred.isEmpty() && busy.get() < threads; round++) {
            deferred = claim(deferred);
        }
        if (!deferred.isEmpty()) {
            lock.lock();
            try {
                waiting.addAll(deferred);
            } finally {
                lock.unlock();
            }
        }
    }

    /** Queues the slot after {@code fired}; a worker that was paused past the grace skips ahead to now. */
    private void scheduleFollowing(Due fired, Instant now) {
        JobDefinition d = fired.entry.definition;
        Instant from = fired.slot;
        Instant horizon = now.minus(d.misfireGrace());
        if (from.isBefore(horizon)) {
            from = horizon;
        }
        d.schedule().next(from).ifPresent(slot -> queue.add(new Due(fired.entry, slot)));
    }

    /**
     * The slots of a job after {@code last} (the latest slot the cluster decided) up to now: those
     * still within their grace are claimed as usual; older ones, within the catch-up window, passed
     * while no worker was running and are caught up or reported missed by the job's policy.
     */
    private List<Due> slotsSince(JobEntry entry, Instant last, Instant now) {
        JobDefinition d = entry.definition;
        Instant windowStart = now.minus(d.catchUpWindow());
        Instant from = last.isAfter(windowStart) ? last : windowStart;
        List<Due> recent = new ArrayList<>();
        List<Instant> missed = new ArrayList<>();
        Optional<Instant> slot = d.schedule().next(from);
        while (slot.isPresent() && !slot.get().isAfter(now) && missed.size() < MAX_CATCH_UP_SLOTS) {
            if (now.isAfter(slot.get().plus(d.misfireGrace()))) {
                missed.add(slot.get());
            } else {
                Due due = new Due(entry, slot.get());
                due.followerQueued = true; // the regular chain starts at next(now)
                recent.add(due);
            }
            slot = d.schedule().next(slot.get());
        }
        List<Due> result = new ArrayList<>(recent);
        Due previous = null;
        for (int i = 0; i < missed.size(); i++) {
            boolean run = d.catchUp() == CatchUp.ALL || (d.catchUp() == CatchUp.LATEST && i == missed.size() - 1);
            Due due = new Due(entry, missed.get(i), run ? ClaimRequest.Mode.CATCH_UP : ClaimRequest.Mode.MISS_ONLY);
            due.retryAt = now;
            due.followerQueued = true;
            if (!run) {
                due.missReason = d.catchUp() == CatchUp.LATEST
                        ? "no worker was running; catchUp: latest runs only the latest missed slot"
                        : "no worker was running (catchUp: none)";
                result.add(due);
            } else if (d.catchUp() == CatchUp.ALL && previous != null) {
                previous.next = due; // oldest first: each waits for the one before it to be decided
            } else {
                result.add(due);
            }
            if (run) {
                previous = due;
            }
        }
        return result;
    }

    /** The earliest moment some job's runs in flight are due a look, or null. Under {@link #lock}. */
    private Instant earliestLook() {
        Instant first = null;
        for (Instant at : lookAt.values()) {
            if (first == null || at.isBefore(first)) {
                first = at;
            }
        }
        return first;
    }

    /** What the store said of a job's runs in flight: when to look at them next (never, if none). */
    private void noteRuns(String job, long runningUntilMillis) {
        lock.lock();
        try {
            if (runningUntilMillis == 0) {
                lookAt.remove(job);
            } else {
                lookAt.put(job, Instant.ofEpochMilli(runningUntilMillis).plus(LOOK_MARGIN));
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Asks the store about the runs in flight of every job whose look is due, and races the other
     * workers to recover or abandon each run whose lease ran out without an outcome (its worker
     * died or was paused), by the job's policy.
     */
    private void lookAtRuns() {
        List<String> names = new ArrayList<>();
        Instant now = clock.now();
        lock.lock();
        try {
            lookAt.forEach((job, at) -> {
                if (!at.isAfter(now)) {
                    names.add(job);
                }
            });
        } finally {
            lock.unlock();
        }
        if (names.isEmpty()) {
            return;
        }
        List<RunsInFlight> found;
        try {
            found = provider.runsInFlight(names);
            outage.succeeded();
        } catch (LockException e) {
            outage.failed("runs", e);
            lock.lock();
            try {
                names.forEach(job -> lookAt.put(job, now.plus(RETRY_DELAY)));
            } finally {
                lock.unlock();
            }
            return;
        }
        List<Due> due = new ArrayList<>();
        lock.lock();
        try {
            for (RunsInFlight runs : found) {
                if (runs.nextLeaseEndMillis() == 0) {
                    lookAt.remove(runs.job());
                } else {
                    lookAt.put(runs.job(), Instant.ofEpochMilli(runs.nextLeaseEndMillis()).plus(LOOK_MARGIN));
                }
                JobEntry entry = entry(runs.job());
                if (entry == null) {
                    continue;
                }
                for (Instant slot : runs.expired()) {
                    Due d = new Due(entry, slot, entry.definition.recover() == Recover.RERUN
                            ? ClaimRequest.Mode.RECOVER : ClaimRequest.Mode.ABANDON);
                    d.followerQueued = true;
                    if (recovering.add(d.key())) {
                        due.add(d);
                    }
                }
            }
        } finally {
            lock.unlock();
        }
        claimInRounds(due);
    }

    private JobEntry entry(String name) {
        return jobsByName.get(name);
    }

    /**
     * Claims one batch: at most as many slots as there are free threads, the rest left to peers.
     *
     * @return the slots that found no free thread and may still start within their grace
     */
    private List<Due> claim(List<Due> due) {
        List<Due> deferred = new ArrayList<>();
        if (due.isEmpty()) {
            return deferred;
        }
        Collections.shuffle(due);
        Instant now = clock.now();
        int free = threads - busy.get();
        List<Due> batch = new ArrayList<>(due.size());
        List<ClaimRequest> requests = new ArrayList<>(due.size());
        List<Boolean> reservations = new ArrayList<>(due.size());
        int reserved = 0;
        for (Due d : due) {
            ClaimRequest.Mode mode = d.mode;
            boolean reserves = false;
            if (d.needsThread()) {
                if (reserved < free) {
                    reserved++;
                    reserves = true;
                } else if (mode == ClaimRequest.Mode.CLAIM && now.isAfter(d.graceEnd())) {
                    mode = ClaimRequest.Mode.MISS_ONLY; // past its grace with no thread: only make sure the miss is recorded
                } else {
                    // No thread to start it now: peers may take it; try again when a thread frees up.
                    deferred.add(d);
                    continue;
                }
            }
            if (d.token == null) {
                d.token = newToken();
            }
            JobDefinition def = d.entry.definition;
            Lease lease = new Lease(def.name(), d.slot, d.token, def.lease(), def.exclusive());
            requests.add(new ClaimRequest(lease, workerId, def.misfireGrace(), mode, def.overlap() == Overlap.REPLACE));
            reservations.add(reserves);
            batch.add(d);
        }
        if (requests.isEmpty()) {
            return deferred;
        }
        spreadDelay(); // before reserving: the delay reflects how busy we were, not this batch
        busy.addAndGet(reserved);
        long sent = System.nanoTime();
        List<ClaimResult> results;
        try {
            results = provider.claim(requests);
            outage.succeeded();
        } catch (LockException e) {
            busy.addAndGet(-reserved);
            outage.failed("claim", e);
            Instant after = clock.now();
            for (Due d : batch) {
                if (after.isBefore(d.graceEnd())) {
                    requeue(d, earliest(after.plus(RETRY_DELAY), d.graceEnd()));
                } else {
                    missed(d, Duration.between(d.slot, after).toMillis(), "lock store unreachable: " + e.getMessage(), null);
                    decided(d);
                }
            }
            return deferred;
        }
        long durationMs = (System.nanoTime() - sent) / 1_000_000;
        for (int i = 0; i < batch.size(); i++) {
            Due d = batch.get(i);
            ClaimRequest request = requests.get(i);
            ClaimResult result = results.get(i);
            boolean claimed = result.status() == ClaimResult.Status.CLAIMED;
            if (!claimed && reservations.get(i)) {
                busy.decrementAndGet();
            } else if (claimed && !reservations.get(i)) {
                busy.incrementAndGet(); // an earlier, ambiguous claim of ours had won after all
            }
            handle(d, request, result, sent, durationMs);
        }
        return deferred;
    }

    private void handle(Due d, ClaimRequest request, ClaimResult result, long sentNanos, long durationMs) {
        JobDefinition def = d.entry.definition;
        Lease lease = request.lease();
        String lockName = provider.lockName(lease);
        long lateness = result.serverTimeMillis() - d.slot.toEpochMilli();
        ClaimRequest.Mode mode = request.mode();
        if (result.status() != ClaimResult.Status.EARLY) {
            noteRuns(def.name(), result.runningUntilMillis());
        }
        switch (result.status()) {
            case CLAIMED -> {
                if (mode == ClaimRequest.Mode.RECOVER) {
                    events.warn("slot_recovered").addKeyValue("job", def.name()).addKeyValue("slot", d.slot.toString())
                            .addKeyValue("lock_name", lockName).addKeyValue("action", "acquire")
                            .addKeyValue("identifier", lease.token()).addKeyValue("duration_ms", durationMs)
                            .addKeyValue("success", true).addKeyValue("fencing_token", result.fencingToken())
                            .addKeyValue("lateness_ms", lateness)
                            .addKeyValue("reason", "the run's lease ran out without an outcome; recover: rerun")
                            .log("slot recovered; running it again under a higher fencing token");
                } else {
                    var event = events.info("slot_claimed").addKeyValue("job", def.name()).addKeyValue("slot", d.slot.toString())
                            .addKeyValue("lock_name", lockName).addKeyValue("action", "acquire")
                            .addKeyValue("identifier", lease.token()).addKeyValue("duration_ms", durationMs)
                            .addKeyValue("success", true).addKeyValue("fencing_token", result.fencingToken())
                            .addKeyValue("lateness_ms", lateness);
                    if (mode == ClaimRequest.Mode.CATCH_UP) {
                        event = event.addKeyValue("catch_up", true);
                    }
                    event.log("slot claimed");
                }
                SlotRun run = new SlotRun(def, d.entry.job, lease, lockName, result.fencingToken(), workerId, sentNanos);
                start(run);
            }
            case TAKEN -> {
                if (mode == ClaimRequest.Mode.RECOVER || mode == ClaimRequest.Mode.ABANDON) {
                    events.debug("slot_recovery_skipped").addKeyValue("job", def.name()).addKeyValue("slot", d.slot.toString())
                            .log("nothing to recover: the run renewed, finished, or another worker took it");
                } else {
                    events.info("slot_contended").addKeyValue("job", def.name()).addKeyValue("slot", d.slot.toString())
                            .addKeyValue("lock_name", lockName).addKeyValue("action", "acquire")
                            .addKeyValue("identifier", lease.token()).addKeyValue("duration_ms", durationMs)
                            .addKeyValue("success", false).log("slot taken by another worker");
                }
            }
            case SKIPPED -> events.info("slot_skipped").addKeyValue("job", def.name()).addKeyValue("slot", d.slot.toString())
                    .addKeyValue("lock_name", lockName).addKeyValue("reason", "overlap: an earlier run still holds the lease")
                    .log("slot skipped");
            case MISSED -> missed(d, lateness, d.missReason != null ? d.missReason : request.missOnly()
                    ? "no free job thread on any worker within misfireGrace" : "later than misfireGrace", lockName);
            case ABANDONED -> events.warn("slot_abandoned").addKeyValue("job", def.name()).addKeyValue("slot", d.slot.toString())
                    .addKeyValue("lock_name", lockName).addKeyValue("fencing_token", result.fencingToken())
                    .addKeyValue("lateness_ms", lateness)
                    .addKeyValue("reason", "the run's lease ran out without an outcome; recover: none")
                    .log("slot abandoned: its run lost its lease without an outcome");
            case BUSY -> {
                // Another run of the job holds its exclusive lease: ask again shortly.
                requeue(d, clock.now().plus(RETRY_DELAY));
                return;
            }
            case EARLY -> {
                // Our clock runs ahead of the store's: come back when the store's clock reaches the slot.
                long ahead = Math.max(1, d.slot.toEpochMilli() - result.serverTimeMillis());
                requeue(d, clock.now().plusMillis(ahead));
                return;
            }
        }
        decided(d);
    }

    /** A slot is decided: forget a recovery of it, and start on the next catch-up slot. */
    private void decided(Due d) {
        lock.lock();
        try {
            recovering.remove(d.key());
            if (d.next != null) {
                d.next.retryAt = clock.now();
                queue.add(d.next);
                wake.signalAll();
            }
        } finally {
            lock.unlock();
        }
    }

    private void missed(Due d, long latenessMs, String reason, String lockName) {
        var event = events.warn("slot_missed").addKeyValue("job", d.entry.definition.name())
                .addKeyValue("slot", d.slot.toString()).addKeyValue("lateness_ms", latenessMs)
                .addKeyValue("reason", reason);
        if (lockName != null) {
            event = event.addKeyValue("lock_name", lockName);
        }
        event.log("slot missed");
    }

    private void requeue(Due d, Instant at) {
        lock.lock();
        try {
            d.retryAt = at;
            queue.add(d);
        } finally {
            lock.unlock();
        }
    }

    /** A few milliseconds, more when busier, so that wins spread over the free workers. */
    private void spreadDelay() {
        double load = (double) busy.get() / threads;
        long micros = ThreadLocalRandom.current().nextLong(0, 2_000) + (long) (load * 4_000);
        pause(Duration.ofNanos(micros * 1_000));
    }

    // ---------------------------------------------------------------- running a claimed slot

    private void start(SlotRun run) {
        run.watchedBy(watchdog.watch(run, run.lease.ttl(), run.claimSentNanos, true));
        try {
            executor.execute(() -> execute(run));
        } catch (RejectedExecutionException e) {
            run.watch().stop();
            finish(run, Outcome.INTERRUPTED);
            busy.decrementAndGet();
        }
    }

    private void execute(SlotRun run) {
        JobDefinition def = run.definition;
        String slot = run.scheduledTime().toString();
        Outcome outcome;
        try {
            if (run.isLeaseLost()) {
                // Told it is lost, or its deadline passed while the run waited: do not start it.
                // (When the watchdog already reported it, markLost answers false and we stay quiet.)
                if (run.markLost("lease gone before the job could start")) {
                    events.warn("lease_lost").addKeyValue("job", def.name()).addKeyValue("slot", slot)
                            .addKeyValue("lock_name", run.lockName).addKeyValue("action", "expire")
                            .addKeyValue("identifier", run.lease.token()).addKeyValue("success", false)
                            .addKeyValue("reason", "lease gone before the job could start").log("lease lost before start; job not started");
                }
                outcome = Outcome.LEASE_LOST;
            } else {
                outcome = runJob(run, def, slot);
            }
        } finally {
            run.watch().stop();
            run.detach();
        }
        finish(run, outcome);
        busy.decrementAndGet();
        lock.lock();
        try {
            threadFreed = true;
            wake.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Runs the job, and again after a failure while its retry policy allows, within the same claim. */
    private Outcome runJob(SlotRun run, JobDefinition def, String slot) {
        Retry retry = def.retry();
        while (true) {
            long startedNanos = System.nanoTime();
            if (def.timeout().compareTo(Duration.ZERO) > 0) {
                run.watch().timeoutAt(startedNanos + def.timeout().toNanos());
            }
            events.info("job_started").addKeyValue("job", def.name()).addKeyValue("slot", slot)
                    .addKeyValue("fencing_token", run.fencingToken()).addKeyValue("attempt", run.attempt())
                    .addKeyValue("lateness_ms", Duration.between(run.scheduledTime(), clock.now()).toMillis())
                    .log("job started");
            run.attach(Thread.currentThread());
            Throwable failure = null;
            try {
                run.job.execute(run);
            } catch (Throwable t) {
                failure = t;
                if (t instanceof InterruptedException) {
                    Thread.currentThread().interrupt();
                }
            }
            if (run.isLeaseLost()) {
                run.watch().stop(); // reports a deadline that passed while nobody looked, before the outcome
            }
            long durationMs = (System.nanoTime() - startedNanos) / 1_000_000;
            if (run.timedOut()) {
                return Outcome.TIMED_OUT; // job_timed_out was logged when the watchdog interrupted it
            }
            if (failure == null) {
                events.info("job_succeeded").addKeyValue("job", def.name()).addKeyValue("slot", slot)
                        .addKeyValue("fencing_token", run.fencingToken()).addKeyValue("attempt", run.attempt())
                        .addKeyValue("duration_ms", durationMs).log("job succeeded");
                return run.isLeaseLost() ? Outcome.LEASE_LOST : Outcome.SUCCEEDED;
            }
            var event = events.error("job_failed").addKeyValue("job", def.name()).addKeyValue("slot", slot)
                    .addKeyValue("fencing_token", run.fencingToken()).addKeyValue("attempt", run.attempt())
                    .addKeyValue("duration_ms", durationMs).addKeyValue("error", Events.describe(failure));
            if (run.isLeaseLost()) {
                event.addKeyValue("reason", "lease lost").log("job failed after its lease was lost");
                return Outcome.LEASE_LOST;
            }
            if (closed && (failure instanceof InterruptedException || Thread.currentThread().isInterrupted())) {
                event.addKeyValue("reason", "interrupted by shutdown").log("job interrupted by shutdown");
                return Outcome.INTERRUPTED;
            }
            if (run.attempt() >= retry.maxAttempts()) {
                event.addKeyValue("will_retry", false).setCause(failure).log("job failed");
                return Outcome.FAILED;
            }
            Duration delay = retry.delayAfter(run.attempt());
            event.addKeyValue("will_retry", true).addKeyValue("retry_in_ms", delay.toMillis()).setCause(failure)
                    .log("job failed; retrying within the same claim");
            run.detach();
            if (!backoff(run, delay)) {
                return run.isLeaseLost() ? Outcome.LEASE_LOST : Outcome.INTERRUPTED;
            }
            run.nextAttempt();
        }
    }

    /**
     * Waits between attempts while the watchdog keeps the lease.
     *
     * @return false when the lease was lost or the thread interrupted (shutdown) meanwhile
     */
    private static boolean backoff(SlotRun run, Duration delay) {
        run.attach(Thread.currentThread());
        long end = System.nanoTime() + delay.toNanos();
        long left;
        while ((left = end - System.nanoTime()) > 0) {
            if (run.isLeaseLost() || Thread.currentThread().isInterrupted()) {
                return false;
            }
            java.util.concurrent.locks.LockSupport.parkNanos(left);
        }
        return !run.isLeaseLost() && !Thread.currentThread().isInterrupted();
    }

    /** Hands the outcome to the completer, which writes it and gives the lease back, owner-checked. */
    private void finish(SlotRun run, Outcome outcome) {
        completer.submit(run, outcome);
    }

    /** What the watchdog tells the scheduler: each step of a lease becomes an event. */
    private final class LeaseEvents implements Watchdog.Listener<SlotRun> {

        @Override
        public void lost(Watchdog<SlotRun>.Watch watch, String reason) {
            SlotRun run = watch.lease();
            run.interrupt();
            events.warn("lease_lost").addKeyValue("job", run.definition.name())
                    .addKeyValue("slot", run.lease.slot().toString()).addKeyValue("lock_name", run.lockName)
                    .addKeyValue("action", "expire").addKeyValue("identifier", run.lease.token())
                    .addKeyValue("fencing_token", run.fencingToken()).addKeyValue("success", false)
                    .addKeyValue("reason", reason).log("lease lost; the job is interrupted and must stop");
        }

        @Override
        public void renewed(Watchdog<SlotRun>.Watch watch, long durationMs) {
            SlotRun run = watch.lease();
            events.debug("lease_renewed").addKeyValue("job", run.definition.name())
                    .addKeyValue("slot", run.lease.slot().toString()).addKeyValue("lock_name", run.lockName)
                    .addKeyValue("action", "renew").addKeyValue("identifier", run.lease.token())
                    .addKeyValue("duration_ms", durationMs).addKeyValue("success", true).log("lease renewed");
        }

        @Override
        public void timedOut(Watchdog<SlotRun>.Watch watch) {
            SlotRun run = watch.lease();
            run.interrupt();
            events.warn("job_timed_out").addKeyValue("job", run.definition.name())
                    .addKeyValue("slot", run.lease.slot().toString()).addKeyValue("fencing_token", run.fencingToken())
                    .addKeyValue("attempt", run.attempt()).addKeyValue("timeout_ms", run.definition.timeout().toMillis())
                    .log("job ran past its timeout; interrupted");
        }

        @Override
        public void roundSucceeded() {
            outage.succeeded();
        }

        @Override
        public void roundFailed(LockException e) {
            outage.failed("renew", e);
        }
    }

    // ---------------------------------------------------------------- helpers

    private static Instant earliest(Instant a, Instant b) {
        return a.isBefore(b) ? a : b;
    }

    private static String newToken() {
        byte[] bytes = new byte[16];
        TOKENS.nextBytes(bytes);
        return HexFormat.of().formatHex(bytes);
    }

    private static void pause(Duration d) {
        long nanos = d.toNanos();
        long end = System.nanoTime() + nanos;
        while (nanos > 0) {
            java.util.concurrent.locks.LockSupport.parkNanos(nanos);
            if (Thread.currentThread().isInterrupted()) {
                return;
            }
            nanos = end - System.nanoTime();
        }
    }

    private boolean awaitQuietly(Duration d) {
        try {
            return executor.awaitTermination(d.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private static void joinQuietly(Thread t) {
        if (!t.isAlive()) {
            return;
        }
        try {
            t.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static ExecutorService defaultExecutor(int threads) {
        AtomicInteger n = new AtomicInteger();
        return new ThreadPoolExecutor(threads, threads, 60, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), r -> {
            Thread t = new Thread(r, "lockstep-job-" + n.incrementAndGet());
            t.setDaemon(false);
            return t;
        });
    }

    static String defaultWorkerId() {
        String host;
        try {
            host = InetAddress.getLocalHost().getHostName();
        } catch (Exception e) {
            host = Optional.ofNullable(System.getenv("HOSTNAME")).orElse("worker");
        }
        return host + "-" + ProcessHandle.current().pid();
    }

    /**
     * Builds a {@link Scheduler}. Fails fast on a bad value. Not thread-safe.
     */
    public static final class Builder {
        private final LockProvider provider;
        private String workerId = "";
        private int threads = DEFAULT_THREADS;
        private Duration shutdownTimeout = DEFAULT_SHUTDOWN_TIMEOUT;
        private Clock clock = Clock.systemUTC();
        private JobFactory jobFactory = JobFactory.reflective();
        private ExecutorService executor;
        private final List<JobDefinition> jobs = new ArrayList<>();

        private Builder(LockProvider provider) {
            this.provider = Objects.requireNonNull(provider, "provider");
        }

        /** This worker's id in events and slot records; blank means {@code <hostname>-<pid>}. */
        public Builder workerId(String id) {
            this.workerId = Objects.requireNonNull(id, "workerId");
            return this;
        }

        /** How many jobs run at once on this worker (default 8). */
        public Builder threads(int threads) {
            if (threads < 1) {
                throw new IllegalArgumentException("threads must be at least 1, but was " + threads);
            }
            this.threads = threads;
            return this;
        }

        /** How long {@link Scheduler#close()} lets running jobs finish before interrupting them. */
        public Builder shutdownTimeout(Duration timeout) {
            if (timeout.isNegative()) {
                throw new IllegalArgumentException("shutdownTimeout must not be negative, but was " + timeout);
            }
            this.shutdownTimeout = timeout;
            return this;
        }

        /**
         * The wall clock that cron is evaluated on (corrected by the measured offset to the store's
         * clock). Tests pass a skewed clock to play a worker whose host clock is wrong.
         */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        /** How job instances are created (default: reflection, public no-arg constructor). */
        public Builder jobFactory(JobFactory factory) {
            this.jobFactory = Objects.requireNonNull(factory, "jobFactory");
            return this;
        }

        /**
         * The executor that runs jobs, for example a virtual-thread executor. The scheduler still
         * starts at most {@link #threads(int)} jobs at once and shuts the executor down on close.
         */
        public Builder executor(ExecutorService executor) {
            this.executor = Objects.requireNonNull(executor, "executor");
            return this;
        }

        public Builder job(JobDefinition definition) {
            jobs.add(Objects.requireNonNull(definition, "definition"));
            return this;
        }

        public Builder jobs(List<JobDefinition> definitions) {
            definitions.forEach(this::job);
            return this;
        }

        /**
         * @throws LockstepException when a job class cannot be created or two jobs share a name
         */
        public Scheduler build() {
            java.util.Set<String> names = new java.util.HashSet<>();
            for (JobDefinition d : jobs) {
                if (!names.add(d.name())) {
                    throw new IllegalArgumentException("job names must be unique, but \"" + d.name() + "\" appears twice");
                }
            }
            if (workerId.isBlank()) {
                workerId = defaultWorkerId();
            }
            return new Scheduler(this);
        }
    }
}
