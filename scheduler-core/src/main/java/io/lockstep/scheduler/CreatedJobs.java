package io.lockstep.scheduler;

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
 * close that throws is reported ({@code job_close_failed}) and the others are still closed. When
 * the factory fails part way, the instances it created so far are closed before the error
 * propagates. Not thread-safe: the scheduler builds, then closes, from one thread.
 */
final class CreatedJobs {

    private final List<ScheduledJob> jobs;
    private final boolean close;
    private final Events events;

    private CreatedJobs(List<ScheduledJob> jobs, boolean close, Events events) {
        this.jobs = List.copyOf(jobs);
        this.close = close;
        this.events = events;
    }

    /** Creates a job for every enabled definition, in order. */
    static CreatedJobs create(List<JobDefinition> definitions, JobFactory factory, boolean close, Events events) {
        List<ScheduledJob> created = new ArrayList<>();
        try {
            for (JobDefinition definition : definitions) {
                if (definition.enabled()) {
                    created.add(new ScheduledJob(definition, factory.create(definition)));
                }
            }
        } catch (RuntimeException | Error e) {
            new CreatedJobs(created, close, events).close();
            throw e;
        }
        return new CreatedJobs(created, close, events);
    }

    List<ScheduledJob> jobs() {
        return jobs;
    }

    /** Closes every instance that is {@link AutoCloseable}, each once, newest first (unless closing is off). */
    void close() {
        if (!close) {
            return;
        }
        Set<Job> closed = Collections.newSetFromMap(new IdentityHashMap<>());
        List<ScheduledJob> newestFirst = new ArrayList<>(jobs);
        Collections.reverse(newestFirst);
        for (ScheduledJob j : newestFirst) {
            if (j.job() instanceof AutoCloseable closeable && closed.add(j.job())) {
                try {
                    closeable.close();
                } catch (Exception e) {
                    if (e instanceof InterruptedException) {
                        Thread.currentThread().interrupt();
                    }
                    events.error("job_close_failed").addKeyValue("job", j.definition().name())
                            .addKeyValue("error", String.valueOf(e)).log("closing the job failed");
                }
            }
        }
    }
}
