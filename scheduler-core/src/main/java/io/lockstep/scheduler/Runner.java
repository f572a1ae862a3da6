package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.LockProvider;
import io.lockstep.scheduler.lock.Outcome;
import io.lockstep.scheduler.lock.Watchdog;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.event.Level;

/**
 * Runs claimed slots: hands each to a job thread under a {@link Watchdog} that renews its lease,
 * runs the job (again after a failure while its retry policy allows, each attempt under the job's
 * timeout), turns every step into an event, and hands the outcome to the {@link Completer}.
 * Thread-safe.
 */
final class Runner {

    private final ExecutorService executor;
    private final JobThreads threads;
    private final ClusterClock clock;
    private final Events events;
    private final SlotQueue queue;
    private final Completer completer;
    private final Watchdog<SlotRun> watchdog;
    private final RunTracer tracer;
    private volatile boolean shuttingDown;
    /** job@slot-millis of every run on a job thread now. */
    private final java.util.Set<String> active = java.util.concurrent.ConcurrentHashMap.newKeySet();

    Runner(LockProvider provider, ExecutorService executor, JobThreads threads, ClusterClock clock, Events events,
            Outage outage, SlotQueue queue, RunTracer tracer) {
        this.executor = executor;
        this.tracer = tracer;
        this.threads = threads;
        this.clock = clock;
        this.events = events;
        this.queue = queue;
        this.completer = new Completer(provider, events, outage, queue::lookSoon);
        this.watchdog = new Watchdog<>("lockstep-watchdog",
                runs -> provider.renew(runs.stream().map(run -> run.lease).toList()), new LeaseEvents(outage));
    }

    void open() {
        completer.start();
    }

    /**
     * Whether this worker still handles the job's run of {@code slot}: the job is executing (it may
     * ignore its interrupt after a lost lease) or its outcome is not written yet. Such a run is not
     * dead, and this worker must not recover or abandon it; a peer may.
     */
    boolean handling(String job, java.time.Instant slot) {
        return active.contains(Completer.key(job, slot)) || completer.writing(job, slot);
    }

    /** A run claimed ahead waits for its start ({@link Starter}): its job thread is reserved, no thread waits. */
    void staged(SlotRun run) {
        // A watch the watchdog never holds (the staged claim is not renewed): the completer stops it
        // when the claim is handed back unstarted.
        run.watchedBy(watchdog.watch(run, run.lease.ttl(), run.claimSentNanos, false));
    }

    /**
     * Starts a claimed run on a job thread (reserved for it by the claim), under the job's full
     * lease, sent (by the claim) at {@code leaseSentNanos}.
     */
    void start(SlotRun run, long leaseSentNanos) {
        startAll(java.util.List.of(run), new long[] {leaseSentNanos});
    }

    /**
     * Starts runs due at one instant, each on a job thread reserved for it, under the job's full
     * lease sent at {@code leaseSentNanos[i]} (by its claim, or by the start of its claim made
     * ahead). The job threads are woken as a tree ({@link FanOut}), not one by one from this thread.
     * A run that cannot start (the pool is shut down or cannot make a thread, or the watchdog is
     * closed) goes back unstarted.
     */
    void startAll(java.util.List<SlotRun> runs, long[] leaseSentNanos) {
        java.util.List<SlotRun> ready = new java.util.ArrayList<>(runs.size());
        for (int i = 0; i < runs.size(); i++) {
            SlotRun run = runs.get(i);
            try {
                run.watchedBy(watchdog.watch(run, run.lease.ttl(), leaseSentNanos[i], true));
                active.add(Completer.key(run.definition.name(), run.scheduledTime()));
            } catch (RuntimeException | Error e) { // the watchdog is closed (or cannot start its thread)
                refused(run);
                continue;
            }
            ready.add(run);
        }
        FanOut.start(ready, executor, this::execute, this::refused);
    }

