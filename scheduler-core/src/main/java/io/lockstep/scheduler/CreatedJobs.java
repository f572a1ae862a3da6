package io.lockstep.scheduler;

import io.lockstep.scheduler.config.ConfigException;
import io.lockstep.scheduler.config.ConfigProblem;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;

/**
 * The job instances a scheduler had its {@link JobFactory} create, and their closing: a job that
 * holds a resource (a connection pool, a client) implements {@link AutoCloseable} and is closed
 * once when the scheduler stops, after the drain (every run ended and its outcome written), in the
 * reverse order of creation; an instance the factory handed out for several jobs is closed once. A
 * close that throws is reported ({@code job_close_failed}) and the others are still closed; a job
 * whose run ignored its interrupt and still executes is not closed under it
 * ({@code job_close_skipped}). When the factory fails part way (an exception, or no job), the
 * instances it created so far are closed and the failure becomes one {@link LockstepException}
 * naming the job. A reload ({@link Scheduler#update}) creates the jobs it adds or changes
 * ({@link #more}); the versions it retires are closed with the rest at the stop, never before:
 * a retired version may still run a slot that fell due, or was claimed, before the reload (see
 * {@link JobSet}). Thread-safe.
 */
final class CreatedJobs {

    /** Every instance created and not closed yet, oldest first. */
    private final List<ScheduledJob> jobs;
    private final boolean close;
    private final Events events;

    /** This worker's labels: a job whose {@link RunOn} they do not allow is created but not run here. */
    private final Set<String> labels;
    /** This worker's id: an every-worker job runs here as its instance {@code <job>@<id>}. */
    private final String workerId;

    private CreatedJobs(List<ScheduledJob> jobs, boolean close, Events events, Set<String> labels, String workerId) {
        this.labels = Set.copyOf(labels);
        this.workerId = workerId;
        this.jobs = new ArrayList<>(jobs);
        this.close = close;
        this.events = events;
    }

    /** Creates a job for every enabled definition, in order. */
    static CreatedJobs create(List<JobDefinition> definitions, JobFactory factory, boolean close, Events events) {
        return create(definitions, factory, close, events, List.of(), Set.of(), "");
    }

    /** {@link #create}, on worker {@code workerId} with {@code labels}. */
    static CreatedJobs create(List<JobDefinition> definitions, JobFactory factory, boolean close, Events events, Set<String> labels,
            String workerId) {
        return create(definitions, factory, close, events, List.of(), labels, workerId);
    }

    /** {@link #create}, where a failure does not close an instance the factory also handed to one of {@code inUse}. */
    private static CreatedJobs create(List<JobDefinition> definitions, JobFactory factory, boolean close, Events events,
            List<ScheduledJob> inUse, Set<String> labels, String workerId) {
        List<ScheduledJob> created = new ArrayList<>();
        try {
            for (JobDefinition definition : definitions) {
                if (definition.enabled()) {
                    Job job = build(factory, definition);
                    // An every-worker job runs here as this worker's own instance of it (its own slots and records).
                    JobDefinition here = definition.runOn().everyWorker() ? definition.instanceFor(workerId) : definition;
                    created.add(new ScheduledJob(here, job, definition.runOn().allows(labels)));
                    checkParams(definition, job); // after it joined the created ones: a refusal closes it too
                }
            }
        } catch (RuntimeException | Error e) {
            Set<Job> shared = Collections.newSetFromMap(new IdentityHashMap<>());
            inUse.forEach(j -> shared.add(j.job()));
            new CreatedJobs(created.stream().filter(j -> !shared.contains(j.job())).toList(), close, events, labels, workerId).close(Set.of());
            throw e;
        }
        return new CreatedJobs(created, close, events, labels, workerId);
    }

    /** One job from the factory; whatever goes wrong is one {@link LockstepException} naming the job. */
    private static Job build(JobFactory factory, JobDefinition definition) {
        Job job;
        try {
            job = factory.create(definition);
        } catch (LockstepException e) {
            throw e;
        } catch (RuntimeException | LinkageError e) {
            throw new LockstepException("job " + definition.name() + ": the job factory " + factory.getClass().getName()
                    + " failed: " + e, e);
        }
        if (job == null) {
            throw new LockstepException("job " + definition.name() + ": the job factory " + factory.getClass().getName()
                    + " returned no job");
        }
        return job;
    }

