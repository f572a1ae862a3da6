package io.lockstep.scheduler;

/** One run {@link Starter} holds: when to act on it next, and whether the store started it. Guarded by the starter's lock. */
final class Staged {
    final SlotRun run;
    /** Until when the staged claim's short lease is ours for certain (monotonic nanos). */
    final long leaseEndsNanos;
    long atNanos;
    boolean started;
    /** Its start was sent at least once: a retry waits for its own time, never joins earlier. */
    boolean tried;
    long startSentNanos;
    /** Dealt with for good (handed to the pool, reported, or handed back): never touched again. */
    boolean done;

    Staged(SlotRun run, long leaseEndsNanos) {
        this.run = run;
        this.leaseEndsNanos = leaseEndsNanos;
        this.atNanos = run.startAtNanos - Starter.LEAD.toNanos();
    }
}
