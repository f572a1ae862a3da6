package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.lockstep.redis.LocalRedisServer;
import io.lockstep.redis.LocalRedlock;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 37: Redlock with a minority of its masters stalled (SIGSTOP: a GC or disk pause, a
 * partition that drops packets) for 16 s, beside three worker JVMs and 20 per-second jobs. A master
 * that stops answering is left out after two fan-outs that waited for it, so the jobs keep their
 * slots; when it is let go (SIGCONT) the calls it queued land late and must change nothing. Every
 * slot of the window runs once or is reported, none twice, and the audit holds; the share of slots
 * run and the 99th percentile of start lateness over the window are printed (RELIABILITY has them).
 */
class RedlockStallIT {

    private static final int JOBS = 20;
    private static final Duration STALL = Duration.ofSeconds(16);

    @TempDir
    Path dir;

    private LocalRedlock redlock;
    private Cluster cluster;

    @AfterEach
    void stop() {
        if (cluster != null) {
            cluster.close();
        }
        if (redlock != null) {
            redlock.close();
        }
    }

    /**
     * 2 of 5, 1 of 3, and 2 of 5 with one let go mid-stall; with {@code -Dlockstep.it.floor=true} also
     * none of 5, the floor the lateness figures are stated against (a measurement, not a check: it
     * adds a minute to the suite, so CI leaves it out).
     */
    static java.util.stream.Stream<org.junit.jupiter.params.provider.Arguments> stalls() {
        java.util.stream.Stream<org.junit.jupiter.params.provider.Arguments> stalls = java.util.stream.Stream.of(
                org.junit.jupiter.params.provider.Arguments.of(5, 2, 0), org.junit.jupiter.params.provider.Arguments.of(3, 1, 0),
                org.junit.jupiter.params.provider.Arguments.of(5, 2, 8));
        return Boolean.getBoolean("lockstep.it.floor")
                ? java.util.stream.Stream.concat(java.util.stream.Stream.of(org.junit.jupiter.params.provider.Arguments.of(5, 0, 0)), stalls)
                : stalls;
    }

    /**
     * @param masters how many masters
     * @param stalled how many of them are stopped for {@link #STALL}
     * @param resumeOneAt seconds into the stall at which the first stalled master is let go (0: all at its end)
     */
    @ParameterizedTest(name = "{1} of {0} masters stalled for 16 s, the first let go after {2} s")
    @MethodSource("stalls")
    void aStalledMinorityCostsTheJobsAlmostNothing(int masters, int stalled, int resumeOneAt) {
        redlock = new LocalRedlock(masters);
        StringBuilder yaml = new StringBuilder("redis:\n  redlock:\n    nodes: [");
        for (int i = 0; i < masters; i++) {
            LocalRedisServer m = redlock.servers.get(i);
            yaml.append(i == 0 ? "" : ", ").append(m.host()).append(':').append(m.port());
        }
        yaml.append("]\n    nodeTimeout: 200ms\n    quarantine: 0s\n  timeout: 1s\n"); // never restarted here: no quarantine
        cluster = Cluster.onRedis(dir, yaml.toString(), Cluster.perSecondJobs(JOBS, 50, "3s", "2s"));
        cluster.start("w1");
        cluster.start("w2");
        cluster.start("w3");
        cluster.awaitStarted();
        Instant warm = Instant.now().truncatedTo(ChronoUnit.SECONDS).plusSeconds(2);
        await().atMost(Duration.ofSeconds(30)).until(() -> cluster.everyJobReached(JOBS, warm));

        Instant from = Instant.now().truncatedTo(ChronoUnit.SECONDS).plusSeconds(1);
        Cluster.sleepUntil(from.plusMillis(300));
        List<LocalRedisServer> stopped = redlock.servers.subList(masters - stalled, masters);
        stopped.forEach(LocalRedisServer::pause);
        Instant stallStart = Instant.now();
        try {
            if (resumeOneAt > 0) {
                Cluster.sleepUntil(stallStart.plusSeconds(resumeOneAt));
                stopped.get(0).resume(); // mid-run: what it queued while stopped arrives now
            }
            Cluster.sleepUntil(stallStart.plus(STALL));
        } finally {
            stopped.forEach(LocalRedisServer::resume);
        }
        Instant to = Instant.now().truncatedTo(ChronoUnit.SECONDS).plusSeconds(3);
        await().atMost(Duration.ofSeconds(30)).until(() -> cluster.everyJobReached(JOBS, to.plusSeconds(1)));
        cluster.workers.forEach(w -> assertThat(w.terminate()).isZero());

        List<String> never = cluster.slotsNeverStarted(JOBS, from, to);
        long slots = (Duration.between(from, to).toSeconds() + 1) * JOBS;
        List<Long> lateness = cluster.events("job_started").stream()
                .filter(e -> !WorkerProcess.slot(e).isBefore(from) && !WorkerProcess.slot(e).isAfter(to))
                .map(e -> e.path("lateness_ms").asLong()).sorted().toList();
        long p99 = lateness.isEmpty() ? -1 : lateness.get((int) Math.ceil(lateness.size() * 0.99) - 1);
        System.out.printf("%nRedlockStallIT: %d of %d masters stalled %d s%s: %d of %d slots ran (%.1f %%), p99 start lateness %d ms, "
                + "max %d ms%n", stalled, masters, STALL.toSeconds(), resumeOneAt > 0 ? " (one let go after " + resumeOneAt + " s)" : "",
                slots - never.size(), slots, 100.0 * (slots - never.size()) / slots, p99, lateness.isEmpty() ? -1 : lateness.get(lateness.size() - 1));

        assertThat(cluster.startEventsBySlot()).as("each slot once").allSatisfy((slot, starts) -> assertThat(starts).as(slot).hasSize(1));
        assertThat(cluster.silentSlots(JOBS, from, to)).as("slots neither run nor reported").isEmpty();
        // Before issue 37 about a quarter of the slots did not run (a stalled master cost every step its
        // wait, its calls piled up): a floor well below the figure, well above that.
        assertThat(slots - never.size()).as("slots run").isGreaterThanOrEqualTo(slots * 9 / 10);
        List<JsonNode> excluded = cluster.events("redlock_master_excluded");
        if (stalled > 0) {
            assertThat(excluded).as("the stalled masters were left out").isNotEmpty();
        } else {
            assertThat(excluded).as("no master left out without a stall").isEmpty();
        }
        cluster.assertAuditHolds();
    }
}
