package io.lockstep.scheduler;

import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * Hands many runs due at one instant to a pool as a tree: the caller wakes one job thread, and
 * every job thread, before it runs its own, wakes two more, while runs are left without a thread.
 *
 * <p>Why: handing a few hundred runs to a pool from one thread wakes its threads one after the
 * other, and each woken thread can preempt the one handing them out (the kernel favours a thread
 * that slept), so the last run waited for every run before it; measured, 0.3 to 9 ms to hand out
 * 330 runs. As a tree, the wake-ups spread over the pool's threads and the cores, about log2(N)
 * of them deep (see BENCHMARKS).
 *
 * <p>Exactly one task per run reaches the pool (or is refused), and each task takes the next run
 * in order, so every run is run once: by a task, or, when the pool refuses a task (it is shut
 * down), handed to {@code refused} by the thread that was refused. Thread-safe.
 */
final class FanOut<T> implements Runnable {

    private final List<T> runs;
    private final Executor executor;
    private final Consumer<T> run;
    private final Consumer<T> refused;
    /** Tasks handed to the pool so far (or refused): never more than runs. */
    private final AtomicInteger handed = new AtomicInteger();
    /** Runs taken by a task (or refused) so far. */
    private final AtomicInteger taken = new AtomicInteger();

    private FanOut(List<T> runs, Executor executor, Consumer<T> run, Consumer<T> refused) {
        this.runs = runs;
        this.executor = executor;
        this.run = run;
        this.refused = refused;
    }

    /**
     * Runs each of {@code runs} once with {@code run} on {@code executor}'s threads, or, if the
     * executor refuses, hands it to {@code refused} on the calling thread.
     */
    static <T> void start(List<T> runs, Executor executor, Consumer<T> run, Consumer<T> refused) {
        if (!runs.isEmpty()) {
            new FanOut<>(List.copyOf(runs), executor, run, refused).handOne();
        }
    }

    @Override
    public void run() {
        handOne(); // wake two more threads first: the tree grows while this one works
        handOne();
        run.accept(runs.get(taken.getAndIncrement()));
    }

    /**
     * This task was taken off the pool before it ran ({@code shutdownNow}): its run, and those it
     * would have handed on, never start; each is handed to {@code refused}, once.
     */
    void dropped() {
        refused.accept(runs.get(taken.getAndIncrement()));
        while (handed.getAndIncrement() < runs.size()) {
            refused.accept(runs.get(taken.getAndIncrement()));
        }
    }

    /**
     * Hands one more task to the pool while some run has none. A refused task's run is handed to
     * {@code refused} here, and the next task is tried (a pool that refuses one refuses them all:
     * each run left is then handed back by this thread, none is stranded).
     */
    private void handOne() {
        while (handed.getAndIncrement() < runs.size()) {
            try {
                executor.execute(this);
                return;
            } catch (RuntimeException | Error e) { // refused (shut down), no thread to be had, or any other failure
                refused.accept(runs.get(taken.getAndIncrement())); // that task never runs: its run never starts
            }
        }
    }
}
