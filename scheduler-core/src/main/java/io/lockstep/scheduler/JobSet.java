package io.lockstep.scheduler;

import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The jobs this worker runs now, which {@link Scheduler#update} replaces as a whole. Every stage
 * reads the job of a slot through here, so a reload needs no stage to stop:
 * <ul>
 *   <li>a slot of a job still in force is claimed as ever;
 *   <li>a slot of a job version the reload retired (removed, disabled, or replaced by a changed
 *       definition) that fell due at or before the reload is still decided, claimed or reported,
 *       under the definition it fell due under: nothing due before a reload goes silent; a slot
 *       already claimed ahead of its time (by at most {@link Preference#AHEAD}) runs too: the
 *       store decided it before the reload;
 *   <li>a later slot of a retired version is dropped ({@link #claimable}); the new version queues
 *       its own next slot from the reload's instant, so a change never fires a run by itself and
 *       never runs a slot twice (the store decides each slot once in any case).
 * </ul>
 * Thread-safe: the current set is swapped whole; readers see the old or the new one.
 */
final class JobSet {

    /** How long a retired version is remembered: longer than any slot of it can still be due (grace, retries). */
    private static final Duration REMEMBER_RETIRED = Duration.ofHours(25);

    private volatile Map<String, ScheduledJob> current;
    /** Retired versions, by identity, and when they were retired (cluster time). */
    private final Map<ScheduledJob, Instant> retired = new IdentityHashMap<>();

    JobSet(List<ScheduledJob> jobs) {
        this.current = byName(jobs);
    }

    /** @throws IllegalArgumentException when two definitions share a name */
    static void requireUniqueNames(List<JobDefinition> definitions) {
        Set<String> names = new java.util.HashSet<>();
        for (JobDefinition d : definitions) {
            if (!names.add(d.name())) {
                throw new IllegalArgumentException("job names must be unique, but \"" + d.name() + "\" appears twice");
            }
        }
    }

    private static Map<String, ScheduledJob> byName(Collection<ScheduledJob> jobs) {
        Map<String, ScheduledJob> m = new LinkedHashMap<>();
        for (ScheduledJob j : jobs) {
            m.put(j.name(), j);
        }
        return java.util.Collections.unmodifiableMap(m);
    }

    /** The job in force under this name, or null (never configured, removed or disabled). */
    ScheduledJob get(String name) {
        return current.get(name);
    }

    /** The jobs in force, in config order. */
    Collection<ScheduledJob> all() {
        return current.values();
    }

    /** The names of the jobs in force. */
    Set<String> names() {
        return current.keySet();
    }

    /** Whether {@code job} is the version in force (not one a reload retired). */
    boolean current(ScheduledJob job) {
        return current.get(job.name()) == job;
    }

    /**
     * Whether {@code d} may still be claimed (or reported): its job is in force, or its version was
     * retired after the slot fell due.
     */
    boolean claimable(DueSlot d) {
        if (current(d.job)) {
            return true;
        }
        synchronized (retired) {
            Instant at = retired.get(d.job);
            return at != null && !d.slot.isAfter(at);
        }
    }

    /**
     * Puts {@code jobs} in force at {@code now}: every version in force now and not among them is
     * retired.
     */
    void replace(List<ScheduledJob> jobs, Instant now) {
        Map<String, ScheduledJob> next = byName(jobs);
        List<ScheduledJob> gone = current.values().stream().filter(j -> next.get(j.name()) != j).toList();
        synchronized (retired) {
            retired.values().removeIf(at -> at.isBefore(now.minus(REMEMBER_RETIRED)));
            gone.forEach(j -> retired.put(j, now));
        }
        this.current = next;
    }
}
