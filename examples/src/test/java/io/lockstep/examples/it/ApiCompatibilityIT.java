package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;

import japicmp.cmp.JApiCmpArchive;
import japicmp.cmp.JarArchiveComparator;
import japicmp.cmp.JarArchiveComparatorOptions;
import japicmp.model.AccessModifier;
import japicmp.model.JApiChangeStatus;
import japicmp.model.JApiClass;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * F0 of the 2026-12-04 trial: the API-compatibility check of the compatibility promise
 * (docs/COMPATIBILITY.md), against the previous release. Its library jars are built from its tag
 * ({@code v<lockstep.previousRelease>}, {@link HistoricBuild}) and compared with this build's by
 * japicmp (public and protected members, binary compatibility). A release the promise does not let
 * break (0.2.0 to 0.2.1; from 1.0, any minor or patch release) may break nothing: every
 * binary-incompatible change fails here. A release the promise lets break (a new 0.x minor, from
 * 1.0 a new major) must say so in the CHANGELOG's [Unreleased] section ({@code ### Changed (breaking}),
 * and the changes are listed in {@code target/api-compat/<module>.txt} for its entry.
 */
class ApiCompatibilityIT {

    /** The modules of the previous release's public API (the Spring Boot starter and the worker's CLI came later). */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"scheduler-core", "scheduler-redis"})
    void theApiKeepsThePromiseMadeForThisVersion(String module) throws Exception {
        String previous = System.getProperty("lockstep.previousRelease");
        String current = System.getProperty("lockstep.version");
        Assumptions.assumeTrue(previous != null && current != null, "run by failsafe (it passes lockstep.previousRelease and lockstep.version)");
        // The release's tag; a clone that came without tags has its commit (the same tree).
        String ref = HistoricBuild.exists("v" + previous) ? "v" + previous : System.getProperty("lockstep.previousReleaseCommit", "v" + previous);
        Path old = HistoricBuild.build("api-baseline", ref, "the API check against " + previous,
                List.of("-pl", "scheduler-core,scheduler-redis", "-am"));
        Path oldJar;
        try (var jars = Files.list(old.resolve(module).resolve("target"))) {
            oldJar = jars.filter(p -> p.getFileName().toString().matches(module + "-[0-9.]+(-SNAPSHOT)?\\.jar")).findFirst().orElseThrow();
        }
        Path newJar = Path.of("..", module, "target", module + "-" + current + ".jar").toAbsolutePath().normalize();
        assertThat(newJar).as("built by this build before its integration tests").isRegularFile();

        JarArchiveComparatorOptions options = new JarArchiveComparatorOptions();
        options.setAccessModifier(AccessModifier.PROTECTED);
        options.getIgnoreMissingClasses().setIgnoreAllMissingClasses(true); // their dependencies are not compared
        List<JApiClass> classes = new JarArchiveComparator(options).compare(new JApiCmpArchive(oldJar.toFile(), previous),
                new JApiCmpArchive(newJar.toFile(), current));
        assertThat(classes).as("the comparison saw the API both versions have")
                .anyMatch(c -> c.getChangeStatus() != JApiChangeStatus.NEW && c.getChangeStatus() != JApiChangeStatus.REMOVED);

        List<String> broken = new ArrayList<>();
        for (JApiClass c : classes) {
            if (!c.isBinaryCompatible()) {
                broken.add(c.getFullyQualifiedName() + " " + c.getChangeStatus() + " " + c.getCompatibilityChanges()
                        + c.getMethods().stream().filter(m -> !m.isBinaryCompatible())
                                .map(m -> " " + m.getName() + m.getCompatibilityChanges()).toList());
            }
        }
        Path report = Path.of("target", "api-compat", module + ".txt");
        Files.createDirectories(report.getParent());
        Files.write(report, broken);

        if (mayBreak(previous, current)) {
            if (!broken.isEmpty()) {
                String changelog = Files.readString(Path.of("..", "CHANGELOG.md"));
                String unreleased = changelog.substring(changelog.indexOf("## [Unreleased]"), changelog.indexOf("## [" + previous + "]"));
                assertThat(unreleased).as("%d binary-incompatible classes in %s since %s (%s): the CHANGELOG says so", broken.size(),
                        module, previous, report).contains("### Changed (breaking");
            }
        } else {
            assertThat(broken).as("a %s release may break nothing of %s (the promise: docs/COMPATIBILITY.md)", current, previous).isEmpty();
        }
    }

    @org.junit.jupiter.api.Test
    void thePromiseLetsOnlyANewMajorBreakOrBefore1ANewMinor() {
        assertThat(mayBreak("0.1.0", "0.2.0-SNAPSHOT")).isTrue();
        assertThat(mayBreak("0.2.0", "0.2.1")).isFalse();
        assertThat(mayBreak("0.9.3", "1.0.0")).isTrue();
        assertThat(mayBreak("1.2.0", "1.3.0")).isFalse();
        assertThat(mayBreak("1.3.0", "2.0.0-SNAPSHOT")).isTrue();
    }

    /** Whether the promise lets {@code current} break {@code previous}'s API: a new 0.x minor, or from 1.0 a new major. */
    static boolean mayBreak(String previous, String current) {
        int[] p = parts(previous);
        int[] c = parts(current);
        return p[0] == 0 && c[0] == 0 ? c[1] > p[1] : c[0] > p[0];
    }

    private static int[] parts(String version) {
        String[] f = version.replace("-SNAPSHOT", "").split("\\.");
        return new int[] {Integer.parseInt(f[0]), Integer.parseInt(f[1])};
    }
}