    /** A run that could not be handed to a job thread: it never starts and goes back unstarted. */
    private void refused(SlotRun run) {
        if (run.watch() != null) {
            run.watch().stop();
        }
        ended(run, Outcome.NOT_STARTED);
    }

    /**
     * A claimed run that will not start: frees its job thread; {@code handBack}: tells the store it
     * never started, so that a peer runs it within its grace whatever the recover policy.
     */
    void notStarted(SlotRun run, boolean handBack) {
        if (handBack) {
            completer.submit(run, Outcome.NOT_STARTED);
        }
        threads.release(1);
        queue.threadFreed();
    }

    /**
     * Lets running jobs finish up to {@code timeout}, interrupts the rest and waits a moment more,
     * writes the outcomes, and stops the watchdog last.
     *
     * @return whether every job finished
     */
    /**
     * The jobs with a run this worker has not finished: after a drain that timed out, the runs
     * that ignored their interrupt and still execute on a job thread.
     */
    java.util.Set<String> jobsRunning() {
        java.util.Set<String> jobs = new java.util.HashSet<>();
        for (String key : active) {
            jobs.add(key.substring(0, key.lastIndexOf('@')));
        }
        return jobs;
    }

    boolean drain(Duration timeout, Duration interruptGrace) {
        shuttingDown = true;
        executor.shutdown();
        long deadline = System.nanoTime() + timeout.toNanos();
        drainDeadlineNanos.accumulateAndGet(deadline, (a, b) -> a == 0 ? b : Math.min(a, b));
        boolean drained = false;
        while (!drained && System.nanoTime() < drainDeadlineNanos.get()) {
            // In slices, so that a later stop can bring the deadline forward (shortenDrain).
            drained = await(Duration.ofNanos(Math.min(DRAIN_SLICE.toNanos(), Math.max(1, drainDeadlineNanos.get() - System.nanoTime()))));
        }
        if (!drained) {
            for (Runnable never : executor.shutdownNow()) {
                if (never instanceof FanOut<?> f) {
                    f.dropped(); // runs handed to the pool that never got a thread go back unstarted
                }
            }
            drained = await(interruptGrace);
        }
        completer.close();
        watchdog.close();
        return drained;
    }

    /** How often a drain looks whether a later stop brought its deadline forward. */
    private static final Duration DRAIN_SLICE = Duration.ofMillis(200);
    /** When the running jobs' time is up (monotonic nanos), 0 before a drain. */
    private final java.util.concurrent.atomic.AtomicLong drainDeadlineNanos = new java.util.concurrent.atomic.AtomicLong();

    /** A stop during a drain: the running jobs get no more than {@code timeout} from now. */
    void shortenDrain(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        drainDeadlineNanos.accumulateAndGet(deadline, (a, b) -> a == 0 ? b : Math.min(a, b));
    }

    /** Whether the calling thread is running one of this runner's jobs (a job that stops its own scheduler). */
    boolean onJobThread() {
        return onJobThread.get() == this;
    }

    private final ThreadLocal<Runner> onJobThread = new ThreadLocal<>();

    private void execute(SlotRun run) {
        onJobThread.set(this);
        try {
            executeOnThread(run);
        } finally {
            onJobThread.remove();
        }
    }

