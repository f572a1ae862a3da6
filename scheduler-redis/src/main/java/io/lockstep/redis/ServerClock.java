package io.lockstep.redis;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.IntFunction;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.Connection;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.UnifiedJedis;

/**
 * The server's clock as the scheduler reads it: one {@code TIME}; on Redis Cluster the latest of
 * the masters' clocks.
 *
 * <p>On a cluster each job's claims are decided by the clock of the master that owns its hash
 * slot, and the masters' clocks differ a little. A worker that follows the latest of them fires
 * every slot no later than its own master allows; a job whose master is behind answers
 * {@code early} with its own time, and the claimer asks again exactly when that master reaches the
 * slot (one extra round trip, never an early start: the script decides by its own clock). Following
 * one random node instead would make the jobs of any master ahead of it late by the difference.
 *
 * <p>Each master is read once per call; every reading is carried forward to the call's midpoint on
 * this host's monotonic clock, so the caller may take the result as read half-way through the call.
 */
final class ServerClock {

    private static final String TIME = "local t = redis.call('TIME') return t[1] * 1000 + math.floor(t[2] / 1000)";

    private ServerClock() {}

    /** Epoch ms by the server's clock (on a cluster, the latest master's); one round trip per master. */
    static long millis(UnifiedJedis jedis) {
        if (JedisLines.isCluster(jedis)) {
            return latestMillis(JedisLines.connectionForSlot(jedis));
        }
        return ((Number) jedis.eval(TIME)).longValue();
    }

    /** The latest master clock, epoch ms; {@code connectionForSlot} lends the pooled connection of a slot's master. */
    private static long latestMillis(IntFunction<Connection> connectionForSlot) {
        long callStart = System.nanoTime();
        List<long[]> readings = new ArrayList<>(); // {server ms, monotonic nanos at the reading}
        Set<String> seen = new HashSet<>();
        for (int slot : firstSlots(connectionForSlot)) {
            try (Connection c = connectionForSlot.apply(slot)) {
                if (!seen.add(JedisLines.hostAndPort(c))) {
                    continue;
                }
                long sent = System.nanoTime();
                Object reply = c.executeCommand(new CommandArguments(Protocol.Command.EVAL).add(TIME).add(0));
                long got = System.nanoTime();
                readings.add(new long[] {((Number) reply).longValue(), sent + (got - sent) / 2});
            }
        }
        long callMid = callStart + (System.nanoTime() - callStart) / 2;
        long latest = Long.MIN_VALUE;
        for (long[] r : readings) {
            latest = Math.max(latest, r[0] + (callMid - r[1]) / 1_000_000);
        }
        if (readings.isEmpty()) {
            throw new IllegalStateException("the cluster reported no slot ranges (CLUSTER SLOTS is empty)");
        }
        return latest;
    }

    /** The first hash slot of each range in CLUSTER SLOTS, as the node serving slot 0 sees it. */
    private static List<Integer> firstSlots(IntFunction<Connection> connectionForSlot) {
        List<Integer> starts = new ArrayList<>();
        try (Connection c = connectionForSlot.apply(0)) {
            Object reply = c.executeCommand(new CommandArguments(Protocol.Command.CLUSTER).add("SLOTS"));
            for (Object range : (List<?>) reply) {
                starts.add(((Number) ((List<?>) range).get(0)).intValue());
            }
        }
        return starts;
    }
}
