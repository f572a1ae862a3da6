package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.LockProvider;
import io.lockstep.scheduler.lock.Outcome;
import io.lockstep.scheduler.lock.Watchdog;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Runs claimed slots: hands each to a job thread under a {@link Watchdog} that renews its lease,
 * runs the job (again after a failure while its retry policy allows, each attempt under the job's
 * timeout), turns every step into an event, and hands the outcome to the {@link Completer}.
 * What happens on the job thread, from the first attempt to the outcome, is {@link JobAttempts};
 * what the watchdog reports of the leases is {@link LeaseEvents}. This class keeps the job
 * threads: handing runs to them, taking them back, and draining them at a stop.
 * Thread-safe.
 */
final class Runner {

    private final ExecutorService executor;
    private final JobThreads threads;
    private final Events events;
    private final SlotQueue queue;
    private final Completer completer;
    private final Watchdog<SlotRun> watchdog;
    /** A run's attempts, on its job thread. */
    private final JobAttempts attempts;
    private volatile boolean shuttingDown;
    /** job@slot-millis of every run on a job thread now. */
    private final java.util.Set<String> active = java.util.concurrent.ConcurrentHashMap.newKeySet();

    Runner(LockProvider provider, ExecutorService executor, JobThreads threads, ClusterClock clock, Events events,
            Outage outage, SlotQueue queue, RunTracer tracer) {
        this.executor = executor;
        this.threads = threads;
        this.events = events;
        this.queue = queue;
        this.attempts = new JobAttempts(clock, events, tracer, () -> shuttingDown,
                provider.permits().map(p -> new LimitPermits(p, events, clock)).orElse(null));
        this.completer = new Completer(provider, events, outage, queue.looks()::lookSoon);
        this.watchdog = new Watchdog<>("lockstep-watchdog",
                runs -> provider.renew(runs.stream().map(run -> run.lease).toList()), new LeaseEvents(events, outage));
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

    /**
     * Lets running jobs finish up to {@code timeout}, interrupts the rest and waits a moment more,
     * writes the outcomes, and stops the watchdog last.
     *
     * @return whether every job finished
     */
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
        long took = System.nanoTime();
        Outcome outcome;
        try {
            outcome = attempts.run(run);
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
            threads.ran(def.name(), System.nanoTime() - took); // how long a run holds a thread: what the backlog's estimate goes by
            events.metrics().ran(def.name(), outcome, run.firstStartNanos == 0 ? 0 : System.nanoTime() - run.firstStartNanos);
        }
        ended(run, outcome);
    }

    /** The run ended (or never started): its outcome goes to the completer, its job thread is free. */
    private void ended(SlotRun run, Outcome outcome) {
        completer.submit(run, outcome);
        active.remove(Completer.key(run.definition.name(), run.scheduledTime()));
        threads.release(1);
        queue.threadFreed();
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
}
