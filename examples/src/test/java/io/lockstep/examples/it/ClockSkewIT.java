package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lockstep.examples.it.jobs.RecordingJob;
import io.lockstep.scheduler.SlotCoverage;
import io.lockstep.examples.it.jobs.RecordingJob.Run;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Workers on hosts whose wall clocks are 5 s fast and 5 s slow (libfaketime, preloaded into their
 * JVMs: the host clock itself is off, their log timestamps with it) next to one with a true clock.
 * Each measures its offset to Redis's clock; every slot runs once, none before its slot nor later
 * than its grace plus a second by the true clock, and the audit, which places each worker's log
 * on Redis time by the offset it logged, holds.
 *
 * <p>When a run began is read from the job's own record ({@code RecordingJob}'s monotonic start,
 * shared by every process on the host and not faked), placed on the test's true clock.
 */
class ClockSkewIT {

    private static final int JOBS = 5;
    private static final Duration GRACE = Duration.ofSeconds(2);

    @TempDir
    Path dir;

    private String jobs() {
        StringBuilder yaml = new StringBuilder("defaults:\n  lease: 5s\n  misfireGrace: " + GRACE.toSeconds() + "s\njobs:\n");
        for (int j = 0; j < JOBS; j++) {
            yaml.append(String.format("  - { name: job-%02d, cron: \"* * * * * *\", class: io.lockstep.examples.it.jobs.RecordingJob,"
                    + " params: { file: \"%s\", workMillis: 20 } }%n", j, dir.resolve("job-" + j + ".log")));
        }
        return yaml.toString();
    }

    private static Map<String, String> skewed(Path lib, String offset) {
        return Map.of("LD_PRELOAD", lib.toString(), "FAKETIME", offset, "FAKETIME_DONT_FAKE_MONOTONIC", "1");
    }

    @Test
    void workersWithSkewedClocksNeitherFireEarlyNorTwice() {
        Optional<Path> lib = WorkerProcess.libfaketime();
        Assumptions.assumeTrue(lib.isPresent(), "libfaketime not found: install the Debian package 'faketime' to run this test");
        try (Cluster cluster = new Cluster(dir, jobs())) {
            cluster.startWithEnv("fast", skewed(lib.get(), "+5"));
            cluster.startWithEnv("slow", skewed(lib.get(), "-5"));
            cluster.start("true");
            cluster.awaitStarted(Duration.ofSeconds(90)); // libfaketime's JVMs boot slowly
            Map<String, Long> offsets = new java.util.HashMap<>();
            cluster.events("worker_started").forEach(e -> offsets.put(e.path("worker").asText(), e.path("clock_offset_ms").asLong()));
            assertThat(offsets.get("fast")).as("the fast host's offset to Redis").isBetween(-5_100L, -4_900L);
            assertThat(offsets.get("slow")).as("the slow host's offset to Redis").isBetween(4_900L, 5_100L);
            assertThat(offsets.get("true")).isBetween(-100L, 100L);

            Instant from = Instant.now().truncatedTo(ChronoUnit.SECONDS).plusSeconds(2);
            Instant to = from.plusSeconds(15);
            await().atMost(Duration.ofSeconds(40)).until(() -> runs().stream().filter(r -> r.slot().isAfter(to)).count() >= JOBS);
            cluster.workers.forEach(w -> assertThat(w.terminate()).isZero());

            List<Run> runs = runs();
            assertThat(runs).extracting(Run::worker).as("every worker ran slots").contains("fast", "slow", "true");
            // Never before its slot by the true clock (1 ms: the error of placing a monotonic reading on
            // the wall clock), never later than its grace plus a second.
            assertThat(runs).allSatisfy(r -> assertThat(Duration.between(r.slot(), r.started()).toMillis())
                    .as("%s of %s started %s by the true clock", r.slot(), r.worker(), r.started()).isBetween(-1L, GRACE.plusSeconds(1).toMillis()));
            assertThat(cluster.startsBySlot()).allSatisfy((slot, workers) -> assertThat(workers).as(slot).hasSize(1));
            // Every slot started, but one a run of the slot before still held the lease for (overlap:
            // skip, reported slot_skipped, and audit checks that report): a JVM with libfaketime
            // preloaded is slow (every clock read is intercepted), and CI saw one start a 20 ms run
            // 434 ms late and take 455 ms over it, into the next slot.
            List<String> skipped = cluster.events("slot_skipped").stream()
                    .map(e -> SlotCoverage.key(e.path("job").asText(), Instant.parse(e.path("slot").asText()))).toList();
            assertThat(cluster.slotsNeverStarted(JOBS, from, to)).isSubsetOf(skipped);
            cluster.assertAuditHolds();
        }
    }

    /** Every run the jobs recorded, its monotonic start placed on this JVM's (true) wall clock. */
    private List<Run> runs() {
        return RecordingJob.read(dir, JOBS);
    }
}
