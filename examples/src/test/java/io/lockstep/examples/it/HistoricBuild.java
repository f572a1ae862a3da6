package io.lockstep.examples.it;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * An earlier version of this project, built from the repository's own history ({@code git archive}
 * of a commit or tag, then {@code mvn package} of some of its modules) into {@code target/<name>},
 * once per commit: the real older version, not an imitation of it. Skips (never fails) where the
 * history or the tools are missing: a source tarball, a shallow clone, a machine without git.
 */
final class HistoricBuild {

    private HistoricBuild() {}

    /**
     * The source tree of {@code ref} built by {@code mvn package -DskipTests} with {@code mavenArgs}
     * (modules, say), under {@code target/<name>/src}; built once, then reused while the stamp says
     * it is {@code ref}'s.
     */
    static synchronized Path build(String name, String ref, String why, List<String> mavenArgs) throws IOException, InterruptedException {
        Path home = Path.of("target", name).toAbsolutePath();
        Path src = home.resolve("src");
        Path stamp = home.resolve("built-" + ref.replace('/', '_'));
        Path log = home.resolve("build.log");
        if (Files.exists(stamp)) {
            return src;
        }
        Path root = Path.of("..").toAbsolutePath().normalize();
        Assumptions.assumeTrue(Files.exists(root.resolve(".git")), why + " builds it from this repository's git history; " + root + " has none");
        Assumptions.assumeTrue(runs(root, log, List.of("git", "cat-file", "-e", ref + "^{commit}")),
                why + " needs git (package git) and " + ref + " in the history (a shallow clone lacks it)");
        Files.createDirectories(src);
        Path archive = home.resolve(name + ".tar");
        require(runs(root, log, List.of("git", "archive", "-o", archive.toString(), ref)), "git archive " + ref, log);
        require(runs(src, log, List.of("tar", "-xf", archive.toString())), "tar -xf " + archive, log);
        List<String> mvn = new ArrayList<>(List.of(maven(), "-q", "-B", "package", "-DskipTests", "-Dmaven.javadoc.skip=true"));
        mvn.addAll(mavenArgs);
        require(runs(src, log, mvn), "mvn package of " + ref + " in " + src, log);
        Files.createFile(stamp);
        return src;
    }

    /** Whether {@code ref} names a commit of this repository (false without git or its history). */
    static boolean exists(String ref) throws InterruptedException {
        Path root = Path.of("..").toAbsolutePath().normalize();
        return Files.exists(root.resolve(".git"))
                && runs(root, Path.of("target", "git-probe.log").toAbsolutePath(), List.of("git", "cat-file", "-e", ref + "^{commit}"));
    }

    private static String maven() {
        String home = System.getProperty("maven.home");
        return home != null && Files.isExecutable(Path.of(home, "bin", "mvn")) ? Path.of(home, "bin", "mvn").toString() : "mvn";
    }

    private static void require(boolean ok, String what, Path log) {
        if (!ok) {
            throw new IllegalStateException("building an earlier version failed: " + what + " (see " + log + ")");
        }
    }

    private static boolean runs(Path dir, Path log, List<String> command) throws InterruptedException {
        try {
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
