package io.lockstep.redis;

import io.lockstep.scheduler.lock.LockException;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisAccessControlException;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisException;

/**
 * How a Jedis failure is told: once, in one line that names the server and the operation and says
 * what most likely went wrong (a permission the ACL user lacks, with what the script needs;
 * authentication; TLS; the server out of reach; a command refused), the Jedis exception kept as
 * the cause. An operator reads this line first, so the diagnosis is kept in one place, apart from
 * {@link RedisCalls}' sending of calls: every store class reports its failures through it, those
 * that talk to Jedis directly too ({@link RedisCalls#wrap}). Stateless.
 */
final class RedisFailures {

    private RedisFailures() {}

    /**
     * {@code e} of {@code operation} on {@code target} as one line. A connection failure also drops
     * the idle connections of {@code jedis}' pool.
     */
    static LockException wrap(UnifiedJedis jedis, String target, String operation, JedisException e) {
        if (e instanceof JedisConnectionException) {
            // The other idle connections most likely went stale with this one (a restarted or
            // failed-over server): drop them, so that the next call opens a fresh connection instead
            // of failing once per stale one.
            JedisLines.clearPool(jedis);
        }
        String kind;
        if (e.getMessage() != null && (e.getMessage().contains("NOPERM") || e.getMessage().contains("no permissions")
                || e.getMessage().contains("can't run this command") || e.getMessage().contains("can't access"))) {
            kind = "permission denied to the ACL user" + LuaScript.named(e.getMessage())
                    .map(script -> ": " + script.name() + " runs " + String.join(" ", script.commands())
                            + " (see the README for the whole ACL line)").orElse("");
        } else if (e instanceof JedisAccessControlException || (e.getMessage() != null
                && (e.getMessage().startsWith("WRONGPASS") || e.getMessage().startsWith("NOAUTH")))) {
            kind = "authentication failed";
        } else if (causedBy(e, javax.net.ssl.SSLException.class)) {
            kind = "TLS handshake failed, check redis.tls and that the server speaks TLS";
        } else if (e instanceof JedisConnectionException) {
            kind = target.startsWith("rediss ") ? "cannot reach the server, or it does not speak TLS on that port" : "cannot reach the server";
        } else {
            kind = "command failed";
        }
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String detail = root.getMessage() == null ? root.getClass().getSimpleName() : root.getMessage();
        return new LockException(target, target + ": " + operation + ": " + kind + " (" + detail.replaceAll("\\s+", " ") + ")", e);
    }

    private static boolean causedBy(Throwable t, Class<? extends Throwable> type) {
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (type.isInstance(c)) {
                return true;
            }
        }
        return false;
    }
}