    private void executeOnThread(SlotRun run) {
        JobDefinition def = run.definition;
        String slot = run.scheduledTime().toString();
        Outcome outcome;
        try {
            if (run.isLeaseLost()) {
                // Told it is lost, or its deadline passed before a job thread took it: do not start it,
                // and hand it back unstarted (a peer runs it). (When the watchdog already reported it,
                // markLost answers false and we stay quiet.)
                if (run.markLost("lease gone before the job could start")) {
                    events.warn("lease_lost").addKeyValue("job", def.name()).addKeyValue("slot", slot)
                            .addKeyValue("lock_name", run.lockName).addKeyValue("action", "expire")
                            .addKeyValue("identifier", run.lease.token()).addKeyValue("success", false)
                            .addKeyValue("reason", "lease gone before the job could start").log("lease lost before start; job not started");
                    events.metrics().leaseLost(def.name(), "before_start");
                }
                outcome = Outcome.NOT_STARTED;
            } else if (heldUpPastItsTurn(run, slot)) {
                outcome = Outcome.MISSED;
            } else {
                outcome = traced(run, def, slot);
            }
        } finally {
            // The lease stays watched (and renewed) until the completer has written the outcome: a
            // run that finished must never look abandoned because that write failed once.
            run.watch().timeoutAt(Long.MAX_VALUE);
            if (run.isLeaseLost()) {
                run.watch().stop(); // reports a deadline that passed while nobody looked
            }
            run.detach();
        }
        if (outcome != Outcome.NOT_STARTED && outcome != Outcome.MISSED) {
            events.metrics().ran(def.name(), outcome, run.firstStartNanos == 0 ? 0 : System.nanoTime() - run.firstStartNanos);
        }
        ended(run, outcome);
    }

    /**
     * How long after its turn a run of a job whose runs may overlap can still begin: its turn is the
     * store's decision of its slot, or the job's next slot if that is later. Below the audit's
     * default {@code --tolerance} (100 ms), with room for the few milliseconds a reading of the
     * store's clock may be off.
     */
    static final Duration IN_ORDER_WITHIN = Duration.ofMillis(75);

    /**
     * Guarantee 10 (in order) for a job whose runs may overlap ({@code overlap: allow}), where the
     * job's lease does not keep a later slot out while this run holds its claim. The store decided
     * this slot before any later slot of the job started (it refuses an older slot after a newer one
     * started), and no later slot starts before its own time by the store's clock; so a run that
     * begins within {@link #IN_ORDER_WITHIN} of the later of its decision and the job's next slot
     * begins in order. One whose worker was held up longer between the decision and the start (a
     * stall, a starved CPU, a full pool) may begin after a later slot's run began on a peer: it is
     * not started, and reported {@code slot_missed} (code {@code order}) by this worker, its claim
     * closed as {@link Outcome#MISSED} (never handed to a peer, which would run it later still).
     * Reruns and manual runs are outside the order; later attempts follow a first that began.
     * Jobs with one lease ({@code skip}, {@code replace}) need no such check: a later slot cannot
     * start while this claim holds the lease, or revokes it (the watchdog then stops the run).
     */
    private boolean heldUpPastItsTurn(SlotRun run, String slot) {
        JobDefinition def = run.definition;
        SlotRun.StoreReading r = run.storeReading();
        if (def.exclusive() || run.manual || run.recovered || run.attempt() > 1 || r == null) {
            return false;
        }
        // What this worker held the run for since the reply (a stall, a starved CPU, a full pool),
        // on top of the store's reading: the network's share of the round trip is not counted (a
        // slow store or network is the known limit of guarantee 10, as GUARANTEES says).
        long heldUp = (System.nanoTime() - r.receivedNanos()) / 1_000_000;
        long storeNow = run.storeNowMillis(System.nanoTime(), () -> 0L);
        long next = def.schedule().next(run.scheduledTime()).map(java.time.Instant::toEpochMilli).orElse(Long.MAX_VALUE);
        long turn = Math.max(next, r.decidedMillis());
        if (turn == Long.MAX_VALUE || storeNow - turn <= IN_ORDER_WITHIN.toMillis()) {
            return false;
        }
        // Reported by the completer once the store has closed the claim (a claim that is no longer
        // ours by then is a peer's to rerun or abandon, and reported there).
        run.lastError = "its run could not begin in order: " + (r.decidedMillis() < r.micros() / 1_000
                ? "its claim was answered " + (r.micros() / 1_000 - r.decidedMillis()) + " ms after it was first asked (a lost reply), and "
                : "") + "this worker held it " + heldUp + " ms between the store's answer and the start; a later slot of the job may "
                + "have started meanwhile";
        return true;
    }

