package io.lockstep.spring;

import io.lockstep.scheduler.Scheduler;
import io.lockstep.scheduler.lock.LockException;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

/**
 * Starts the scheduler once the context is refreshed (every bean ready, the jobs' resources
 * included) and stops it first at shutdown: the highest phase, so it drains its running jobs
 * ({@code worker.shutdownTimeout}, then an interrupt and 5 s) while the web server and every
 * bean the jobs use are still up; the lock provider is closed after, when the beans are destroyed.
 * Boot waits {@code spring.lifecycle.timeout-per-shutdown-phase} (default 30s) for a phase: set it
 * above the shutdown timeout plus 5 s when the jobs may take that long.
 *
 * <p>With Redis unreachable at start, the context's start fails (nothing half-started), unless
 * {@code lockstep.fail-fast=false}: then the application starts without claiming, and a thread
 * starts the scheduler once Redis answers, asking after 1 s, doubling to 10 s ({@code Scheduler.start}
 * changes nothing until it has read what it needs, so it may be called again). A stop ends that
 * thread before it closes the scheduler.
 */
final class LockstepLifecycle implements SmartLifecycle {

    private static final Logger EVENTS = LoggerFactory.getLogger("io.lockstep.events");
    static final Duration FIRST_RETRY = Duration.ofSeconds(1);
    static final Duration LONGEST_RETRY = Duration.ofSeconds(10);

    private final Scheduler scheduler;
    private final boolean failFast;
    private volatile boolean running;
    private Thread retrying;

    LockstepLifecycle(Scheduler scheduler, boolean failFast) {
        this.scheduler = scheduler;
        this.failFast = failFast;
    }

    @Override
    public synchronized void start() {
        if (failFast) {
            scheduler.start(); // fails the context's start when Redis cannot be reached: nothing half-started
            running = true;
            return;
        }
        running = true;
        try {
            scheduler.start();
        } catch (LockException e) {
            if (!unreachable(e)) {
                running = false;
                throw e; // refused (a password, an ACL, TLS, another key layout): a mistake, told at startup as with fail-fast
            }
            EVENTS.atWarn().addKeyValue("event", "lock_store_unreachable_at_start").addKeyValue("worker", scheduler.workerId())
                    .addKeyValue("error", e.getMessage())
                    .log("the lock store cannot be reached: the application starts without claiming, and Lockstep starts once it "
                            + "answers (lockstep.fail-fast=false)");
            retrying = new Thread(this::retry, "lockstep-start");
            retrying.setDaemon(true);
            retrying.start();
        }
    }

    private void retry() {
        // (A stop interrupts this thread and waits for it before it closes the scheduler: no start after a close.)
        Duration wait = FIRST_RETRY;
        for (int attempt = 1; !Thread.currentThread().isInterrupted(); attempt++) {
            try {
                Thread.sleep(wait.toMillis()); // the back-off between attempts, not a wait for an outcome
                scheduler.start();
                return; // worker_started says it is claiming now
            } catch (InterruptedException e) {
                return; // stopped
            } catch (LockException e) {
                if (!unreachable(e)) {
                    EVENTS.atError().addKeyValue("event", "worker_start_failed").addKeyValue("worker", scheduler.workerId())
                            .addKeyValue("error", e.getMessage())
                            .log("Lockstep could not start (" + e.getMessage() + "): it claims nothing in this application");
                    return;
                }
                if (attempt % 10 == 0) {
                    EVENTS.atWarn().addKeyValue("event", "lock_store_unreachable_at_start").addKeyValue("worker", scheduler.workerId())
                            .addKeyValue("attempts", attempt).addKeyValue("error", e.getMessage())
                            .log("the lock store still cannot be reached (" + e.getMessage() + "): Lockstep keeps trying");
                }
            } catch (IllegalStateException e) {
                return; // closed meanwhile (a context that failed to refresh closes before it stops its lifecycles)
            } catch (RuntimeException e) {
                EVENTS.atError().addKeyValue("event", "worker_start_failed").addKeyValue("worker", scheduler.workerId())
                        .addKeyValue("error", e.toString()).log("Lockstep could not start (" + e + "): it claims nothing in this application");
                return;
            }
            wait = wait.multipliedBy(2).compareTo(LONGEST_RETRY) > 0 ? LONGEST_RETRY : wait.multipliedBy(2);
        }
    }

    /**
     * Whether the store could not be reached (a refused or timed-out connection): only then does a
     * start wait for it. A store that answers and refuses (credentials, ACL, TLS, a key layout) or
     * answers what the client cannot read is a problem no wait mends.
     */
    static boolean unreachable(LockException e) {
        if (e.getMessage() != null && e.getMessage().startsWith("redlock: ") && e.getMessage().contains("nodes answered and count")) {
            return true; // too few Redlock masters answered (Quorum.tooFew): their own failures are only named in it
        }
        for (Throwable c = e.getCause(); c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof redis.clients.jedis.exceptions.JedisConnectionException || c instanceof java.net.ConnectException
                    || c instanceof java.net.SocketTimeoutException) {
                return !(c.getMessage() != null && (c.getMessage().contains("WRONGPASS") || c.getMessage().contains("NOAUTH")));
            }
        }
        return false;
    }

    @Override
    public void stop() {
        Thread t;
        synchronized (this) {
            t = retrying;
            retrying = null;
        }
        if (t != null) {
            t.interrupt();
            try {
                t.join(); // a start under way finishes (or fails) first: the close below then stops what it started
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
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
