package io.lockstep.worker;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.net.MalformedURLException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine.Option;

/**
 * {@code --jobs DIR} (or {@code LOCKSTEP_JOBS}): the directory of the application's JARs, its job
 * classes and their dependencies, for {@code run} and {@code validate}. Every {@code *.jar} directly
 * in it is loaded by a {@link JobsClassLoader} of its own, which is the context class loader while
 * the command runs (job classes, the {@code JobFactory} lookup, and every thread the worker starts
 * inherit it). Without a directory, job classes come from the class path, as before.
 *
 * <p>The operator commands do not take it: they load no job class.
 */
final class JobsDirectory {

    static final String ENV = "LOCKSTEP_JOBS";

    @Option(names = "--jobs", paramLabel = "DIR", defaultValue = "${env:" + ENV + "}",
            description = "a directory of JARs with your job classes and their dependencies, loaded apart from Lockstep's own "
                    + "(default: $" + ENV + ", else the class path)")
    Path dir;

    /**
     * Runs {@code command} with the jobs' class loader as this thread's context class loader, and
     * closes that loader after it. Answers {@link WorkerMain#BAD_INPUT} after one line on {@code err}
     * when the directory is not a readable directory.
     */
    int run(PrintWriter err, Callable<Integer> command) throws Exception {
        if (dir == null) {
            return command.call();
        }
        List<URL> jars;
        try {
            jars = jars(dir);
        } catch (IOException | UncheckedIOException e) {
            err.println("error: the jobs directory " + dir + " cannot be read: "
                    + (e instanceof UncheckedIOException u ? u.getCause() : e));
            return WorkerMain.BAD_INPUT;
        }
        if (jars == null) {
            err.println("error: the jobs directory " + dir + " (--jobs or $" + ENV + ") is not a directory");
            return WorkerMain.BAD_INPUT;
        }
        Thread thread = Thread.currentThread();
        ClassLoader previous = thread.getContextClassLoader();
        try (JobsClassLoader loader = new JobsClassLoader(jars, JobsDirectory.class.getClassLoader(), dir.toString())) {
            thread.setContextClassLoader(loader);
            return command.call();
        } finally {
            thread.setContextClassLoader(previous);
        }
    }

    /** The JARs directly in {@code dir}, in name order; null when it is not a directory. */
    static List<URL> jars(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return null;
        }
        List<URL> jars = new ArrayList<>();
        try (Stream<Path> files = Files.list(dir)) {
            for (Path jar : files.filter(p -> p.getFileName().toString().endsWith(".jar") && Files.isRegularFile(p)).sorted().toList()) {
                jars.add(url(jar));
            }
        }
        return jars;
    }

    private static URL url(Path jar) {
        try {
            return jar.toAbsolutePath().toUri().toURL();
        } catch (MalformedURLException e) {
            throw new IllegalArgumentException(jar + " has no URL", e);
        }
    }
}
