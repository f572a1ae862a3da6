package io.lockstep.spring;

import io.lockstep.scheduler.Scheduler;
import org.springframework.context.SmartLifecycle;

/**
 * Starts the scheduler once the context is refreshed (every bean ready, the jobs' resources
 * included) and stops it first at shutdown: the highest phase, so it drains its running jobs
 * ({@code worker.shutdownTimeout}, then an interrupt and 5 s) while the web server and every
 * bean the jobs use are still up; the lock provider is closed after, when the beans are destroyed.
 * Boot waits {@code spring.lifecycle.timeout-per-shutdown-phase} (default 30s) for a phase: set it
 * above the shutdown timeout plus 5 s when the jobs may take that long.
 */
final class LockstepLifecycle implements SmartLifecycle {

    private final Scheduler scheduler;
    private volatile boolean running;

    LockstepLifecycle(Scheduler scheduler) {
        this.scheduler = scheduler;
    }

    @Override
    public void start() {
        scheduler.start(); // fails the context's start when Redis cannot be reached: nothing half-started
        running = true;
    }

    @Override
    public void stop() {
        scheduler.close();
        running = false;
    }

    @Override
    public void stop(Runnable callback) {
        Thread t = new Thread(() -> {
            try {
                stop();
            } finally {
                callback.run();
            }
        }, "lockstep-stop");
        t.start();
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    @Override
    public int getPhase() {
        return Integer.MAX_VALUE; // stopped first: before the web server's graceful shutdown, before any bean is destroyed
    }
}
