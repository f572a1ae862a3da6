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
    private volatile boolean shuttingDown;

    Runner(LockProvider provider, ExecutorService executor, JobThreads threads, ClusterClock clock, Events events,
            Outage outage, SlotQueue queue) {
        this.executor = executor;
        this.threads = threads;
        this.clock = clock;
        this.events = events;
        this.queue = queue;
        this.completer = new Completer(provider, events, outage);
        this.watchdog = new Watchdog<>("lockstep-watchdog",
                runs -> provider.renew(runs.stream().map(run -> run.lease).toList()), new LeaseEvents(outage));
    }

    void open() {
        completer.start();
    }

    /** Whether this worker ran the job's {@code slot} and is still writing its outcome. */
    boolean writingOutcome(String job, java.time.Instant slot) {
        return completer.writing(job, slot);
    }

    /** Starts a claimed run on a job thread (reserved for it by the claim). */
    void start(SlotRun run) {
        run.watchedBy(watchdog.watch(run, run.lease.ttl(), run.claimSentNanos, true));
        try {
            executor.execute(() -> execute(run));
        } catch (RejectedExecutionException e) {
            run.watch().stop();
            completer.submit(run, Outcome.INTERRUPTED);
            threads.release(1);
        }
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
        boolean drained = await(timeout);
        if (!drained) {
            executor.shutdownNow();
            drained = await(interruptGrace);
        }
        completer.close();
        watchdog.close();
        return drained;
    }

    private void execute(SlotRun run) {
        JobDefinition def = run.definition;
        String slot = run.scheduledTime().toString();
        Outcome outcome;
        try {
            boolean waited = awaitStart(run);
            if (!waited) {
                // Claimed ahead, and the worker was stopped (past its shutdown timeout) before the slot came.
                events.warn("slot_missed").addKeyValue("job", def.name()).addKeyValue("slot", slot)
                        .addKeyValue("lock_name", run.lockName).addKeyValue("lateness_ms", 0)
                        .addKeyValue("reason", "the worker stopped before the slot's time; its claim ahead never started")
                        .log("slot missed");
                events.metrics().missed(def.name(), "stopped", 1);
                outcome = Outcome.INTERRUPTED;
            } else if (run.isLeaseLost()) {
                // Told it is lost, or its deadline passed while the run waited: do not start it.
                // (When the watchdog already reported it, markLost answers false and we stay quiet.)
                if (run.markLost("lease gone before the job could start")) {
                    events.warn("lease_lost").addKeyValue("job", def.name()).addKeyValue("slot", slot)
                            .addKeyValue("lock_name", run.lockName).addKeyValue("action", "expire")
                            .addKeyValue("identifier", run.lease.token()).addKeyValue("success", false)
                            .addKeyValue("reason", "lease gone before the job could start").log("lease lost before start; job not started");
                    events.metrics().leaseLost(def.name(), "before_start");
                }
                outcome = Outcome.LEASE_LOST;
            } else {
                outcome = runJob(run, def, slot);
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
        events.metrics().ran(def.name(), outcome, run.firstStartNanos == 0 ? 0 : System.nanoTime() - run.firstStartNanos);
        completer.submit(run, outcome);
        threads.release(1);
        queue.threadFreed();
    }

    /**
     * Waits until the run may start: a claim made ahead starts at its slot by the store's clock
     * ({@link SlotRun#startAtNanos}), never before, on the monotonic clock.
     *
     * @return false when interrupted first (the worker is stopping)
     */
    private static boolean awaitStart(SlotRun run) {
        long wait;
        while ((wait = run.startAtNanos - System.nanoTime()) > 0) {
            LockSupport.parkNanos(wait);
            if (Thread.interrupted()) {
                return false;
            }
        }
        return true;
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
                    .addKeyValue("lateness_ms", Duration.between(run.scheduledTime(), clock.now()).toMillis());
            if (run.manual) {
                started = started.addKeyValue("manual", true);
            }
            started.log("job started");
            events.metrics().started(def.name(), Duration.between(run.scheduledTime(), clock.now()));
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
            if (shuttingDown && (failure instanceof InterruptedException || Thread.currentThread().isInterrupted())) {
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
            run.interrupt();
            events.warn("lease_lost").addKeyValue("job", run.definition.name())
                    .addKeyValue("slot", run.lease.slot().toString()).addKeyValue("lock_name", run.lockName)
                    .addKeyValue("action", "expire").addKeyValue("identifier", run.lease.token())
                    .addKeyValue("fencing_token", run.fencingToken()).addKeyValue("success", false)
                    .addKeyValue("reason", reason).log("lease lost; the job is interrupted and must stop");
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
}
