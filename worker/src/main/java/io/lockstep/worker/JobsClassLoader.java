package io.lockstep.worker;

import java.io.IOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.Enumeration;
import java.util.List;

/**
 * The class loader of the jobs directory: the application's JARs (its job classes and their
 * dependencies) see the JDK, the packages Lockstep shares on purpose, and their own JARs, and
 * nothing else of Lockstep's class path. So a jobs JAR may bring its own Jackson, SnakeYAML,
 * cron-utils, picocli or Micrometer registry in any version: it gets its own, and Lockstep keeps
 * its own.
 *
 * <p>Shared (always Lockstep's copy, whatever the jobs bring; see {@link #SHARED}): the job API and
 * the rest of the library ({@code io.lockstep.scheduler.}, and {@code io.lockstep.redis.} for the
 * lock API), SLF4J (jobs log through the worker's logging),
 * Jedis (the lock API hands out Jedis types) with the Commons Pool its API names (a
 * {@code JedisPooled} takes a {@code GenericObjectPoolConfig}), and Jackson's annotations (Lockstep binds a job's
 * {@code params} to its type, so annotations such as {@code @JsonProperty} on that type must be the
 * ones Lockstep's Jackson reads; they are compatible across Jackson 2), and the OpenTelemetry API
 * and context (a job's own spans nest under its run's span only through the same context classes,
 * and find the worker's SDK through the same {@code GlobalOpenTelemetry}).
 *
 * <p>Everything else is looked up in the JDK first and then in the jobs' JARs, never in Lockstep's
 * {@code lib/}. Resources likewise, except those of the shared packages: a jobs JAR's
 * {@code META-INF/services/io.lockstep.scheduler.JobFactory} is found, Lockstep's own are not.
 */
final class JobsClassLoader extends URLClassLoader {

    /** Package prefixes always loaded from Lockstep's class path. */
    static final List<String> SHARED = List.of("io.lockstep.scheduler.", "io.lockstep.redis.", "org.slf4j.", "redis.clients.",
            "org.apache.commons.pool2.", "com.fasterxml.jackson.annotation.", "io.opentelemetry.api.", "io.opentelemetry.context.");

    static {
        ClassLoader.registerAsParallelCapable();
    }

    private final ClassLoader lockstep;

    /** {@code where} ends the name, which messages quote: "class X not found in the jobs directory DIR". */
    JobsClassLoader(List<URL> jars, ClassLoader lockstep, String where) {
        super("in the jobs directory " + where, jars.toArray(URL[]::new), ClassLoader.getPlatformClassLoader());
        this.lockstep = lockstep;
    }

    /** Under a shared prefix but not shipped with the worker: the jobs bring their own (OpenTelemetry's incubating API). */
    static final List<String> NOT_SHARED = List.of("io.opentelemetry.api.incubator.");

    static boolean shared(String className) {
        for (String prefix : NOT_SHARED) {
            if (className.startsWith(prefix)) {
                return false;
            }
        }
        for (String prefix : SHARED) {
            if (className.startsWith(prefix)) {
                return true;
            }
        }
        return false;
    }

    private static boolean sharedResource(String name) {
        return name.endsWith(".class") && shared(name.replace('/', '.'));
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
        if (shared(name)) {
            return lockstep.loadClass(name);
        }
        return super.loadClass(name, resolve); // the JDK, then the jobs' JARs
    }

    @Override
    public URL getResource(String name) {
        return sharedResource(name) ? lockstep.getResource(name) : super.getResource(name);
    }

    @Override
    public Enumeration<URL> getResources(String name) throws IOException {
        return sharedResource(name) ? lockstep.getResources(name) : super.getResources(name);
    }
}
