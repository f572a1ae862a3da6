package io.lockstep.redis;

import io.lockstep.scheduler.lock.Heartbeat;
import io.lockstep.scheduler.lock.WorkerInfo;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * The membership side of the Redlock store ({@link RedlockStore}): each worker's heartbeat, the
 * published job definitions of a config hash, a worker leaving, and the live workers, sent to
 * every master at once through each master's own {@link RedisMembers} (each answer awaited at
 * most {@code nodeWait}). None of it is a vote on a slot:
 *
 * <ul>
 *   <li>a heartbeat needs answers from a majority of the masters (quarantined ones included),
 *       else it fails with a {@link io.lockstep.scheduler.lock.LockException}; the workers and
 *       triggers are merged from every master that answered, a worker's latest sighting winning,
 *       and the server time is the one a majority of the masters' clocks had passed;</li>
 *   <li>a published config must be written on a majority (quarantined masters included);</li>
 *   <li>reads take what the masters that answered have (a config: the first that has it; the
 *       live workers: merged); leaving is sent everywhere and its answers are not counted.</li>
 * </ul>
 *
 * Split from {@link RedlockStore}, which keeps the leases (its claims are {@link RedlockClaims}')
 * and hands this out through {@link RedlockStore#members()}. Thread-safe.
 */
final class RedlockMembers {

    private final Quorum<RedisLockProvider> nodes;
    private final Duration nodeWait;

    RedlockMembers(Quorum<RedisLockProvider> nodes, Duration nodeWait) {
        this.nodes = nodes;
        this.nodeWait = nodeWait;
    }

    Heartbeat heartbeat(WorkerInfo self, Duration ttl) {
        List<Quorum.Vote<RedisMembers.Beat>> votes = nodes.ask(p -> p.members().beat(self, ttl), nodeWait);
        Map<String, WorkerInfo> workers = new LinkedHashMap<>();
        java.util.Set<Heartbeat.Trigger> triggers = new java.util.LinkedHashSet<>();
        List<Long> times = new ArrayList<>();
        boolean published = true;
        Duration drain = null;
        for (Quorum.Vote<RedisMembers.Beat> v : votes) {
            if (v.kind() == Quorum.Kind.FAILED) {
                continue;
            }
            Heartbeat h = v.answer().heartbeat();
            for (WorkerInfo w : h.workers()) {
                workers.merge(w.id(), w, (a, b) -> a.lastSeen().isAfter(b.lastSeen()) ? a : b);
            }
            triggers.addAll(h.triggers());
            times.add(h.serverTimeMillis());
            published &= h.configPublished();
            if (h.drainWithin() != null) {
                drain = h.drainWithin(); // asked on a majority, answered (and removed) by each master that has it
            }
        }
        if (times.size() < nodes.quorum()) {
            throw nodes.tooFew("heartbeat", votes, Quorum.describe(votes, h -> "answered"));
        }
        repair(votes);
        times.sort(java.util.Comparator.reverseOrder());
        return new Heartbeat(workers.values().stream().sorted(java.util.Comparator.comparing(WorkerInfo::started)).toList(),
                List.copyOf(triggers), times.get(nodes.quorum() - 1), published, drain);
    }

    /**
     * Brings every master that answered to the newest operator command of each job (pause, resume)
     * and to every manual-run request any of them has: an operator's command needs only a majority
     * of the masters to succeed, and the others (down or cut off at the time) would otherwise keep
     * their old state for good, show it in {@code status}, and vote with it (a pause left on two
     * masters of five makes every claim split 2-2 as soon as one of the other three is down).
     * Newest wins: a command's time is the one a majority of the masters' clocks had passed when
     * it was given. A master that cannot be repaired now is repaired by a later heartbeat.
     */
    private void repair(List<Quorum.Vote<RedisMembers.Beat>> votes) {
        copyMarker(votes);
        Map<String, String> newest = new java.util.HashMap<>();
        java.util.Set<String> allTriggers = new java.util.HashSet<>();
        for (Quorum.Vote<RedisMembers.Beat> v : votes) {
            if (v.kind() != Quorum.Kind.FAILED) {
                v.answer().commands().forEach((job, command) -> newest.merge(job, command, RedlockMembers::newer));
                allTriggers.addAll(v.answer().triggers());
            }
        }
        if (newest.isEmpty() && allTriggers.isEmpty()) {
            return;
        }
        Map<String, Map<String, String>> commandsFor = new java.util.HashMap<>();
        Map<String, List<String>> triggersFor = new java.util.HashMap<>();
        for (Quorum.Vote<RedisMembers.Beat> v : votes) {
            if (v.kind() == Quorum.Kind.FAILED) {
                continue;
            }
            Map<String, String> stale = new java.util.HashMap<>();
            newest.forEach((job, command) -> {
                if (!command.equals(v.answer().commands().get(job))) {
                    stale.put(job, command);
                }
            });
            List<String> missing = allTriggers.stream().filter(t -> !v.answer().triggers().contains(t)).toList();
            if (!stale.isEmpty() || !missing.isEmpty()) {
                commandsFor.put(v.node(), stale);
                triggersFor.put(v.node(), missing);
            }
        }
        if (commandsFor.isEmpty()) {
            return;
        }
        List<String> names = nodes.names();
        nodes.ask(p -> {
            String node = names.get(nodes.nodes().indexOf(p));
            if (commandsFor.containsKey(node)) {
                p.members().commands().repair(commandsFor.get(node), triggersFor.get(node));
            }
            return true;
        }, nodeWait);
        org.slf4j.LoggerFactory.getLogger("io.lockstep.events").atInfo().addKeyValue("event", "redlock_repaired")
                .addKeyValue("masters", String.join(",", commandsFor.keySet()))
                .addKeyValue("jobs", String.join(",", new java.util.TreeSet<>(commandsFor.values().stream().flatMap(m -> m.keySet().stream()).toList())))
                .log("redlock masters an operator's command or a manual run missed were brought to the newest");
    }

    /**
     * Copies the deployment marker to masters that answered without one while another has it (they
     * restarted empty): a copy vouches for nothing, so they sit out the restart quarantine as any
     * restarted master, but a later restart with their data (declared durable) is told apart.
     */
    private void copyMarker(List<Quorum.Vote<RedisMembers.Beat>> votes) {
        String id = votes.stream().filter(v -> v.kind() != Quorum.Kind.FAILED).map(v -> v.answer().marker()).filter(m -> !m.isEmpty())
                .findFirst().orElse("");
        List<String> lacking = votes.stream().filter(v -> v.kind() != Quorum.Kind.FAILED && v.answer().marker().isEmpty())
                .map(Quorum.Vote::node).toList();
        if (id.isEmpty() || lacking.isEmpty()) {
            return;
        }
        List<String> names = nodes.names();
        nodes.ask(p -> lacking.contains(names.get(nodes.nodes().indexOf(p))) ? p.members().deployment().mark(id, false) : id, nodeWait);
    }

    /** Of two commands about one job, the newer (by time; the same time: the greater text, so every worker picks the same). */
    private static String newer(String a, String b) {
        long ta = OperatorCommands.commandAt(a);
        long tb = OperatorCommands.commandAt(b);
        return ta != tb ? (ta > tb ? a : b) : (a.compareTo(b) >= 0 ? a : b);
    }

    void publishConfig(String configHash, Map<String, String> jobs) {
        everywhereOrFail("publish config", p -> {
            p.members().publish(configHash, jobs);
            return true;
        });
    }

    Map<String, String> config(String configHash) {
        for (Quorum.Vote<Map<String, String>> v : nodes.ask(p -> p.members().config(configHash), nodeWait)) {
            if (v.kind() != Quorum.Kind.FAILED && !v.answer().isEmpty()) {
                return v.answer();
            }
        }
        return Map.of();
    }

    /** On every master; fails unless a majority took it (the caller sends it again with the next heartbeat). */
    void stampInForce(java.util.Collection<String> enabled, java.util.Collection<String> disabled, boolean fresh) {
        everywhereOrFail("in force", p -> {
            p.inForceStamps().stampInForce(enabled, disabled, fresh);
            return true;
        });
    }

    /**
     * What the masters agree on, job by job ({@link io.lockstep.scheduler.lock.InForce#agreed}): a
     * slot is out of force only where every master that answered says so, and only when a
     * majority answered; a job a master kept nothing of is owed everywhere.
     */
    Map<String, io.lockstep.scheduler.lock.InForce> inForce(List<String> jobs) {
        List<Map<String, io.lockstep.scheduler.lock.InForce>> answers = new ArrayList<>();
        for (Quorum.Vote<Map<String, io.lockstep.scheduler.lock.InForce>> v : nodes.ask(p -> p.inForceStamps().inForce(jobs), nodeWait)) {
            if (v.counts()) {
                answers.add(v.answer());
            }
        }
        Map<String, io.lockstep.scheduler.lock.InForce> agreed = new java.util.HashMap<>();
        if (answers.size() < nodes.quorum()) {
            return agreed;
        }
        for (String job : jobs) {
            if (answers.stream().allMatch(a -> a.containsKey(job))) {
                agreed.put(job, io.lockstep.scheduler.lock.InForce.agreed(answers.stream().map(a -> a.get(job)).toList()));
            }
        }
        return agreed;
    }

    /** Asks {@code workerId} to drain, on every master; done when a majority has the request. */
    void requestDrain(String workerId, Duration within) {
        List<Quorum.Vote<Boolean>> votes = nodes.ask(p -> {
            p.members().requestDrain(workerId, within);
            return true;
        }, nodeWait);
        if (Quorum.counting(votes) < nodes.quorum()) {
            throw nodes.tooFew("drain", votes, Quorum.describe(votes, a -> "answered"));
        }
    }

    void leave(String workerId) {
        nodes.ask(p -> {
            p.members().leave(workerId);
            return true;
        }, nodeWait);
    }

    List<WorkerInfo> liveWorkers(Duration ttl) {
        Map<String, WorkerInfo> workers = new LinkedHashMap<>();
        for (Quorum.Vote<List<WorkerInfo>> v : nodes.ask(p -> p.members().live(ttl), nodeWait)) {
            if (v.kind() != Quorum.Kind.FAILED) {
                v.answer().forEach(w -> workers.merge(w.id(), w, (a, b) -> a.lastSeen().isAfter(b.lastSeen()) ? a : b));
            }
        }
        return workers.values().stream().sorted(java.util.Comparator.comparing(WorkerInfo::started)).toList();
    }

    /** A write that must reach a majority of the masters (quarantined ones included: it is not a vote). */
    private <T> List<Quorum.Vote<T>> everywhereOrFail(String operation, Function<RedisLockProvider, T> action) {
        List<Quorum.Vote<T>> votes = nodes.ask(action, nodeWait);
        if (Quorum.written(votes) < nodes.quorum()) {
            throw nodes.tooFew(operation, votes, Quorum.describe(votes, a -> "done"));
        }
        return votes;
    }
}
