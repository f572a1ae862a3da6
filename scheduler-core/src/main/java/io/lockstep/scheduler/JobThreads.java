package io.lockstep.scheduler;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * How many of this worker's job threads are taken: reserved by a claim in flight or running a job.
 * A worker claims only what its free threads can start now. Thread-safe.
 */
final class JobThreads {

    final int size;
    private final AtomicInteger busy = new AtomicInteger();

    JobThreads(int size) {
        this.size = size;
    }

    int busy() {
        return busy.get();
    }

    int free() {
        return size - busy.get();
    }

    boolean anyFree() {
        return busy.get() < size;
    }

    void take(int n) {
        busy.addAndGet(n);
    }

    void release(int n) {
        busy.addAndGet(-n);
    }

    /** How busy, from 0 to 1. */
    double load() {
        return (double) busy.get() / size;
    }
}
