package io.lockstep.redis;

import io.lockstep.scheduler.lock.WorkerInfo;
import java.util.Collection;
import java.util.List;
import java.util.function.Supplier;

/**
 * What membership does about live workers of another key layout on the same Redis ({@link LegacyLayout}
 * says why the two must never run side by side): the first publication of this worker's config is
 * refused while one is live, looked for before it and again once its jobs are held paused for them
 * (so one that started in between is caught before any claim of ours went out), and each heartbeat
 * reports them and keeps the holds written. Apart from {@link RedisMembers}, which keeps the
 * workers' list and only hands over the entries of another layout: refusing a start is a policy of
 * its own, not a part of reading who is live. Thread-safe.
 */
final class LayoutGuard {

    private final LegacyLayout legacy;
    private final String target;
    /** The live workers of another key layout, read from the workers' list when asked. */
    private final Supplier<List<WorkerInfo>> others;

    LayoutGuard(RedisCalls calls, String prefix, Supplier<List<WorkerInfo>> others) {
        this.legacy = new LegacyLayout(calls, prefix);
        this.target = calls.target;
        this.others = others;
    }

    /** Whether a publication has passed both looks for workers of another key layout (see {@link #publish}). */
    private volatile boolean refusalPassed;

    /**
     * Publishes a config's {@code jobs} by {@code write}, then holds them paused for layout 1 workers
     * ({@link LegacyLayout#hold}); the first publication looks for live workers of another layout
     * before it and after the hold.
     *
     * @throws io.lockstep.scheduler.lock.LockException at the first, when a live worker of another
     *     key layout uses this Redis: the worker refuses to start (one line naming each)
     */
    void publish(Collection<String> jobs, Runnable write) {
        boolean first = !refusalPassed; // not holding(): a start that failed after the hold is retried whole
        if (first) {
            refuseBesideOtherLayouts();
        }
        write.run();
        legacy.hold(jobs, System.currentTimeMillis());
        if (first) {
            refuseBesideOtherLayouts(); // one that started between the first look and the hold (no claim of ours went out yet)
            refusalPassed = true;
        }
    }

    /**
     * With each heartbeat: reports the live workers of another layout ({@code others}), and writes
     * the holds again that are due ({@code keeper}: whether this worker keeps them for its config,
     * see {@link LegacyLayout#refresh}).
     */
    void beat(List<WorkerInfo> others, boolean keeper) {
        legacy.report(describe(others));
        legacy.refresh(System.currentTimeMillis(), keeper);
    }

    private void refuseBesideOtherLayouts() {
        List<String> others = describe(this.others.get());
        if (!others.isEmpty()) {
            throw new io.lockstep.scheduler.lock.LockException(target, LegacyLayout.refusal(target, others), null);
        }
    }

    /** Workers as "id on host (version)". */
    private static List<String> describe(List<WorkerInfo> workers) {
        return workers.stream().map(w -> w.id() + " on " + w.host() + " (" + (w.version().isEmpty() ? "an older version" : w.version()) + ")")
                .toList();
    }
}
