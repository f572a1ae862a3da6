package io.lockstep.redis;

import io.lockstep.scheduler.lock.LockException;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.LoggerFactory;

/**
 * The start check over Redlock's masters: the {@link StartCheck} of one server on each master at
 * once, plus the uptime read the restart quarantine needs ({@code INFO}). A wrong password, a
 * missing ACL permission or a TLS mismatch on any master stops the start (a config mistake, never
 * to be outvoted); masters that cannot be reached are reported (event {@code redlock_master_down})
 * and the worker starts while a majority can be. Stateless.
 */
final class RedlockStart {

    private RedlockStart() {}

    static void run(RedlockStore store) {
        Quorum<RedisLockProvider> nodes = store.quorum();
        List<Quorum.Vote<Boolean>> votes = nodes.ask(p -> {
            p.calls().call("uptime", new RedisCalls.Call(RedisCalls.UPTIME, List.of(), List.of()));
            try {
                p.ping();
            } catch (RedisCalls.Quarantined e) {
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
}
