package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.ClaimResult;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.LockProvider;
import io.lockstep.scheduler.lock.Outcome;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.security.SecureRandom;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.PriorityQueue;
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
        Instant retryAt;
        String token;
        boolean followerQueued;

        Due(JobEntry entry, Instant slot) {
            this.entry = entry;
            this.slot = slot;
            this.retryAt = slot;
        }

        Instant graceEnd() {
            return slot.plus(entry.definition.misfireGrace());
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
    private final ExecutorService executor;
    private final ClusterClock clock;
    private final Events events;
    private final Outage outage;
    private final Watchdog watchdog;
    private final AtomicInteger busy = new AtomicInteger();
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition wake = lock.newCondition();
    /** Slots by fire time, and retries by retry time. Guarded by {@link #lock}. */
    private final PriorityQueue<Due> queue = new PriorityQueue<>();
    /** Due slots that found no free job thread; claimed again when one frees or their grace ends. */
    private final List<Due> waiting = new ArrayList<>();
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
        this.watchdog = new Watchdog(provider, events, outage);
        List<JobEntry> entries = new ArrayList<>();
        for (JobDefinition definition : b.jobs) {
            if (definition.enabled()) {
                entries.add(new JobEntry(definition, b.jobFactory.create(definition)));
            }
        }
        this.jobs = List.copyOf(entries);
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
        Instant now = clock.now();
        lock.lock();
        try {
            for (JobEntry entry : jobs) {
                entry.definition.schedule().next(now).ifPresent(slot -> queue.add(new Due(entry, slot)));
            }
        } finally {
            lock.unlock();
        }
        events.info("worker_started").addKeyValue("jobs", jobs.size()).addKeyValue("threads", threads)
                .addKeyValue("lock_store", provider.describe()).addKeyValue("clock_offset_ms", clock.offsetMillis())
                .log("worker started");
        running = true;
        watchdog.start();
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
        watchdog.stop();
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
                Instant until = head == null ? now.plusSeconds(1) : head.retryAt;
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
                Due next = queue.poll();
                if (!next.followerQueued) {
                    next.followerQueued = true;
                    scheduleFollowing(next, now);
                }
                due.add(next);
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
        claimInRounds(due);
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
        int reserved = 0;
        for (Due d : due) {
            boolean pastGrace = now.isAfter(d.graceEnd());
            boolean missOnly = false;
            if (reserved >= free && !pastGrace) {
                // No thread to start it now: peers may take it; try again when a thread frees up.
                deferred.add(d);
                continue;
            }
            if (reserved >= free) {
                missOnly = true; // past its grace with no thread: only make sure the miss is recorded
            } else {
                reserved++;
            }
            if (d.token == null) {
                d.token = newToken();
            }
            JobDefinition def = d.entry.definition;
            Lease lease = new Lease(def.name(), d.slot, d.token, def.lease(), def.overlap() == Overlap.SKIP);
            requests.add(new ClaimRequest(lease, workerId, def.misfireGrace(), missOnly));
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
            if (!claimed && !request.missOnly()) {
                busy.decrementAndGet();
            } else if (claimed && request.missOnly()) {
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
        switch (result.status()) {
            case CLAIMED -> {
                events.info("slot_claimed").addKeyValue("job", def.name()).addKeyValue("slot", d.slot.toString())
                        .addKeyValue("lock_name", lockName).addKeyValue("action", "acquire")
                        .addKeyValue("identifier", lease.token()).addKeyValue("duration_ms", durationMs)
                        .addKeyValue("success", true).addKeyValue("fencing_token", result.fencingToken())
                        .addKeyValue("lateness_ms", lateness).log("slot claimed");
                SlotRun run = new SlotRun(def, d.entry.job, lease, lockName, result.fencingToken(), workerId, sentNanos);
                start(run);
            }
            case TAKEN -> events.info("slot_contended").addKeyValue("job", def.name()).addKeyValue("slot", d.slot.toString())
                    .addKeyValue("lock_name", lockName).addKeyValue("action", "acquire")
                    .addKeyValue("identifier", lease.token()).addKeyValue("duration_ms", durationMs)
                    .addKeyValue("success", false).log("slot taken by another worker");
            case SKIPPED -> events.info("slot_skipped").addKeyValue("job", def.name()).addKeyValue("slot", d.slot.toString())
                    .addKeyValue("lock_name", lockName).addKeyValue("reason", "overlap: an earlier run still holds the lease")
                    .log("slot skipped");
            case MISSED -> missed(d, lateness, request.missOnly()
                    ? "no free job thread on any worker within misfireGrace" : "later than misfireGrace", lockName);
            case EARLY -> {
                // Our clock runs ahead of the store's: come back when the store's clock reaches the slot.
                long ahead = Math.max(1, d.slot.toEpochMilli() - result.serverTimeMillis());
                requeue(d, clock.now().plusMillis(ahead));
            }
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
        if (run.definition.timeout().compareTo(Duration.ZERO) > 0) {
            run.timeoutNanos = System.nanoTime() + run.definition.timeout().toNanos();
        }
        watchdog.add(run);
        try {
            executor.execute(() -> execute(run));
        } catch (RejectedExecutionException e) {
            watchdog.remove(run);
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
            watchdog.remove(run);
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

    private Outcome runJob(SlotRun run, JobDefinition def, String slot) {
        long startedNanos = System.nanoTime();
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
        watchdog.retire(run);
        long durationMs = (System.nanoTime() - startedNanos) / 1_000_000;
        if (run.timedOut()) {
            return Outcome.TIMED_OUT; // job_timed_out was logged when the watchdog interrupted it
        }
        if (failure == null) {
            events.info("job_succeeded").addKeyValue("job", def.name()).addKeyValue("slot", slot)
                    .addKeyValue("fencing_token", run.fencingToken()).addKeyValue("attempt", run.attempt())
                    .addKeyValue("duration_ms", durationMs).log("job succeeded");
            return run.lostReason() != null ? Outcome.LEASE_LOST : Outcome.SUCCEEDED;
        }
        var event = events.error("job_failed").addKeyValue("job", def.name()).addKeyValue("slot", slot)
                .addKeyValue("fencing_token", run.fencingToken()).addKeyValue("attempt", run.attempt())
                .addKeyValue("duration_ms", durationMs).addKeyValue("error", Events.describe(failure));
        if (run.lostReason() != null) {
            event.addKeyValue("reason", "lease lost").log("job failed after its lease was lost");
            return Outcome.LEASE_LOST;
        }
        if (closed && (failure instanceof InterruptedException || Thread.currentThread().isInterrupted())) {
            event.addKeyValue("reason", "interrupted by shutdown").log("job interrupted by shutdown");
            return Outcome.INTERRUPTED;
        }
        event.setCause(failure).log("job failed");
        return Outcome.FAILED;
    }

    /** Writes the outcome into the slot record and gives the lease back, owner-checked. */
    private void finish(SlotRun run, Outcome outcome) {
        long sent = System.nanoTime();
        try {
            boolean owned = provider.complete(run.lease, outcome);
            outage.succeeded();
            events.info("slot_released").addKeyValue("job", run.definition.name())
                    .addKeyValue("slot", run.scheduledTime().toString()).addKeyValue("lock_name", run.lockName)
                    .addKeyValue("action", "release").addKeyValue("identifier", run.lease.token())
                    .addKeyValue("duration_ms", (System.nanoTime() - sent) / 1_000_000).addKeyValue("success", owned)
                    .addKeyValue("outcome", outcome.label()).log(owned ? "slot released" : "slot no longer ours; outcome not recorded");
        } catch (LockException e) {
            outage.failed("complete", e);
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
