package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.LockProvider;
import io.lockstep.scheduler.lock.Watchdog;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Runs a set of jobs on this worker, racing the other workers of the cluster for each slot through
 * a {@link LockProvider}: exactly one worker runs each (job, slot).
 *
 * <p>This class only wires the stages of a slot's journey together and starts and stops them:
 * <ul>
 *   <li>{@link SlotQueue}: what is due when (slots by fire time, retries, slots waiting for a thread);
 *   <li>{@link Ticker}: the {@code lockstep-tick} thread that sleeps until something is due;
 *   <li>{@link Preference}: which worker claims a slot first (ahead of its time), and what the others
 *       read of its record after the backoff;
 *   <li>{@link Claimer}: one batch of claims per round trip, only as many as there are free threads;
 *   <li>{@link Starter}: the {@code lockstep-start} timer thread that starts the runs claimed ahead at
 *       their slot (Redis checks the claim, the grace and the pause first), so no job thread waits;
 *   <li>{@link Runner}: job threads ({@code lockstep-job-N}) with attempts, retries, timeouts and lease
 *       loss, under a {@link Watchdog};
 *   <li>{@link Completer}: outcomes written in batches; a run that lost its lease or was cut off by a
 *       stop under {@code recover: rerun}, or never started, is handed over instead of closed;
 *   <li>{@link Recovery}: runs whose lease ran out without an outcome ({@link Recover});
 *   <li>{@link FirstSlots}: what a start queues, read from the store before anything changes, with
 *       {@link CatchUpPlan}: slots the whole cluster missed while it was down ({@link CatchUp});
 *   <li>{@link Reload}: a new set of definitions put in force while it runs ({@link #update}).
 * </ul>
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
    /** After the shutdown timeout and the interrupt, how long to wait for outcomes to be recorded. */
    private static final Duration INTERRUPT_GRACE = Duration.ofSeconds(5);

    private final LockProvider provider;
    private final String workerId;
    private final Duration shutdownTimeout;
    private final JobSet jobs;
    private final CreatedJobs created;
    private final JobThreads threads;
    private final ClusterClock clock;
    private final Events events;
    private final SlotQueue queue = new SlotQueue();
    private final Runner runner;
    private final Starter starter;
    private final Ticker ticker;
    private final Membership membership;
    private final Outage outage;
    private final Reload reload;
    /** Drives the backfills this worker is chosen for ({@code lockstep backfill}). */
    private final BackfillDriver backfills;
    /** Judges the jobs' expectations ({@code expect:}); null when the store cannot. */
    private final ExpectationKeeper expectations;
    /** The definitions in force: as built, then as the latest {@link #update} put them (disabled ones included). */
    private volatile List<JobDefinition> definitions;
    private final AtomicBoolean started = new AtomicBoolean();
    /** Set once {@link #start} has read what it needs and begun ticking (a start may fail before, and be retried). */
    private volatile boolean begun;
    /** Set by {@link #drain} until its stop ends or a close cuts it short. */
    private volatile boolean draining;
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Orders {@link #start}, {@link #update} and {@link #close}. */
    private final Object lifecycle = new Object();
    private final StopLatch stopped = new StopLatch();

    private Scheduler(Builder b) {
        this.provider = b.provider;
        this.workerId = b.workerId;
        this.threads = new JobThreads(b.threads, b.executor == null); // only our own pool queues runs beyond its threads
        this.shutdownTimeout = b.shutdownTimeout;
        SchedulerMetrics metrics = new SchedulerMetrics(b.meterRegistry, b.meterRegistryGiven);
        this.events = new Events(workerId, metrics);
        this.clock = new ClusterClock(b.clock);
        Outage outage = new Outage(events, provider::describe);
        this.outage = outage;
        metrics.bind(threads, outage::up);
        this.created = CreatedJobs.create(b.jobs, b.jobFactory, b.closeJobs, events, b.labels, workerId);
        this.definitions = List.copyOf(b.jobs);
        JobSet jobs = new JobSet(created.jobs());
        this.jobs = jobs;
        metrics.registerJobs(jobs.names());
        ExecutorService executor = b.executor != null ? b.executor : defaultExecutor(b.threads);
        this.runner = new Runner(provider, executor, threads, clock, events, outage, queue, RunTracer.create(b.openTelemetry));
        this.membership = new Membership(provider, events, outage, workerId, threads, clock, b.jobs, t -> {
            ScheduledJob job = jobs.get(t.job());
            if (job == null) {
                job = jobs.get(RunOn.instance(t.job(), workerId)); // an every-worker job: each worker runs the trigger as its own
            }
            if (job == null || !job.here()) { // a job this worker does not run (disabled, or without its labels) is left to those that do
                return false;
            }
            queue.addAll(List.of(DueSlot.manual(job, t.slot())));
            return true;
        }, () -> queue.looks().lookSoon(jobs.names()), within -> {
            events.info("drain_requested").addKeyValue("within_ms", within.toMillis())
                    .log("an operator asked this worker to drain: no new claims; its running jobs may finish within " + within);
            java.util.function.Consumer<Duration> action = b.drainRequested != null ? b.drainRequested : this::drain; // by default: itself
            Thread t = new Thread(() -> action.accept(within), "lockstep-drain"); // off the heartbeat's thread: it keeps beating
            t.setDaemon(true);
            t.start();
        });
        membership.labels(b.labels);
        this.backfills = new BackfillDriver(provider, workerId, jobs, queue, clock, events, membership::live);
        membership.onBackfills(backfills::heard);
        this.expectations = provider.expectations().map(e -> new ExpectationKeeper(e, workerId, jobs, events, b.alerts)).orElse(null);
        Preference preference = new Preference(provider, workerId, membership::live, membership::configHash, events);
        queue.claimLead(ClaimLead.forWindow(provider.startWindow()));
        this.starter = new Starter(provider, runner, events, outage);
        Claimer claimer = new Claimer(provider, workerId, threads, clock, events, outage, queue, runner, starter, preference);
        Recovery recovery = new Recovery(provider, clock, outage, queue, claimer, runner, jobs);
        this.ticker = new Ticker(provider, clock, events, outage, threads, queue, claimer, recovery, jobs);
        this.reload = new Reload(jobs, created, b.jobFactory, metrics, clock, queue, membership, events);
        metrics.bindDrift(() -> membership.drift().size());
    }

    /** A builder for a scheduler on {@code provider}. */
    public static Builder builder(LockProvider provider) {
        return new Builder(provider);
    }

    /**
     * Whether this worker is healthy: {@code live} while its tick thread runs; {@code ready} while it
     * is started, not stopping, and the lock store answers (it is claiming).
     */
    public record Health(boolean live, boolean ready, String reason) {}

    /** This worker's health, for {@code /health/live} and {@code /health/ready}. */
    public Health health() {
        if (!started.get()) {
            return new Health(true, false, "not started");
        }
        if (closed.get()) {
            // A drain may last an hour: its worker is alive (a liveness probe must not restart it mid-drain), not ready.
            return draining ? new Health(true, false, "draining") : new Health(false, false, "stopping");
        }
        if (!begun) {
            return new Health(true, false, "starting: the lock store has not answered yet"); // a start under way, or retried
        }
        if (!ticker.alive()) {
            return new Health(false, false, "the tick thread died");
        }
        return outage.up() ? new Health(true, true, "claiming") : new Health(true, false, "lock store unreachable: " + provider.describe());
    }

    /** This worker's id, as it appears in every event. */
    public String workerId() {
        return workerId;
    }

    /**
     * Measures the offset to the store's clock, queues each job's next slot (and the slots it must
     * catch up) and starts ticking. Fails, starting nothing, when the store cannot be reached; it
     * may then be called again (the Spring Boot starter's {@code lockstep.fail-fast=false} does, until
     * the store answers): every read from the store comes before anything is changed.
     *
     * @throws LockException when the lock store does not answer
     * @throws IllegalStateException when called twice, or after {@link #close}
     */
    public void start() {
        synchronized (lifecycle) {
            if (closed.get()) {
                throw new IllegalStateException("scheduler closed");
            }
            if (!started.compareAndSet(false, true)) {
                throw new IllegalStateException("scheduler already started");
            }
            FirstSlots first;
            try {
                first = FirstSlots.read(provider, clock, jobs);
                membership.start(); // its writes (the config, a heartbeat) may be repeated: a start that fails here is retried whole
            } catch (RuntimeException e) {
                started.set(false); // nothing of this worker's own state was changed: it may be started again
                throw e;
            }
            begin(first);
        }
    }

    /** Queues what {@link #start} read ({@link FirstSlots}), then starts the threads. */
    private void begin(FirstSlots first) {
        List<ScheduledJob> jobs = first.queue(queue, events, clock.now());
        events.info("worker_started").addKeyValue("jobs", jobs.size()).addKeyValue("threads", threads.size)
                .addKeyValue("lock_store", provider.describe()).addKeyValue("clock_offset_ms", clock.offsetMillis())
                .addKeyValue("config_hash", membership.configHash()).log("worker started");
        runner.open();
        starter.open();
        ticker.start();
        if (expectations != null) {
            expectations.open();
        }
        begun = true;
    }

    /**
     * Puts {@code definitions} in force in place of the jobs this scheduler runs, without a stop
     * (a worker's reload, or an application adding and removing jobs): new and changed jobs start
     * at their next slot after now, removed and disabled ones claim nothing new while their runs in
     * flight finish, unchanged ones go on as they were ({@link Reload} has the details). All or
     * nothing: when a job cannot be created, nothing changes.
     *
     * @throws LockstepException when a job cannot be created, or its params do not fit it
     * @throws IllegalArgumentException when two definitions share a name
     * @throws IllegalStateException once the scheduler is closed
     */
    public ScheduleUpdate update(List<JobDefinition> definitions) {
        synchronized (lifecycle) {
            if (closed.get()) {
                throw new IllegalStateException("scheduler closed");
            }
            List<JobDefinition> next = List.copyOf(definitions);
            requireExpectations(provider, next);
            ScheduleUpdate update = reload.apply(next, started.get());
            this.definitions = next;
            return update;
        }
    }

    /**
     * The job definitions in force, in order, disabled ones included: as built, then as the latest
     * {@link #update} (a worker's reload) put them. What a status view of this worker should show.
     */
    public List<JobDefinition> definitions() {
        return definitions;
    }

    /**
     * Stops claiming, lets running jobs finish up to the shutdown timeout, interrupts the rest and
     * records their outcomes, then stops the watchdog, then closes the job instances that are
     * {@link AutoCloseable} (newest first, each once; see {@link Builder#closeJobs}). Does not close
     * the provider or the job factory: whoever built them closes them, after this. A call while
     * another is stopping the scheduler returns when that one has.
     */
    @Override
    public void close() {
        stopWithin(shutdownTimeout, false);
    }

    /**
     * Drains this worker ({@code lockstep drain}, the worker's SIGUSR1, or this call): stops claiming
     * at once, lets its running jobs finish within {@code within}, which may be far longer than the
     * shutdown timeout a SIGTERM allows, then stops as {@link #close} does (a job still running then
     * is interrupted, and handed over under {@code recover: rerun}). A deploy drains a worker before
     * it stops it, so that a long batch ends where it runs instead of starting again on a peer.
     * Returns when stopped; a call while the scheduler is stopping returns when that stop has.
     */
    public void drain(Duration within) {
        stopWithin(Objects.requireNonNull(within, "within"), true);
    }

    private void stopWithin(Duration timeout, boolean drain) {
        boolean first;
        synchronized (lifecycle) {
            first = closed.compareAndSet(false, true);
        }
        if (!first) {
            if (!drain) {
                // A close during a drain (a SIGTERM, a context closing): the running jobs get no more than its timeout.
                draining = false;
                runner.shortenDrain(timeout);
            }
            stopped.await(runner, timeout.plus(INTERRUPT_GRACE).plusSeconds(30)); // returns when the first close has
            return;
        }
        draining = drain;
        try {
            stop(timeout, drain);
        } finally {
            draining = false;
            stopped.stopped();
        }
    }

    private void stop(Duration timeout, boolean drain) {
        if (!started.get()) { // built, never started (a context that failed to refresh): nothing runs, nobody to tell
            created.closeWithin(java.util.Set.of(), timeout);
            return;
        }
        events.info("worker_stopping").addKeyValue("running", threads.busy())
                .addKeyValue("shutdown_timeout_ms", timeout.toMillis()).addKeyValue("clock_offset_ms", clock.offsetMillis())
                .addKeyValue("drain", drain)
                .log(threads.busy() == 0 ? "stopping: no new claims; nothing is running"
                        : "stopping: no new claims; letting " + threads.busy() + " running job(s) finish within "
                        + (drain ? "the drain's " + timeout : "the shutdown timeout") + ", then interrupting the rest and writing every outcome");
        membership.drain(); // peers stop preferring this worker for slots while it drains
        backfills.close(); // the next worker by the hash drives them on
        if (expectations != null) {
            expectations.close(); // the others judge on; a verdict not delivered here is delivered by one of them after its lease
        }
        ticker.stop();
        starter.close(); // claims made ahead not started yet go back to the peers now
        boolean drained = runner.drain(timeout, INTERRUPT_GRACE);
        membership.stop();
        created.closeWithin(runner.jobsRunning(), shutdownTimeout); // every run has ended, its outcome written: their resources may go
        events.info("worker_stopped").addKeyValue("drained", drained).addKeyValue("busy", threads.busy())
                .addKeyValue("clock_offset_ms", clock.offsetMillis()).log("worker stopped");
    }

    /** How long a drain lets running jobs finish when no deadline is given ({@code lockstep drain}, the worker's SIGUSR1). */
    public static final Duration DEFAULT_DRAIN = Duration.ofHours(1);

    private static ExecutorService defaultExecutor(int threads) {
        AtomicInteger n = new AtomicInteger();
        return new ThreadPoolExecutor(threads, threads, 60, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), r -> {
            Thread t = new Thread(r, "lockstep-job-" + n.incrementAndGet());
            t.setDaemon(false);
            return t;
        });
    }

    /**
     * Builds a {@link Scheduler}. Fails fast on a bad value. Not thread-safe.
     */
    public static final class Builder {
        private final LockProvider provider;
        private String workerId = "";
        private int threads = DEFAULT_THREADS;
        private java.util.Set<String> labels = java.util.Set.of();
        private Duration shutdownTimeout = DEFAULT_SHUTDOWN_TIMEOUT;
        private Clock clock = Clock.systemUTC();
        private JobFactory jobFactory = JobFactory.reflective();
        private boolean closeJobs = true;
        private ExecutorService executor;
        private final List<JobDefinition> jobs = new ArrayList<>();
        private io.micrometer.core.instrument.MeterRegistry meterRegistry =
                new io.micrometer.core.instrument.composite.CompositeMeterRegistry();
        private boolean meterRegistryGiven;
        private java.util.function.Consumer<Duration> drainRequested;
        private Alerts alerts = Alerts.NONE;
        /** An {@code io.opentelemetry.api.OpenTelemetry}, or null: typed Object so this class loads without the API. */
        private Object openTelemetry;

        private Builder(LockProvider provider) {
            this.provider = Objects.requireNonNull(provider, "provider");
        }

        /**
         * What to do when an operator asks this worker to drain ({@code lockstep drain}): by default
         * the scheduler {@link Scheduler#drain drains} itself on a thread of its own (and the
         * application goes on without it). The worker JAR drains and then exits. Called on a thread
         * of its own, once.
         */
        public Builder onDrainRequest(java.util.function.Consumer<Duration> action) {
            this.drainRequested = Objects.requireNonNull(action, "action");
            return this;
        }

        /** This worker's id in events and slot records; blank means {@code <hostname>-<pid>}. */
        public Builder workerId(String id) {
            this.workerId = Objects.requireNonNull(id, "workerId");
            return this;
        }

        /**
         * Where the scheduler's meters go ({@code lockstep.claims}, {@code lockstep.runs}, ...; see
         * DESIGN.md); by default nowhere.
         */
        public Builder meterRegistry(io.micrometer.core.instrument.MeterRegistry registry) {
            this.meterRegistry = Objects.requireNonNull(registry, "registry");
            this.meterRegistryGiven = true;
            return this;
        }

        /**
         * Traces each run with this OpenTelemetry: one span per run ({@code lockstep.run <job>}),
         * the job running inside it, its ids in the run's events (OPERATIONS lists the attributes).
         * Without this call, runs are traced through {@code GlobalOpenTelemetry} once an SDK or the
         * agent has set it, and not at all without the OpenTelemetry API on the class path.
         */
        public Builder openTelemetry(io.opentelemetry.api.OpenTelemetry openTelemetry) {
            this.openTelemetry = Objects.requireNonNull(openTelemetry, "openTelemetry");
            return this;
        }

        /**
         * This worker's labels ({@code worker.labels}): a job with {@code runOn: {labels: [...]}} runs
         * only on workers that have all of them; the others report its slots nobody decided
         * ({@code no_worker}). None by default.
         */
        public Builder labels(java.util.Set<String> labels) {
            this.labels = java.util.Set.copyOf(labels);
            return this;
        }

        /** How many jobs run at once on this worker (default 8). */
        /** Where the verdicts of the jobs' expectations are sent besides the log ({@code alerts:}); none by default. */
        public Builder alerts(Alerts alerts) {
            this.alerts = java.util.Objects.requireNonNull(alerts, "alerts");
            return this;
        }

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

        /**
         * Whether {@link #close()} closes the job instances that are {@link AutoCloseable} (default:
         * yes). Off when something else owns them, a dependency-injection container for example.
         */
        public Builder closeJobs(boolean close) {
            this.closeJobs = close;
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
            JobSet.requireUniqueNames(jobs);
            requireExpectations(provider, jobs);
            if (workerId.isBlank()) {
                workerId = Membership.hostName() + "-" + ProcessHandle.current().pid();
            }
            return new Scheduler(this);
        }
    }

    /**
     * Refuses jobs with an expectation on a store that cannot judge them (Redlock), and on an
     * every-worker job (whose instances run on each worker: which of them would it judge?).
     *
     * @throws LockstepException naming the first such job
     */
    static void requireExpectations(io.lockstep.scheduler.lock.LockProvider provider, List<JobDefinition> definitions) {
        for (JobDefinition d : definitions) {
            if (!d.uses().isEmpty() && provider.permits().isEmpty()) {
                throw new LockstepException("job " + d.name() + ": uses (limits) is not available on " + provider.describe()
                        + " (limits are kept on one Redis, Sentinel or Cluster: not on Redlock)");
            }
            if (!d.expect().any()) {
                continue;
            }
            if (d.runOn().everyWorker()) {
                throw new LockstepException("job " + d.name() + ": expect is not available on a job that runs on every worker");
            }
            if (provider.expectations().isEmpty()) {
                throw new LockstepException("job " + d.name() + ": expect is not available on " + provider.describe()
                        + " (expectations are judged from the jobs' history on one Redis, Sentinel or Cluster: not on Redlock,"
                        + " nor with a history of 0 runs)");
            }
        }
    }
}
