package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lockstep.scheduler.JobFactory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Worker mode with the application's {@link JobFactory}, found by {@code ServiceLoader} as a jobs
 * JAR registers it: two worker JVMs build their jobs with it (jobs without a no-arg constructor),
 * run them, and on SIGTERM drain, then close each job once, then the factory once, in that order.
 */
class JobLifecycleIT {

    @TempDir
    Path dir;

    @Test
    void aFactoryFromTheClassPathBuildsTheJobsAndEverythingIsClosedOnceAfterTheDrain() throws IOException {
        // The jobs JAR's registration, on these workers' class path only (not the other tests').
        Path services = dir.resolve("jobs-jar");
        Files.createDirectories(services.resolve("META-INF/services"));
        Files.writeString(services.resolve("META-INF/services/" + JobFactory.class.getName()), LifecycleFactory.class.getName() + "\n");
        String jobs = "defaults:\n  lease: 5s\n  misfireGrace: 2s\njobs:\n"
                + "  - { name: alpha, cron: \"* * * * * *\", class: " + LifecycleFactory.PooledJob.class.getName() + " }\n"
                + "  - { name: beta, cron: \"* * * * * *\", class: " + LifecycleFactory.PooledJob.class.getName() + " }\n";
        try (Cluster cluster = new Cluster(dir, jobs, "2s")) {
            Path logA = dir.resolve("a.lifecycle");
            Path logB = dir.resolve("b.lifecycle");
            WorkerProcess a = cluster.startWithClassPath("a", List.of(services), "-Dlifecycle.log=" + logA);
            WorkerProcess b = cluster.startWithClassPath("b", List.of(services), "-Dlifecycle.log=" + logB);
            cluster.awaitStarted();
            await().atMost(Duration.ofSeconds(20)).until(() -> a.events("job_started").size() >= 2 && b.events("job_started").size() >= 2);
            assertThat(a.terminate()).as(a.stderr()).isZero();
            assertThat(b.terminate()).as(b.stderr()).isZero();
            for (Path log : List.of(logA, logB)) {
                List<String> lines = Files.readAllLines(log);
                assertThat(lines).as("%s", log).first().isEqualTo("open factory");
                assertThat(lines).as("%s", log).last().isEqualTo("close factory");
                assertThat(lines).as("%s", log).containsOnlyOnce("open factory", "close factory", "close job alpha", "close job beta");
                int lastRun = lines.stream().filter(l -> l.startsWith("ran ")).mapToInt(lines::indexOf).max().orElseThrow();
                int firstClose = Math.min(lines.indexOf("close job alpha"), lines.indexOf("close job beta"));
                assertThat(firstClose).as("jobs closed after every run ended, in %s", lines).isGreaterThan(lastRun);
                assertThat(lines.indexOf("close job alpha")).as("newest first").isGreaterThan(lines.indexOf("close job beta"));
            }
            assertThat(cluster.startsBySlot().values()).allSatisfy(ws -> assertThat(ws).hasSize(1));
            cluster.assertAuditHolds();
        }
    }
}
