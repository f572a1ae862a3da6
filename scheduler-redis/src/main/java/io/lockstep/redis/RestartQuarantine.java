package io.lockstep.redis;

import io.lockstep.scheduler.lock.LockException;
import java.util.List;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisException;

/**
 * Whether a Redlock master's answers count yet: a master that restarted may have come back without
 * the records it held, and a majority that counts it could then grant what another majority already
 * holds. So a master up for less than its quarantine (the longest lease) is written to, but its
 * answers do not count, unless its deployment marker vouches for it ({@link #vouches}). Each batch
 * reads the uptime first, on the same connection as its calls ({@link #uptimeCall}); this class
 * judges that reading, and checks at the start that a master declared durable really is
 * ({@link #checkDurable}). Apart from {@link RedisCalls}, which only carries the uptime read in its
 * pipeline: what makes a master trusted is a question of its own. Thread-safe.
 */
final class RestartQuarantine {

    /**
     * A Redlock node's answers that must not count: it has not been up for the restart quarantine,
     * so it may have come back without records it held. The calls ran: the node is written to.
     */
    static final class Quarantined extends LockException {
        Quarantined(String target, long uptimeSeconds, long quarantineSeconds) {
            super(target, target + ": up " + uptimeSeconds + " s, not yet past the restart quarantine ("
                    + quarantineSeconds + " s; counted once uptime reads more): written to, but its answers do not count yet", null);
        }
    }

    static final LuaScript UPTIME = LuaScript.load("uptime.lua");

    /**
     * Whether a node whose {@code INFO} reads {@code uptimeSeconds} has been up longer than the
     * quarantine. {@code uptime_in_seconds} is the difference of two whole-second clock readings
     * (now and the start, each rounded down), so it reads {@code n} as early as a few ms past
     * {@code n - 1} s of real uptime: a node counts only once it reads more than the quarantine
     * (rounded up to whole seconds), which is never before the quarantine has fully passed (at most
     * one second after for a quarantine of whole seconds, under two otherwise). Uptime follows the
     * Redis host's wall clock.
     */
    static boolean pastQuarantine(long uptimeSeconds, long quarantineMillis) {
        return uptimeSeconds > (quarantineMillis + 999) / 1000;
    }

    private final UnifiedJedis jedis;
    private final String target;
    /** A Redlock node's restart quarantine in ms, read per batch; zero or less: none (no uptime is read). */
    private final java.util.function.LongSupplier quarantineMillis;
    private final String markerKey;
    private final boolean durable;

    /**
     * @param quarantineMillis read per batch; zero or less: no quarantine (no uptime is read)
     * @param markerKey Redlock: the master's deployment marker, read with its uptime; a master
     *     within its quarantine counts when the marker vouches for it (see {@link #vouches})
     * @param durable whether the master keeps its data across a restart (declared in
     *     {@code redis.redlock.durable})
     */
    RestartQuarantine(UnifiedJedis jedis, String target, java.util.function.LongSupplier quarantineMillis, String markerKey, boolean durable) {
        this.jedis = jedis;
        this.target = target;
        this.quarantineMillis = quarantineMillis;
        this.markerKey = markerKey;
        this.durable = durable;
    }

    /** The quarantine in ms now, read once per batch; zero or less: none. */
    long millis() {
        return quarantineMillis.getAsLong();
    }

    /** The uptime read (first in a pipeline): on the same connection as the calls. */
    RedisCalls.Call uptimeCall(long quarantineMillis) {
        return new RedisCalls.Call(UPTIME, markerKey == null ? List.of() : List.of(markerKey), List.of(Long.toString(quarantineMillis)));
    }

    /**
     * Throws {@link Quarantined} (the batch's calls ran: the master is written to) when the master,
     * up {@code uptimeSeconds} by its reply {@code up} of {@code uptime.lua}, is not past
     * {@code quarantineMillis} and its marker does not vouch for it.
     */
    void check(List<?> up, long uptimeSeconds, long quarantineMillis) {
        if (!pastQuarantine(uptimeSeconds, quarantineMillis) && !vouches(up)) {
            throw new Quarantined(target, uptimeSeconds, (quarantineMillis + 999) / 1000);
        }
    }

