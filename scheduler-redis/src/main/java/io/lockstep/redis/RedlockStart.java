package io.lockstep.redis;

import io.lockstep.scheduler.lock.LockException;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.LoggerFactory;

/**
 * The start check over Redlock's masters: the {@link StartCheck} of one server on each master at
 * once, plus the uptime read the restart quarantine needs ({@code INFO}), and for a master declared
 * durable its persistence ({@code INFO persistence}: without its AOF it is logged, and counted like
 * any other master; see {@link RestartQuarantine#checkDurable}). A wrong password, a
 * missing ACL permission or a TLS mismatch on any master stops the start (a config mistake, never
 * to be outvoted); masters that cannot be reached are reported (event {@code redlock_master_down})
 * and the worker starts while a majority can be. Stateless.
 */
final class RedlockStart {

    private RedlockStart() {}

    static void run(RedlockStore store) {
        Quorum<RedisLockProvider> nodes = store.quorum();
        markNewDeployment(nodes);
        List<Quorum.Vote<Boolean>> votes = nodes.ask(p -> {
            p.calls().call("uptime", p.calls().quarantine().uptimeCall(0));
            if (p.calls().quarantine().durable()) {
                p.calls().quarantine().checkDurable(); // declared, not believed: its AOF must be on (m4 of the 2026-12-04 review)
            }
            try {
                p.ping();
            } catch (RestartQuarantine.Quarantined e) {
                // Reachable, allowed, and restarted lately: it will count once its quarantine ends.
            }
            return true;
        }, java.time.Duration.ofSeconds(30));
        List<String> down = new ArrayList<>();
        for (Quorum.Vote<Boolean> v : votes) {
            if (v.kind() != Quorum.Kind.FAILED) {
                continue;
            }
            String why = v.failure();
            if (why.contains("authentication failed") || why.contains("permission denied") || why.contains("TLS")) {
                throw new LockException(v.node(), why, null);
            }
            down.add(v.node() + " (" + why + ")");
        }
        if (votes.size() - down.size() < nodes.quorum()) {
            throw new LockException("redlock", "redlock: only " + (votes.size() - down.size()) + " of " + votes.size()
                    + " masters answer, a majority (" + nodes.quorum() + ") is needed: " + String.join(", ", down), null);
        }
        for (String node : down) {
            LoggerFactory.getLogger("io.lockstep.events").atWarn().addKeyValue("event", "redlock_master_down").addKeyValue("target", node)
                    .log("a redlock master does not answer; decisions go on with a majority of the others");
        }
    }

    /**
     * A new set of masters (a majority answers, and none has a deployment marker) gets its marker
     * before anything else is written (the probe that follows would look like Lockstep's state):
     * a master without Lockstep's state then counts at once instead of sitting out the restart
     * quarantine, since it had nothing a restart could have lost. Masters that later lack the
     * marker while the others have it restarted empty: they sit out the quarantine, and the
     * heartbeat copies the marker to them (a copy vouches for nothing). A loss of every master's
     * state at once looks like a new deployment; Redlock's model already excludes it (a majority
     * failing together loses records whatever the quarantine).
     */
    private static void markNewDeployment(Quorum<RedisLockProvider> nodes) {
        List<Quorum.Vote<String>> markers = nodes.ask(p -> p.members().deployment().id(), java.time.Duration.ofSeconds(30));
        if (Quorum.written(markers) < nodes.quorum()
                || markers.stream().anyMatch(v -> v.kind() != Quorum.Kind.FAILED && !v.answer().isEmpty())) {
            return;
        }
        // New only if no master that answers holds Lockstep's state: one that does (an upgrade from a
        // version without markers) means the others may have lost theirs, and then none is fresh. (A
        // master that does not answer is not asked: if it alone held state, a majority lost theirs
        // together, which Redlock's model excludes.)
        boolean fresh = nodes.ask(p -> p.members().deployment().hasState(), java.time.Duration.ofSeconds(30)).stream()
                .noneMatch(v -> v.kind() != Quorum.Kind.FAILED && v.answer());
        String id = java.util.UUID.randomUUID().toString();
        nodes.ask(p -> p.members().deployment().mark(id, fresh), java.time.Duration.ofSeconds(30));
        LoggerFactory.getLogger("io.lockstep.events").atInfo().addKeyValue("event", "redlock_new_deployment").addKeyValue("deployment", id)
                .addKeyValue("fresh", fresh).log(fresh ? "no redlock master has a deployment marker or Lockstep's state: a new set of masters,"
                        + " which count at once" : "no redlock master has a deployment marker, but Lockstep ran on them before (an upgrade):"
                        + " marked, restarted masters still sit out the quarantine");
    }
}
