package io.lockstep.redis;

import io.lockstep.scheduler.lock.Checkpoint;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.LockException;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * Runs' checkpoints on one server ({@code checkpoint.lua}): saved in the slot's record by the run
 * that holds it, read by a rerun of the slot. A save waits for {@code waitReplicas} as a renewal
 * does: one that fewer replicas acknowledged fails ({@link LockException}: a failover could lose it). Redlock
 * saves on every master and counts a majority ({@link RedlockStore}). Thread-safe.
 */
final class CheckpointScripts {

    private static final LuaScript CHECKPOINT = LuaScript.load("checkpoint.lua");

    private final RedisCalls calls;
    private final RedisKeys keys;
    private final RedisCalls.Replicas replicas;
    private final String target;

    CheckpointScripts(RedisCalls calls, RedisKeys keys, RedisCalls.Replicas replicas, String target) {
        this.calls = calls;
        this.keys = keys;
        this.replicas = replicas;
        this.target = target;
    }

    boolean save(Lease lease, Checkpoint checkpoint) {
        RedisCalls.Replies answered = calls.batch("checkpoint", List.of(lease), l -> new RedisCalls.Call(CHECKPOINT,
                List.of(keys.slot(l.job(), l.slot().toEpochMilli())), List.of("save", l.token(), checkpoint.value(),
                Long.toString(checkpoint.fencingToken()), Long.toString(checkpoint.sequence()))), replicas);
        Object reply = calls.answered("checkpoint", answered.replies().get(0));
        if (calls.asLong("checkpoint", reply) != 1L) {
            return false;
        }
        if (!answered.confirmed(0, replicas)) {
            throw new LockException(target, target + ": checkpoint: fewer than " + replicas.count()
                    + " replicas acknowledged it in time (waitReplicas)", null);
        }
        return true;
    }

    Optional<Checkpoint> last(String job, Instant slot) {
        Object reply = calls.call("checkpoint", new RedisCalls.Call(CHECKPOINT, List.of(keys.slot(job, slot.toEpochMilli())),
                List.of("read")));
        if (!(reply instanceof List<?> parts) || parts.size() < 3) {
            return Optional.empty();
        }
        return Optional.of(new Checkpoint(RedisCalls.asString(parts.get(0)), Long.parseLong(RedisCalls.asString(parts.get(1))),
                Long.parseLong(RedisCalls.asString(parts.get(2)))));
    }
}
