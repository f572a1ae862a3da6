package io.lockstep.examples.it;

import io.lockstep.scheduler.Job;
import io.lockstep.scheduler.JobContext;
import io.lockstep.scheduler.JobDefinition;
import io.lockstep.scheduler.JobFactory;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * An application's job factory, as a jobs JAR registers it ({@code META-INF/services}): it opens a
 * shared resource once (its constructor), hands it to jobs that have no no-arg constructor, and
 * closes it when the worker stops; each step is a line in the file named by the system property
 * {@code lifecycle.log}, so a test can read the order in which the worker did them.
 */
public final class LifecycleFactory implements JobFactory, AutoCloseable {

    private final Path log = Path.of(System.getProperty("lifecycle.log"));

    public LifecycleFactory() {
        write("open factory");
    }

    @Override
    public Job create(JobDefinition definition) {
        return new PooledJob(this, definition.name());
    }

    @Override
    public void close() {
        write("close factory");
    }

    synchronized void write(String line) {
        try {
            Files.writeString(log, line + "\n", StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A job that needs the factory's resource: it cannot be built by reflection. */
    public static final class PooledJob implements Job, AutoCloseable {
        private final LifecycleFactory pool;
        private final String name;

        PooledJob(LifecycleFactory pool, String name) {
            this.pool = pool;
            this.name = name;
        }

        @Override
        public void execute(JobContext context) throws InterruptedException {
            Thread.sleep(300);
            pool.write("ran " + name + " " + context.scheduledTime());
        }

        @Override
        public void close() {
            pool.write("close job " + name);
        }
    }
}
