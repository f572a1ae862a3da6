package io.lockstep.scheduler;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The end of a scheduler's first {@link Scheduler#close}: a second close (a container's destroy
 * after its own stop timed out) waits for it, so that whoever closes the lock provider next cannot
 * cut the drain short. Thread-safe.
 */
final class StopLatch {

    private final CountDownLatch stopped = new CountDownLatch(1);

    void stopped() {
        stopped.countDown();
    }

    /**
     * Waits for the first close to end, through interrupts (a container may interrupt its destroy
     * thread; the flag is set again after), for at most {@code atMost}; at once on a job thread,
     * whose own run the drain waits for.
     */
    void await(Runner runner, Duration atMost) {
        if (runner.onJobThread()) {
            return;
        }
        long end = System.nanoTime() + atMost.toNanos();
        boolean interrupted = false;
        while (stopped.getCount() > 0 && System.nanoTime() < end) {
            try {
                stopped.await(end - System.nanoTime(), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }
}