    /**
     * Whether a master up for less than its quarantine counts all the same, by its deployment
     * marker: the marker was written in this run of the server (its run_id) as the first of a new
     * deployment on a server without Lockstep's state (it had nothing a restart could have lost);
     * or the master keeps its data across restarts (declared durable) and its marker came back
     * with it from an earlier run. A marker copied to it in this run (it restarted empty: the
     * heartbeat copies its peers') vouches for nothing, durable or not. The lock API reads no
     * marker: nothing vouches there.
     *
     * @param reply {@code uptime.lua}'s
     */
    boolean vouches(List<?> reply) {
        if ("1".equals(text(reply.get(1)))) {
            return true;
        }
        if (!durable || !"1".equals(text(reply.get(3)))) {
            return false;
        }
        if (reply.size() > 4 && "1".equals(text(reply.get(4)))) {
            return true;
        }
        // Declared durable, but without its AOF (m4 of the 2026-12-04 review): its marker came back
        // from an RDB snapshot or a restored backup, with records older than its last writes.
        notDurable(reply.size() > 5 ? text(reply.get(5)) : "");
        return false;
    }

    /** Whether the master is declared durable ({@code redis.redlock.durable}). */
    boolean durable() {
        return durable;
    }

    /**
     * At the start, for a master declared durable: reads {@code INFO persistence}. Without
     * {@code aof_enabled:1} it logs so ({@link #notDurable}); with it, {@code appendfsync} as
     * {@code CONFIG GET} reads it (a warning unless {@code always}: a crash can lose the last second
     * of writes), where the ACL user may run {@code CONFIG} (otherwise nothing more is said).
     */
    void checkDurable() {
        String persistence;
        String run;
        try {
            persistence = jedis.info("persistence");
            run = jedis.info("server").lines().filter(l -> l.startsWith("run_id:"))
                    .map(l -> l.substring("run_id:".length()).trim()).findFirst().orElse("");
        } catch (JedisException e) {
            throw RedisFailures.wrap(jedis, target, "persistence", e);
        }
        if (!persistence.lines().anyMatch(l -> l.trim().equals("aof_enabled:1"))) {
            notDurable(run);
            return;
        }
        String fsync;
        try {
            fsync = JedisLines.configValue(jedis.sendCommand(redis.clients.jedis.Protocol.Command.CONFIG, "GET", "appendfsync"));
        } catch (JedisException e) {
            return; // CONFIG not allowed (an ACL, a renamed command): the AOF is on, that is what can be checked
        }
        org.slf4j.event.Level level = fsync.equals("always") ? org.slf4j.event.Level.INFO : org.slf4j.event.Level.WARN;
        org.slf4j.LoggerFactory.getLogger("io.lockstep.events").atLevel(level).addKeyValue("event", "redlock_durable")
                .addKeyValue("target", target).addKeyValue("appendfsync", fsync)
                .log(fsync.equals("always") ? target + " is durable: appendonly yes, appendfsync always"
                        : target + " is listed in redis.redlock.durable and runs with appendonly, but appendfsync " + fsync
                        + ": a crash can lose its last writes (up to a second), and it still counts at once after a restart;"
                        + " set appendfsync always there");
    }

    /** The server run ({@code run_id}, new at every start) this master's "durable without its AOF" line was last logged for. */
    private final java.util.concurrent.atomic.AtomicReference<String> notDurableRun = new java.util.concurrent.atomic.AtomicReference<>();

    /**
     * Logs, once per run of the server ({@code run}: its {@code run_id}), that this master is
     * declared durable but runs without {@code appendonly}: it is counted like any other master, so
     * it sits out the restart quarantine after a restart.
     */
    void notDurable(String run) {
        if (run.equals(notDurableRun.getAndSet(run))) {
            return;
        }
        org.slf4j.LoggerFactory.getLogger("io.lockstep.events").atWarn().addKeyValue("event", "redlock_durable_without_aof")
                .addKeyValue("target", target).log(target + " is listed in redis.redlock.durable, but runs without appendonly"
                        + " (INFO persistence: aof_enabled:0): not trusted to keep its data across a restart, it sits out the restart"
                        + " quarantine like any other master; set appendonly yes and appendfsync always there, or take it out of durable");
    }

    private static String text(Object o) {
        return o instanceof byte[] b ? new String(b, java.nio.charset.StandardCharsets.UTF_8) : String.valueOf(o);
    }
}
