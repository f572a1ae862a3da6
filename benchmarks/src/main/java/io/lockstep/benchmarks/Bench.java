package io.lockstep.benchmarks;

import java.nio.file.Path;

/** Where the JVM and this JAR are, for the processes the harness starts. */
final class Bench {

    private Bench() {}

    static String java() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    static String jcmd() {
        return Path.of(System.getProperty("java.home"), "bin", "jcmd").toString();
    }

    /** The class path this harness runs from: the shaded benchmarks JAR, which holds the worker CLI too. */
    static String jar() {
        return System.getProperty("java.class.path");
    }
}