    /**
     * The definition's params must fit the type the job declares: the config loader checks that
     * (with the YAML's line) for jobs it built itself; jobs built by an application's factory are
     * checked here, when the scheduler is built, so a typo stops the worker before it starts: a
     * {@link ConfigException} (the worker exits 2, as for any bad config).
     */
    private static void checkParams(JobDefinition definition, Job job) {
        Class<?> type;
        try {
            type = job.paramsType();
        } catch (RuntimeException e) {
            throw new LockstepException("job " + definition.name() + ": paramsType() of " + job.getClass().getName() + " failed: " + e, e);
        }
        if (type == null) {
            return;
        }
        Params.problem(definition.params(), type).ifPresent(p -> {
            throw new ConfigException(List.of(new ConfigProblem("job " + definition.name(), 0,
                    "params" + (p.path().isEmpty() ? "" : "." + p.path()),
                    p.message() + (p.unknownKey() == null ? "" : Params.suggestion(p.unknownKey(), p.knownKeys())))));
        });
    }

    synchronized List<ScheduledJob> jobs() {
        return List.copyOf(jobs);
    }

    /**
     * Creates the jobs of {@code definitions} (a reload's new and changed ones) with {@code factory},
     * as {@link #create} does: all of them, or none (what was made is closed, and it throws).
     */
    /** The name a definition is scheduled under here: its own, or this worker's instance of an every-worker job. */
    String nameHere(JobDefinition d) {
        return d.runOn().everyWorker() ? RunOn.instance(d.name(), workerId) : d.name();
    }

    List<ScheduledJob> more(List<JobDefinition> definitions, JobFactory factory) {
        List<ScheduledJob> made = create(definitions, factory, close, events, jobs(), labels, workerId).jobs;
        synchronized (this) {
            jobs.addAll(made);
        }
        return made;
    }

    /**
     * {@link #close} on a thread of its own, for at most {@code timeout}: a job's close that never
     * returns must not keep the worker from exiting ({@code job_close_timed_out}).
     */
    void closeWithin(Set<String> stillRunning, java.time.Duration timeout) {
        Thread closer = new Thread(() -> close(stillRunning), "lockstep-close-jobs");
        closer.setDaemon(true);
        closer.start();
        try {
            closer.join(Math.max(1, timeout.toMillis()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (closer.isAlive()) {
            events.error("job_close_timed_out").addKeyValue("timeout_ms", timeout.toMillis())
                    .log("closing the jobs did not end within the shutdown timeout; exiting without waiting for it");
        }
    }

    /**
     * Closes every instance that is {@link AutoCloseable}, each once, newest first (unless closing
     * is off), but not those of the jobs in {@code stillRunning}, nor an instance one of them shares.
     */
    void close(Set<String> stillRunning) {
        if (!close) {
            return;
        }
        List<ScheduledJob> jobs = jobs();
        Set<Job> inUse = Collections.newSetFromMap(new IdentityHashMap<>());
        for (ScheduledJob j : jobs) {
            if (stillRunning.contains(j.definition().name())) {
                inUse.add(j.job());
            }
        }
        Set<Job> closed = Collections.newSetFromMap(new IdentityHashMap<>());
        List<ScheduledJob> newestFirst = new ArrayList<>(jobs);
        Collections.reverse(newestFirst);
        boolean interrupted = false;
        for (ScheduledJob j : newestFirst) {
            if (!(j.job() instanceof AutoCloseable closeable) || !closed.add(j.job())) {
                continue;
            }
            if (inUse.contains(j.job())) {
                events.warn("job_close_skipped").addKeyValue("job", j.definition().name())
                        .log("not closing the job: a run of it ignored its interrupt and still executes");
                continue;
            }
            try {
                closeable.close();
            } catch (Throwable e) { // one job's failure, whatever it is, must not keep the others open
                interrupted |= e instanceof InterruptedException;
                events.error("job_close_failed").addKeyValue("job", j.definition().name())
                        .addKeyValue("error", String.valueOf(e)).log("closing the job failed");
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt(); // restored after the loop, so the later closes were not cut short
        }
    }
}
