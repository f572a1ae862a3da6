package io.lockstep.scheduler;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;

/**
 * The oracle of guarantee 2 (no silent miss), shared by the in-process tests, the Redis tests and the
 * worker ITs: which slots of an explicit window neither started nor were reported.
 *
 * <p>Callers collect the slots they saw handled (started, or reported missed or skipped) as
 * {@link #key(String, Object) job@slot} keys from whatever event source they read (captured
 * events, a worker's JSON lines, the jobs' own records) and name the window themselves, so a gap at
 * either edge of it is never hidden by deriving the window from the events. Not thread safe; pure.
 */
public final class SlotCoverage {

    private SlotCoverage() {
    }

    /** The key of one slot of one job: {@code job@2026-12-01T10:00:00Z}. */
    public static String key(String job, Object slot) {
        return job + "@" + (slot instanceof Instant i ? i.toString() : Instant.parse(slot.toString()).toString());
    }

    /**
     * The slots of {@code jobs} every {@code period} from {@code from} (inclusive, a slot) to
     * {@code to} (exclusive) whose key is not in {@code handled}, oldest first.
     */
    public static List<String> silent(Set<String> handled, Collection<String> jobs, Instant from, Instant to, Duration period) {
        if (period.isNegative() || period.isZero()) {
            throw new IllegalArgumentException("period must be positive, but was " + period);
        }
        List<String> silent = new ArrayList<>();
        for (Instant slot = from; slot.isBefore(to); slot = slot.plus(period)) {
            for (String job : jobs) {
                String key = key(job, slot);
                if (!handled.contains(key)) {
                    silent.add(key);
                }
            }
        }
        return silent;
    }

    /** How many slots of {@code jobs} the window holds, for a caller that wants to print its share. */
    public static long slots(Collection<String> jobs, Instant from, Instant to, Duration period) {
        return jobs.size() * ((Duration.between(from, to).toNanos() + period.toNanos() - 1) / period.toNanos());
    }
}
