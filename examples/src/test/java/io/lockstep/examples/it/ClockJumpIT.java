package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A worker whose host wall clock jumps mid-run, an hour ahead and then an hour back (libfaketime,
 * from a timestamp file the test rewrites), beside a worker whose clock is right. The jumping
 * worker keeps taking part after each jump (its cluster time is Redis time plus elapsed monotonic
 * time, never its wall clock), no lease is lost early, no slot runs twice, and every slot of the
 * window starts. Its own event timestamps do jump: they are its wall clock; slots are not.
 */
class ClockJumpIT {

    private static final int JOBS = 3;
    private static final List<Path> LIBFAKETIME = List.of(
            Path.of("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"),
            Path.of("/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1"),
            Path.of("/usr/lib/faketime/libfaketime.so.1"));

    @TempDir
    Path dir;

    @Test
    void aWorkerWhoseWallClockJumpsAnHourEitherWayKeepsRunningSlotsOnTime() throws IOException {
        Optional<Path> lib = LIBFAKETIME.stream().filter(Files::isRegularFile).findFirst();
        Assumptions.assumeTrue(lib.isPresent(), "libfaketime not found: install the Debian package 'faketime' to run this test");
        Path offset = dir.resolve("faketime.rc");
        Files.writeString(offset, "+0\n");
        try (Cluster cluster = new Cluster(dir, Cluster.perSecondJobs(JOBS, 100, "2s", "1s"))) {
            WorkerProcess jumper = cluster.startWithEnv("jumper", Map.of(
                    "LD_PRELOAD", lib.get().toString(),
                    "FAKETIME_TIMESTAMP_FILE", offset.toString(),
                    "FAKETIME_CACHE_DURATION", "1",
                    "FAKETIME_DONT_FAKE_MONOTONIC", "1"));
            WorkerProcess steady = cluster.start("steady");
            cluster.awaitStarted();
            Instant from = Instant.now().plusSeconds(2);
            await().atMost(Duration.ofSeconds(20)).until(() -> racedAfter(jumper, from) >= 2 * JOBS);

            Files.writeString(offset, "+1h\n");
            Instant ahead = Instant.now();
            await().atMost(Duration.ofSeconds(20)).until(() -> racedAfter(jumper, ahead.plusSeconds(2)) >= 3 * JOBS);
            Files.writeString(offset, "-1h\n");
            Instant behind = Instant.now();
            await().atMost(Duration.ofSeconds(20)).until(() -> racedAfter(jumper, behind.plusSeconds(2)) >= 3 * JOBS);
            Instant to = Instant.now().minusSeconds(2);
            assertThat(steady.terminate()).isZero();
            assertThat(jumper.terminate()).isZero();

            assertThat(cluster.events("lease_lost")).as("no lease lost early").isEmpty();
            assertThat(cluster.startsBySlot()).allSatisfy((slot, workers) -> assertThat(workers).as(slot).hasSize(1));
            Instant first = from.plusSeconds(1).truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
            Instant last = to.truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
            assertThat(cluster.slotsNeverStarted(JOBS, first, last)).as("every slot of the window started").isEmpty();
            assertThat(jumper.events("job_started")).allSatisfy(e -> assertThat(e.path("lateness_ms").asLong())
                    .as("%s started on time by cluster time", e.path("slot").asText()).isBetween(0L, 1_000L));
            System.out.printf("%nClockJumpIT: jumper ran %d slots, steady %d, across +1h and -1h wall-clock jumps%n",
                    jumper.events("job_started").size(), steady.events("job_started").size());
        }
    }

    /**
     * How many slots due after {@code instant} the worker raced for, won or lost (slots are cluster
     * time, never its faked wall clock): whether it still takes part.
     */
    private static long racedAfter(WorkerProcess w, Instant instant) {
        return java.util.stream.Stream.concat(w.events("slot_claimed").stream(), w.events("slot_contended").stream())
                .map(WorkerProcess::slot).filter(s -> s.isAfter(instant)).count();
    }

}
