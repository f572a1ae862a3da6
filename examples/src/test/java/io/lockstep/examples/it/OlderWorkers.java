package io.lockstep.examples.it;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/**
 * The worker JARs of older key layouts, built from this repository's own history ({@code git
 * archive} of the layout's last commit, then {@code mvn package} of its examples), so that the
 * upgrade tests run the real older versions, not imitations of them ({@link HistoricBuild}). Each
 * is built once into {@code target/layout<n>}; about 15-30 s each.
 */
final class OlderWorkers {

    /** The last commit whose workers use key layout 1 (before the group hash tags). */
    static final String LAYOUT_1 = "c6e448cd5b0927bb6e74d193e5896985edf51b1b";
    /** The last commit whose workers use key layout 2 (an exclusive job's lease in a key of its own). */
    static final String LAYOUT_2 = "7583c8609de6fd259005056949e9e8b85bad7a84";

    private OlderWorkers() {}

    static Path layoutOne() throws IOException, InterruptedException {
        return jar("layout1", LAYOUT_1);
    }

    static Path layoutTwo() throws IOException, InterruptedException {
        return jar("layout2", LAYOUT_2);
    }

    private static Path jar(String name, String commit) throws IOException, InterruptedException {
        return HistoricBuild.build(name, commit, "the upgrade test", List.of("-pl", "examples", "-am"))
                .resolve("examples/target/lockstep-examples.jar");
    }
}
