package io.lockstep.redis;

import java.security.SecureRandom;
import java.time.Duration;
import java.util.HexFormat;

/**
 * How the lock API keeps a lock in Redis, the same on one server ({@link ServerLocks}) and on each
 * Redlock master ({@link RedlockLocks}): the scripts that take, extend and release it, its owner
 * tokens, and how long its fence counter lives (the keys are described on {@link RedisLocks}).
 * Apart from {@link RedisLocks}, which is the API in front and uses none of them itself. Thread-safe.
 */
final class LockScripts {

    private LockScripts() {}

    /**
     * How long a lock's fence counter outlives its last acquire. Tokens are max(counter + 1, Redis
     * time in microseconds), so a counter that expired (or was lost) never lets a token go back.
     */
    static final Duration FENCE_TTL = Duration.ofDays(7);

    static final LuaScript ACQUIRE = LuaScript.load("lock_acquire.lua");
    static final LuaScript RELEASE = LuaScript.load("lock_release.lua");
    static final LuaScript EXTEND = LuaScript.load("lock_extend.lua");
    /**
     * One generator per thread, each a DRBG of its own: a shared one is a lock every acquiring thread
     * queues on, and so is the platform default ({@code NativePRNG} reads {@code /dev/urandom} under
     * one lock for all its instances).
     */
    private static final ThreadLocal<SecureRandom> TOKENS = ThreadLocal.withInitial(LockScripts::generator);

    private static SecureRandom generator() {
        try {
            return SecureRandom.getInstance("DRBG");
        } catch (java.security.NoSuchAlgorithmException e) {
            return new SecureRandom(); // a JDK without DRBG (every JDK 9+ has it)
        }
    }

    /** A new owner token: a random 128-bit hex string. */
    static String newToken() {
        byte[] bytes = new byte[16];
        TOKENS.get().nextBytes(bytes);
        return HexFormat.of().formatHex(bytes);
    }
}
