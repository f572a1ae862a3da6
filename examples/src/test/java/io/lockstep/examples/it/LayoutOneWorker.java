package io.lockstep.examples.it;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/**
 * The worker JAR of the last commit with key layout 1, built from this repository's own history
 * ({@code git archive} of {@link #COMMIT}, then {@code mvn package} of its examples), so that the
 * upgrade test runs the real older version, not an imitation of it ({@link HistoricBuild}). Built
 * once into {@code target/layout1}; about 15-30 s.
 */
final class LayoutOneWorker {

    /** The last commit whose workers use key layout 1 (before the group hash tags). */
    static final String COMMIT = "c6e448cd5b0927bb6e74d193e5896985edf51b1b";

    private LayoutOneWorker() {}

    static Path jar() throws IOException, InterruptedException {
        return HistoricBuild.build("layout1", COMMIT, "the upgrade test", List.of("-pl", "examples", "-am"))
                .resolve("examples/target/lockstep-examples.jar");
    }
}
