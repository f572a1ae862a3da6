package io.lockstep.spring;

import io.lockstep.scheduler.LockstepException;
import java.util.Optional;

/**
 * Lockstep's Redis client is Jedis 8, and Spring Boot's dependency management pins an older one
 * (6.0 on Boot 3.5) in every application whose parent is {@code spring-boot-starter-parent} or that
 * imports Boot's BOM. Such an application would fail deep in the first Redis call with a
 * {@code NoClassDefFoundError}; this check fails it at startup with the one property to set.
 */
final class JedisVersion {

    /** A class Lockstep uses (its Sentinel client) that the Jedis 6 Boot 3.5 manages does not have. */
    static final String NEEDED_CLASS = "redis.clients.jedis.RedisSentinelClient";
    /** The version the README and the message advise. */
    static final String ADVISED = "8.0.2";

    private JedisVersion() {}

    /** The problem with the Jedis that {@code classes} load, in one line; empty when it is one Lockstep can use. */
    static Optional<String> problem(ClassLoader classes) {
        try {
            Class.forName(NEEDED_CLASS, false, classes);
            return Optional.empty();
        } catch (ClassNotFoundException | LinkageError e) {
            return Optional.of("Lockstep needs Jedis 8, but the application has Jedis " + version(classes)
                    + " (Spring Boot's dependency management pins it): set the property jedis.version to " + ADVISED
                    + " (Maven: <properties><jedis.version>" + ADVISED + "</jedis.version></properties>; Gradle: ext['jedis.version'] = '"
                    + ADVISED + "')");
        }
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
