package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lockstep.examples.it.jobs.RecordingJob;
import io.lockstep.examples.it.jobs.RecordingJob.Run;
import java.io.IOException;
import java.nio.file.Files;
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
 * A worker whose host wall clock jumps mid-run, an hour ahead and then an hour back (libfaketime,
 * from a timestamp file the test rewrites), beside a worker whose clock is right. The right one has
 * a single job thread, so it claims at most one of the three slots of each second and the jumper
 * must win and run the rest. After each jump the jumper still runs slots (its cluster time is Redis
 * time plus elapsed monotonic time, never its wall clock), none before its slot and none more than
 * later than its grace plus a second by the true clock, no lease is lost early, no slot runs twice, and every slot of the
 * window starts. Its own event timestamps do jump: they are its wall clock; slots are not.
 *
 * <p>When a run began is read from the job's own record ({@code RecordingJob}'s monotonic start,
 * shared by every process on the host and not faked), placed on the test's true clock.
 */
class ClockJumpIT {

    private static final int JOBS = 3;
    private static final Duration GRACE = Duration.ofSeconds(1);

    @TempDir
    Path dir;

    private String jobs() {
        StringBuilder yaml = new StringBuilder("defaults:\n  lease: 2s\n  misfireGrace: " + GRACE.toSeconds() + "s\njobs:\n");
        for (int j = 0; j < JOBS; j++) {
            yaml.append(String.format("  - { name: job-%02d, cron: \"* * * * * *\", class: io.lockstep.examples.it.jobs.RecordingJob,"
                    + " params: { file: \"%s\", workMillis: 100 } }%n", j, dir.resolve("job-" + j + ".log")));
        }
        return yaml.toString();
    }

    @Test
    void aWorkerWhoseWallClockJumpsAnHourEitherWayKeepsRunningSlotsOnTime() throws IOException {
        Optional<Path> lib = WorkerProcess.libfaketime();
        Assumptions.assumeTrue(lib.isPresent(), "libfaketime not found: install the Debian package 'faketime' to run this test");
        Path offset = dir.resolve("faketime.rc");
        Files.writeString(offset, "+0\n");
        try (Cluster cluster = new Cluster(dir, jobs())) {
            WorkerProcess jumper = cluster.startWithEnv("jumper", Map.of(
                    "LD_PRELOAD", lib.get().toString(),
                    "FAKETIME_TIMESTAMP_FILE", offset.toString(),
                    "FAKETIME_CACHE_DURATION", "1",
                    "FAKETIME_DONT_FAKE_MONOTONIC", "1"));
            Path oneThread = dir.resolve("steady.yaml");
            Files.writeString(oneThread, Cluster.replacing(Files.readString(cluster.config), "threads: 8", "threads: 1"));
            WorkerProcess steady = WorkerProcess.start(dir, oneThread, "steady");
            cluster.workers.add(steady);
            cluster.awaitStarted(Duration.ofSeconds(90)); // libfaketime's JVMs boot slowly
            Instant from = Instant.now().plusSeconds(2);
            await().atMost(Duration.ofSeconds(20)).until(() -> ranAfter("jumper", from) >= JOBS);

            Files.writeString(offset, "+1h\n");
            Instant ahead = Instant.now().plusSeconds(2);
            await().atMost(Duration.ofSeconds(20)).until(() -> ranAfter("jumper", ahead) >= 2 * JOBS);
            Files.writeString(offset, "-1h\n");
            Instant behind = Instant.now().plusSeconds(2);
            await().atMost(Duration.ofSeconds(20)).until(() -> ranAfter("jumper", behind) >= 2 * JOBS);
            Instant to = Instant.now().minusSeconds(2);
            assertThat(steady.terminate()).isZero();
            assertThat(jumper.terminate()).isZero();

            assertThat(cluster.events("lease_lost")).as("no lease lost early").isEmpty();
            assertThat(cluster.startsBySlot()).allSatisfy((slot, workers) -> assertThat(workers).as(slot).hasSize(1));
            Instant first = from.plusSeconds(1).truncatedTo(ChronoUnit.SECONDS);
            Instant last = to.truncatedTo(ChronoUnit.SECONDS);
            assertThat(cluster.slotsNeverStarted(JOBS, first, last)).as("every slot of the window started").isEmpty();
            // Every run of either worker began at or after its slot by the true clock (1 ms: the error of
            // placing a monotonic reading on the wall clock), and no later than its grace allows plus a
            // second: a claim decided near the end of the grace starts that late, and a worker slowed by
            // libfaketime adds to it. (A cluster time that followed the faked wall clock is caught below,
            // an hour off.)
            List<Run> runs = runs();
            assertThat(runs).filteredOn(r -> r.worker().equals("jumper") && r.slot().isAfter(ahead)).as("the jumper ran slots").isNotEmpty();
            assertThat(runs).allSatisfy(r -> assertThat(Duration.between(r.slot(), r.started()).toMillis())
                    .as("%s of %s started %s by the true clock", r.slot(), r.worker(), r.started()).isBetween(-1L, GRACE.plusSeconds(1).toMillis()));
            // Its own report of each start (lateness_ms, by its cluster time) agrees with the true clock within
            // a slot: a cluster time that followed the faked wall clock would be an hour off. (Not to the ms:
            // its estimate of Redis time may lag by a few ms, seen as -1 or -2 ms, and the job records its
            // start after the event is logged, once 71 ms after on this loaded machine.)
            Map<String, Long> trueLateness = new java.util.HashMap<>();
            runs.forEach(r -> trueLateness.put(r.job() + "@" + r.slot(), Duration.between(r.slot(), r.started()).toMillis()));
            assertThat(jumper.events("job_started")).isNotEmpty().allSatisfy(e -> assertThat(e.path("lateness_ms").asLong())
                    .as("%s: the jumper's own lateness against the true one", WorkerProcess.key(e))
                    .isCloseTo(trueLateness.get(WorkerProcess.key(e)), org.assertj.core.data.Offset.offset(1_000L)));
            System.out.printf("%nClockJumpIT: jumper ran %d slots (%d after +1h, %d after -1h), steady %d; latest start %d ms after its slot%n",
                    ranAfter("jumper", from), ranAfter("jumper", ahead) - ranAfter("jumper", behind), ranAfter("jumper", behind),
                    steady.events("job_started").size(), runs.stream().mapToLong(r -> Duration.between(r.slot(), r.started()).toMillis())
                            .max().orElse(0));
            cluster.assertAuditHolds();
        }
    }

    /** How many slots due after {@code instant} the worker ran, by the jobs' own records. */
    private long ranAfter(String worker, Instant instant) {
        return runs().stream().filter(r -> r.worker().equals(worker) && r.slot().isAfter(instant)).count();
    }

    /** Every run the jobs recorded, its monotonic start placed on this JVM's (true) wall clock. */
    private List<Run> runs() {
        return RecordingJob.read(dir, JOBS);
    }
}
