package io.lockstep.scheduler.lock;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The in-force stamps of {@link InMemoryLockProvider}, kept as {@code inforce.lua} keeps them in
 * Redis: per job, its last enabled stamp, the current run of disabled stamps (where it starts, its
 * last stamp) and the latest closed period. Not thread-safe: used under the provider's monitor.
 */
final class InMemoryInForce {

    /** Per job: last enabled, current run's start and last stamp, closed period's from and to (null: none). */
    private final Map<String, Long[]> stamps = new HashMap<>();

    /** Stamps the jobs at {@code now}; returns the jobs forgotten (stamped by nobody for {@link InForce#KEEP}). */
    List<String> stamp(Collection<String> enabled, Collection<String> disabled, boolean fresh, long now) {
        long gap = InForce.GAP.toMillis();
        for (String job : enabled) {
            Long[] s = stamps.computeIfAbsent(job, k -> new Long[5]);
            close(s, now);
            s[0] = now;
        }
        for (String job : disabled) {
            Long[] s = stamps.computeIfAbsent(job, k -> new Long[5]);
            if (s[2] != null && now < s[2]) {
                s[1] = s[2] = null; // the clock went back: that run proves nothing
            }
            if (fresh || s[2] == null || now - s[2] > gap) {
                close(s, now);
                s[1] = Math.max(now, (s[0] == null ? now : s[0]) + gap); // no enabled stamp known: the gap from now
            }
            s[2] = now;
        }
        List<String> forgotten = new ArrayList<>();
        stamps.entrySet().removeIf(e -> {
            Long[] s = e.getValue();
            long last = Math.max(s[0] == null ? 0 : s[0], s[2] == null ? 0 : s[2]);
            if (now - last > InForce.KEEP.toMillis()) {
                forgotten.add(e.getKey());
                return true;
            }
            return false;
        });
        return forgotten;
    }

    /** The periods each of {@code jobs} was out of force; a job never stamped is absent. */
    Map<String, InForce> read(List<String> jobs) {
        Map<String, InForce> result = new HashMap<>();
        for (String job : jobs) {
            Long[] s = stamps.get(job);
            if (s != null) {
                result.put(job, InForce.fromStamps(s[1], s[2], s[3], s[4]));
            }
        }
        return result;
    }

    /** Closes the current run of disabled stamps into the closed period, when it reached its start (never past now). */
    private static void close(Long[] s, long now) {
        if (s[1] != null && s[2] != null && s[1] <= Math.min(s[2], now)) {
            s[3] = s[1];
            s[4] = Math.min(s[2], now);
        }
        s[1] = s[2] = null;
    }
}
