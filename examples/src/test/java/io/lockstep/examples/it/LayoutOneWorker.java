package io.lockstep.examples.it;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * The worker JAR of the last commit with key layout 1, built from this repository's own history
 * ({@code git archive} of {@link #COMMIT}, then {@code mvn package} of its examples), so that the
 * upgrade test runs the real older version, not an imitation of it. Built once into
 * {@code target/layout1}; about 15-30 s. Skips (never fails) where the history or the tools are
 * missing: a source tarball, or a machine without git.
 */
final class LayoutOneWorker {

    /** The last commit whose workers use key layout 1 (before the group hash tags). */
    static final String COMMIT = "c6e448cd5b0927bb6e74d193e5896985edf51b1b";

    private LayoutOneWorker() {}

    static synchronized Path jar() throws IOException, InterruptedException {
        Path home = Path.of("target", "layout1").toAbsolutePath();
        Path jar = home.resolve("src/examples/target/lockstep-examples.jar");
        Path stamp = home.resolve("built-" + COMMIT);
        if (Files.isRegularFile(jar) && Files.exists(stamp)) {
            return jar;
        }
        Path root = Path.of("..").toAbsolutePath().normalize();
        Assumptions.assumeTrue(Files.exists(root.resolve(".git")),
                "the upgrade test builds the previous version from this repository's git history; " + root + " has none");
        Assumptions.assumeTrue(runs(root, List.of("git", "cat-file", "-e", COMMIT + "^{commit}")),
                "the upgrade test needs git (package git) and commit " + COMMIT + " in the history (a shallow clone lacks it)");
        Path src = home.resolve("src");
        Files.createDirectories(src);
        Path archive = home.resolve("layout1.tar");
        require(runs(root, List.of("git", "archive", "-o", archive.toString(), COMMIT)), "git archive " + COMMIT);
        require(runs(src, List.of("tar", "-xf", archive.toString())), "tar -xf " + archive);
        require(runs(src, List.of(maven(), "-q", "-B", "package", "-DskipTests", "-Dmaven.javadoc.skip=true", "-pl", "examples", "-am")),
                "mvn package of the layout 1 worker in " + src);
        Files.createFile(stamp);
        return jar;
    }

    private static String maven() {
        String home = System.getProperty("maven.home");
        return home != null && Files.isExecutable(Path.of(home, "bin", "mvn")) ? Path.of(home, "bin", "mvn").toString() : "mvn";
    }

    private static void require(boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException("building the layout 1 worker failed: " + what + " (see target/layout1/build.log)");
        }
    }

    private static boolean runs(Path dir, List<String> command) throws InterruptedException {
        try {
            Path log = Path.of("target", "layout1", "build.log").toAbsolutePath();
            Files.createDirectories(log.getParent());
            Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
            if (!p.waitFor(10, TimeUnit.MINUTES)) {
                p.destroyForcibly();
                return false;
            }
            return p.exitValue() == 0;
        } catch (IOException e) {
            return false; // not installed
        }
    }
}
