package io.lockstep.redis;

import io.lockstep.scheduler.lock.RunsInFlight;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * Redlock's view of a job's runs in flight ({@link RedlockStore#runsInFlight}): a run is dead only
 * when a majority of the masters report it expired, and what a minority alone reports is dropped
 * there once it is stale ({@code prune.lua}). Stateless.
 */
final class RedlockRuns {

    private RedlockRuns() {}

    static List<RunsInFlight> inFlight(Quorum<RedisLockProvider> nodes, Duration nodeWait, List<String> jobs,
            List<Quorum.Vote<List<RunsInFlight>>> votes) {
        List<RunsInFlight> merged = new ArrayList<>(jobs.size());
        for (int i = 0; i < jobs.size(); i++) {
            Map<Instant, Integer> expiredOn = new HashMap<>();
            long next = 0;
            for (Quorum.Vote<List<RunsInFlight>> v : votes) {
                if (v.counts()) {
                    RunsInFlight r = v.answer().get(i);
                    r.expired().forEach(slot -> expiredOn.merge(slot, 1, Integer::sum));
                    if (r.nextLeaseEndMillis() > 0 && (next == 0 || r.nextLeaseEndMillis() < next)) {
                        next = r.nextLeaseEndMillis();
                    }
                }
            }
            // Dead only when a majority says so: what one master alone holds (a recovery or claim that
            // won no majority) is no run, and recovering it would be taken elsewhere, once per lease.
            TreeSet<Instant> expired = new TreeSet<>(expiredOn.keySet().stream().filter(slot -> expiredOn.get(slot) >= nodes.quorum()).toList());
            merged.add(new RunsInFlight(jobs.get(i), List.copyOf(expired), next));
            prune(nodes, nodeWait, votes, i, jobs.get(i), expired);
        }
        return merged;
    }

    /** How long past its lease end a minority's entry must be before {@link #prune} drops it: far beyond the masters' clock spread. */
    private static final Duration PRUNE_AGE = Duration.ofSeconds(5);

    /** Best effort: the masters that alone report runs of job {@code i} expired drop those entries if stale ({@code prune.lua}). */
    private static void prune(Quorum<RedisLockProvider> nodes, Duration nodeWait, List<Quorum.Vote<List<RunsInFlight>>> votes, int i,
            String job, java.util.Set<Instant> dead) {
        Map<String, List<Instant>> stale = new HashMap<>();
        for (Quorum.Vote<List<RunsInFlight>> v : votes) {
            if (v.counts()) {
                List<Instant> mine = v.answer().get(i).expired().stream().filter(slot -> !dead.contains(slot)).toList();
                if (!mine.isEmpty()) {
                    stale.put(v.node(), mine);
                }
            }
        }
        if (!stale.isEmpty()) {
            List<String> names = nodes.names();
            nodes.ask(p -> {
                List<Instant> mine = stale.get(names.get(nodes.nodes().indexOf(p)));
                if (mine != null) {
                    p.claims().prune(job, mine, PRUNE_AGE);
                }
                return true;
            }, nodeWait);
        }
    }
}