    /** The run ended (or never started): its outcome goes to the completer, its job thread is free. */
    private void ended(SlotRun run, Outcome outcome) {
        completer.submit(run, outcome);
        active.remove(Completer.key(run.definition.name(), run.scheduledTime()));
        threads.release(1);
        queue.threadFreed();
    }

    /**
     * {@link #runJob} inside the run's span: the job's own spans nest under it, and the span ends
     * with the outcome (a tracer that fails to start a span never fails the run: it is reported and the run goes on untraced).
     */
    private Outcome traced(SlotRun run, JobDefinition def, String slot) {
        try {
            run.span = tracer.start(run);
        } catch (RuntimeException | LinkageError e) {
            events.warn("trace_failed").addKeyValue("job", def.name()).addKeyValue("slot", slot)
                    .addKeyValue("error", Events.describe(e)).log("could not start the run's span; running it untraced");
        }
        Outcome outcome = Outcome.INTERRUPTED;
        try (RunSpan.Scope scope = run.span.enter()) {
            outcome = runJob(run, def, slot);
        } finally {
            run.span.end(outcome, run.attempt(), run.lastFailure);
        }
        return outcome;
    }

    /** How late the run starts now, by the store's clock as the run's own replies read it (ms). */
    private long lateness(SlotRun run) {
        return run.storeNowMillis(System.nanoTime(), () -> clock.now().toEpochMilli()) - run.scheduledTime().toEpochMilli();
    }

    /** Runs the job, and again after a failure while its retry policy allows, within the same claim. */
    private Outcome runJob(SlotRun run, JobDefinition def, String slot) {
        Retry retry = def.retry();
        while (true) {
            long startedNanos = System.nanoTime();
            if (run.firstStartNanos == 0) {
                run.firstStartNanos = startedNanos;
            }
            if (def.timeout().compareTo(Duration.ZERO) > 0) {
                run.watch().timeoutAt(startedNanos + def.timeout().toNanos());
            }
            var started = events.info("job_started").addKeyValue("job", def.name()).addKeyValue("slot", slot)
                    .addKeyValue("fencing_token", run.fencingToken()).addKeyValue("attempt", run.attempt())
                    .addKeyValue("lateness_ms", lateness(run));
            // Flags audit reads: a rerun follows slot_recovered; a catch-up may start past misfireGrace.
            started = run.manual ? started.addKeyValue("manual", true) : started;
            started = run.recovered ? started.addKeyValue("rerun", true) : started;
            started = run.catchUp ? started.addKeyValue("catch_up", true) : started;
            run.span.tag(started).log("job started");
            events.metrics().started(def.name(), Duration.ofMillis(lateness(run)));
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
            run.lastError = failure == null ? "" : Events.describe(failure);
            run.lastFailure = failure;
            if (run.timedOut()) {
                return Outcome.TIMED_OUT; // job_timed_out was logged when the watchdog interrupted it
            }
            if (failure == null) {
                run.span.tag(events.info("job_succeeded").addKeyValue("job", def.name()).addKeyValue("slot", slot)
                        .addKeyValue("fencing_token", run.fencingToken()).addKeyValue("attempt", run.attempt())
                        .addKeyValue("duration_ms", durationMs)).log("job succeeded");
                // Succeeded, even if its lease ran out meanwhile: the record says what the event says. If a
                // peer took the slot over, the record is no longer ours and this outcome is refused.
                return Outcome.SUCCEEDED;
            }
            // A failure that will be retried within the claim is a WARN; the one that ends the run an ERROR.
            boolean stopped = shuttingDown && (failure instanceof InterruptedException || Thread.currentThread().isInterrupted());
            boolean willRetry = !run.isLeaseLost() && !stopped && run.attempt() < retry.maxAttempts();
            // Cut off by this worker's stop under recover: rerun, the run is handed over to a peer, which
            // runs it again (from its checkpoint): an orderly hand-over, not an error.
            boolean handOver = stopped && !run.isLeaseLost() && def.recover() == Recover.RERUN;
            var event = run.span.tag(events.at(willRetry || handOver ? Level.WARN : Level.ERROR, "job_failed").addKeyValue("job", def.name())
                    .addKeyValue("slot", slot).addKeyValue("fencing_token", run.fencingToken()).addKeyValue("attempt", run.attempt())
                    .addKeyValue("duration_ms", durationMs).addKeyValue("error", Events.describe(failure)));
            if (run.isLeaseLost()) {
                event.addKeyValue("reason", "lease lost").log("job failed after its lease was lost");
                return Outcome.LEASE_LOST;
            }
            if (stopped) {
                if (handOver) {
                    event.addKeyValue("handed_over", true);
                }
                event.addKeyValue("reason", "interrupted by shutdown").log(handOver
                        ? "job interrupted by shutdown; handed over to a peer, which runs it again (recover: rerun)"
                        : "job interrupted by shutdown");
                return Outcome.INTERRUPTED;
            }
            if (run.attempt() >= retry.maxAttempts()) {
                event.addKeyValue("will_retry", false).setCause(failure).log("job failed");
                return Outcome.FAILED;
            }
            Duration delay = retry.delayAfter(run.attempt());
            event.addKeyValue("will_retry", true).addKeyValue("retry_in_ms", delay.toMillis()).setCause(failure)
                    .log("job failed; retrying within the same claim");
            run.span.retry(run.attempt(), delay.toMillis(), failure);
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
            LockSupport.parkNanos(left);
        }
        return !run.isLeaseLost() && !Thread.currentThread().isInterrupted();
    }

