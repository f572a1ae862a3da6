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

    /**
     * Best effort: entries that only a minority of the masters report expired are dropped there
     * ({@code prune.lua}), but only where a majority of the counting masters has no entry for the
     * slot at all ({@code entries.lua}, asked first): then no majority can ever call that run dead,
     * and the entry is a leftover (a claim or recovery that won no majority, a write that landed
     * after its give-back). A run a majority still holds keeps every master's entry, expired or
     * not, since one more master down could make the expired ones the majority that recovers it.
     */
    private static void prune(Quorum<RedisLockProvider> nodes, Duration nodeWait, List<Quorum.Vote<List<RunsInFlight>>> votes, int i,
            String job, java.util.Set<Instant> dead) {
        Map<String, List<Instant>> stale = new HashMap<>();
        java.util.Set<Instant> candidates = new TreeSet<>();
        for (Quorum.Vote<List<RunsInFlight>> v : votes) {
            if (v.counts()) {
                List<Instant> mine = v.answer().get(i).expired().stream().filter(slot -> !dead.contains(slot)).toList();
                if (!mine.isEmpty()) {
                    stale.put(v.node(), mine);
                    candidates.addAll(mine);
                }
            }
        }
        if (stale.isEmpty()) {
            return;
        }
        List<Instant> slots = List.copyOf(candidates);
        Map<Instant, Integer> absent = new HashMap<>();
        for (Quorum.Vote<List<Boolean>> v : nodes.ask(p -> p.claims().hasEntries(job, slots), nodeWait)) {
            if (v.counts()) {
                for (int k = 0; k < slots.size(); k++) {
                    if (!v.answer().get(k)) {
                        absent.merge(slots.get(k), 1, Integer::sum);
                    }
                }
            }
        }
        List<String> names = nodes.names();
        nodes.ask(p -> {
            List<Instant> mine = stale.getOrDefault(names.get(nodes.nodes().indexOf(p)), List.of()).stream()
                    .filter(slot -> absent.getOrDefault(slot, 0) >= nodes.quorum()).toList();
            if (!mine.isEmpty()) {
                p.claims().prune(job, mine, PRUNE_AGE);
            }
            return true;
        }, nodeWait);
    }
}
