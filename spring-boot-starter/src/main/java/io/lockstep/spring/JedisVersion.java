package io.lockstep.spring;

import io.lockstep.scheduler.LockstepException;
import java.util.Optional;

/**
 * Lockstep runs on Jedis 6, 7 and 8 (scheduler-redis's {@code JedisLines}): the lines Spring Boot
 * 3.5 and 4.0 manage (6.0 and 7.0) and its own. An application whose dependency management pins
 * an older one (an older Boot, or a BOM of its own) would fail deep in the first Redis call with a
 * {@code NoClassDefFoundError} or {@code NoSuchMethodError}; this check fails it at startup with
 * the one property to set.
 */
final class JedisVersion {

    /** The oldest Jedis major version Lockstep runs on. */
    static final int OLDEST = 6;
    /** A Jedis 8 client class, and the Jedis 6 and 7 one Lockstep builds there instead: one of them must be there. */
    static final String[] CLIENT_CLASSES = {"redis.clients.jedis.RedisClient", "redis.clients.jedis.JedisPooled"};
    /** The version the README and the message advise. */
    static final String ADVISED = "8.0.2";

    private JedisVersion() {}

    /** The problem with the Jedis that {@code classes} load, in one line; empty when it is one Lockstep runs on. */
    static Optional<String> problem(ClassLoader classes) {
        boolean client = false;
        for (String name : CLIENT_CLASSES) {
            try {
                Class.forName(name, false, classes);
                client = true;
            } catch (ClassNotFoundException | LinkageError e) {
                // not this line's
            }
        }
        String version = version(classes);
        return client ? problem(version) : Optional.of(line(version));
    }

    /** The problem with a Jedis of {@code version} ({@code 6.0.0}), in one line; empty when it is one Lockstep runs on (or unknown). */
    static Optional<String> problem(String version) {
        try {
            int major = Integer.parseInt(version.substring(0, version.indexOf('.')));
            return major >= OLDEST ? Optional.empty() : Optional.of(line(version));
        } catch (RuntimeException e) {
            return Optional.empty(); // a version we cannot read: the client classes are there, so try it
        }
    }

    private static String line(String version) {
        return "Lockstep runs on Jedis 6, 7 and 8, but the application has Jedis " + version
                + " (a dependency management pins it): set the property jedis.version to " + ADVISED
                + " (Maven: <properties><jedis.version>" + ADVISED + "</jedis.version></properties>; Gradle: ext['jedis.version'] = '"
                + ADVISED + "')";
    }

    /** Fails with {@link #problem}'s line when there is one. */
    static void check(ClassLoader classes) {
        problem(classes).ifPresent(p -> {
            throw new LockstepException(p);
        });
    }

    private static String version(ClassLoader classes) {
        try {
            Object v = Class.forName("redis.clients.jedis.JedisMetaInfo", true, classes).getMethod("getVersion").invoke(null);
            return v == null ? "of an unknown version" : v.toString();
        } catch (ReflectiveOperationException | LinkageError | RuntimeException e) {
            return "of an unknown version";
        }
    }
}