    private boolean await(Duration d) {
        try {
            return executor.awaitTermination(d.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Parks for {@code d}; returns early when the thread is interrupted. */
    static void pause(Duration d) {
        long nanos = d.toNanos();
        long end = System.nanoTime() + nanos;
        while (nanos > 0) {
            LockSupport.parkNanos(nanos);
            if (Thread.currentThread().isInterrupted()) {
                return;
            }
            nanos = end - System.nanoTime();
        }
    }

    /** What the watchdog tells the runner: each step of a lease becomes an event. */
    private final class LeaseEvents implements Watchdog.Listener<SlotRun> {
        private final Outage outage;

        LeaseEvents(Outage outage) {
            this.outage = outage;
        }

        @Override
        public void lost(Watchdog<SlotRun>.Watch watch, String reason) {
            SlotRun run = watch.lease();
            run.span.leaseLost(reason); // before the interrupt: the job thread ends the span once it stops
            run.interrupt();
            org.slf4j.spi.LoggingEventBuilder lost = events.warn("lease_lost").addKeyValue("job", run.definition.name())
                    .addKeyValue("slot", run.lease.slot().toString()).addKeyValue("lock_name", run.lockName)
                    .addKeyValue("action", "expire").addKeyValue("identifier", run.lease.token())
                    .addKeyValue("fencing_token", run.fencingToken()).addKeyValue("success", false)
                    .addKeyValue("reason", reason);
            if (!reason.startsWith("renewal refused")) {
                // How long ago the deadline passed (a stall, a GC pause, a host stopped, the watchdog late): the
                // lease ended in the store no sooner than then, which the audit weighs against a peer's rerun.
                lost.addKeyValue("deadline_passed_ms", watch.sinceDeadlineMillis());
            }
            run.span.tag(lost).log("lease lost; the job is interrupted and must stop");
            events.metrics().leaseLost(run.definition.name(), reason.startsWith("renewal refused") ? "revoked" : "expired");
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
            run.span.timedOut(run.definition.timeout().toMillis()); // before the interrupt, as for a lost lease
            run.interrupt();
            run.span.tag(events.warn("job_timed_out").addKeyValue("job", run.definition.name())
                    .addKeyValue("slot", run.lease.slot().toString()).addKeyValue("fencing_token", run.fencingToken())
                    .addKeyValue("attempt", run.attempt()).addKeyValue("timeout_ms", run.definition.timeout().toMillis()))
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
}
