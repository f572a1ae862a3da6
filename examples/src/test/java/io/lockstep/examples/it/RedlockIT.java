package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lockstep.redis.LocalRedisServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import io.lockstep.redis.LocalRedlock;
import io.lockstep.scheduler.SlotCoverage;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Worker JVMs on Redlock over 5 independent masters ({@code redis.redlock}), with real faults:
 * masters SIGKILLed mid-run and restarted empty. What ran is read from the jobs' own records
 * ({@code RecordingJob} appends one line per run), not from Lockstep's events.
 *
 * <p>The restart quarantine is shortened to 20 s here (by default it is the longest record ttl,
 * minutes, which the test cannot wait out): the masters are given 20 s before the workers count on
 * them, and every restart in a test happens less than 20 s before it ends.
 */
class RedlockIT {

    private static final int JOBS = 4;
    private static final Duration QUARANTINE = Duration.ofSeconds(20);

    @TempDir
    Path dir;

    /** How long after the kill of two masters the next start may come and still be "no pause": a slot (1 s) plus a claim. */
    private static final Duration NO_PAUSE = Duration.ofSeconds(2);

    private LocalRedlock redlock;
    private List<LocalRedisServer> masters = List.of();
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

    private void startMasters() {
        redlock = new LocalRedlock(5);
        masters = redlock.servers;
    }

    private void awaitMastersUp(Duration uptime) {
        redlock.awaitUptime(uptime);
    }

    /** The workers' config: the 5 masters, and {@code jobs} recording jobs firing every second. */
    private Cluster cluster(Duration quarantine, int jobs, String grace, String overlap) {
        StringBuilder yaml = new StringBuilder("redis:\n  redlock:\n    nodes: [");
        for (int i = 0; i < masters.size(); i++) {
            yaml.append(i == 0 ? "" : ", ").append(masters.get(i).host()).append(':').append(masters.get(i).port());
        }
        yaml.append("]\n    nodeTimeout: 200ms\n    quarantine: ").append(quarantine.toSeconds()).append("s\n  timeout: 1s\n");
        StringBuilder jobsYaml = new StringBuilder("defaults:\n  lease: 2s\n  misfireGrace: " + grace + "\n  overlap: " + overlap
                + "\njobs:\n");
        for (int j = 0; j < jobs; j++) {
            jobsYaml.append(String.format("  - { name: job-%02d, cron: \"* * * * * *\", class: io.lockstep.examples.it.jobs.RecordingJob,"
                    + " params: { file: \"%s\", workMillis: 200 } }%n", j, dir.resolve("job-" + j + ".log")));
        }
        return Cluster.onRedis(dir, yaml.toString(), jobsYaml.toString());
    }

    /** job@slot (as the events write it) -> how many runs the job's own record holds. */
    private Map<String, Integer> runs(int jobs) {
        Map<String, Integer> runs = new HashMap<>();
        for (int j = 0; j < jobs; j++) {
            Path file = dir.resolve("job-" + j + ".log");
            try {
                if (!Files.exists(file)) {
                    continue;
                }
                for (String line : Files.readAllLines(file)) {
                    Instant slot = Instant.ofEpochMilli(Long.parseLong(line.split(" ")[0]));
                    runs.merge(SlotCoverage.key(String.format("job-%02d", j), slot), 1, Integer::sum);
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        return runs;
    }

    private boolean everyJobRanSince(int jobs, Instant slot) {
        Map<String, Integer> runs = runs(jobs);
        for (int j = 0; j < jobs; j++) {
            int job = j;
            if (runs.keySet().stream().filter(k -> k.startsWith(String.format("job-%02d@", job)))
                    .map(k -> Instant.parse(k.substring(k.indexOf('@') + 1))).noneMatch(s -> !s.isBefore(slot))) {
                return false;
            }
        }
        return true;
    }

    @Test
    void threeWorkersOnFiveMastersRunEverySlotOnceThroughTwoKilledMastersAndAnEmptyRestart() {
        startMasters();
        cluster = cluster(QUARANTINE, JOBS, "3s", "skip");
        List<WorkerProcess> workers = List.of(cluster.start("w1"), cluster.start("w2"), cluster.start("w3"));
        cluster.awaitStarted();
        awaitMastersUp(QUARANTINE);
        Instant from = Instant.now().plusSeconds(2).truncatedTo(ChronoUnit.SECONDS);
        await().atMost(Duration.ofSeconds(20)).until(() -> everyJobRanSince(JOBS, from.plusSeconds(2)));

        Instant killedAt = Instant.now();
        masters.get(3).kill();
        masters.get(4).kill();
        await().atMost(Duration.ofSeconds(20)).until(() -> everyJobRanSince(JOBS, killedAt.plusSeconds(4)));
        Instant restartedAt = Instant.now();
        masters.get(3).restart(); // back empty: written to, but it does not vote for the rest of the test
        await().atMost(Duration.ofSeconds(20)).until(() -> everyJobRanSince(JOBS, restartedAt.plusSeconds(5)));
        Instant until = Instant.now();
        workers.forEach(w -> assertThat(w.terminate()).isZero());
        Instant resumed = cluster.events("job_started").stream().map(WorkerProcess::ts).filter(t -> t.isAfter(killedAt))
                .min(Instant::compareTo).orElseThrow();

        Map<String, Integer> runs = runs(JOBS);
        assertThat(runs).as("every slot ran at most once, by the jobs' own records").allSatisfy((slot, n) -> assertThat(n).isEqualTo(1));
        // Every slot from the first of the window to the last whose grace (3 s) ended before the stop
        // ran (by the jobs' records) or was reported.
        Set<String> handled = new HashSet<>(runs.keySet());
        for (String name : List.of("slot_missed", "slot_skipped")) {
            cluster.events(name).forEach(e -> handled.add(WorkerProcess.key(e)));
        }
        Instant to = until.minusSeconds(3);
        assertThat(SlotCoverage.silent(handled, Cluster.jobNames(JOBS), from, to, Duration.ofSeconds(1)))
                .as("slots in [%s, %s) neither run nor reported", from, to).isEmpty();
        long ran = runs.keySet().stream().filter(k -> !WorkerProcess.slotOf(k).isBefore(from) && WorkerProcess.slotOf(k).isBefore(to)).count();
        long missedInWindow = cluster.events("slot_missed").stream().map(WorkerProcess::key).distinct()
                .filter(k -> !WorkerProcess.slotOf(k).isBefore(from)).count();
        Duration pause = Duration.between(killedAt, resumed);
        System.out.printf("%nRedlockIT: %d slots ran once across 2 masters killed and 1 restarted empty, %d reported missed; "
                + "first start %d ms after the kill (bound %d ms)%n", ran, missedInWindow, pause.toMillis(), NO_PAUSE.toMillis());
        // No pause: with a majority up, the next slot starts on time (a slot plus a claim after the kill).
        assertThat(pause).as("first start after two of five masters were killed").isLessThan(NO_PAUSE);
        cluster.assertAuditHolds();
    }

    /**
     * The negative control of the quarantine, after the Redis distlock page: a slot runs while two
     * masters are down, so its record is on exactly three; one of those restarts empty and the two
     * come back empty. A worker that was paused (SIGSTOP) through it all wakes within the slot's
     * grace and claims the slot: with the quarantine, the restarted masters do not count and it
     * cannot win; without it, it wins three empty masters and runs the slot a second time.
     */
    @ParameterizedTest(name = "quarantine on: {0}")
    @ValueSource(booleans = {true, false})
    void aLateWorkerCannotRunASlotAgainThroughMastersThatRestartedEmpty(boolean quarantine) {
        startMasters();
        // overlap: allow, so that each slot's claim stands alone (an exclusive lease held by the
        // running worker would make the late claims 'skipped' instead, hiding what is tested here).
        cluster = cluster(quarantine ? QUARANTINE : Duration.ZERO, 1, "12s", "allow");
        WorkerProcess w1 = cluster.start("w1");
        WorkerProcess late = cluster.start("late");
        cluster.awaitStarted();
        if (quarantine) {
            awaitMastersUp(QUARANTINE);
        }
        Instant running = Instant.now();
        await().atMost(Duration.ofSeconds(20)).until(() -> everyJobRanSince(1, running.plusSeconds(1)));

        late.signal("STOP");
        Instant stoppedAt = Instant.now();
        masters.get(3).kill();
        masters.get(4).kill();
        await().atMost(Duration.ofSeconds(10)).until(() -> everyJobRanSince(1, stoppedAt.plusSeconds(4)));
        masters.get(2).restart();
        masters.get(3).restart();
        masters.get(4).restart();
        Instant wokeAt = Instant.now();
        late.signal("CONT");
        if (quarantine) {
            // No majority counts for anyone: the late worker runs none of the slots it slept through and,
            // once each one's grace is over, reports it missed.
            List<String> slept = new ArrayList<>();
            for (Instant slot = stoppedAt.truncatedTo(ChronoUnit.SECONDS).plusSeconds(1); slot.isBefore(wokeAt.minusSeconds(1));
                    slot = slot.plusSeconds(1)) {
                slept.add(slot.toString());
            }
            await().atMost(Duration.ofSeconds(40)).until(() -> late.events("slot_missed").stream()
                    .map(e -> e.path("slot").asText()).toList().containsAll(slept));
            assertThat(twice()).as("with the quarantine, no slot ran twice").isEmpty();
        } else {
            await().atMost(Duration.ofSeconds(30)).until(() -> !twice().isEmpty());
            System.out.printf("%nRedlockIT negative control: without the quarantine %d slots ran twice: %s%n", twice().size(), twice());
        }
        w1.terminate();
        late.terminate();
        if (quarantine) {
            cluster.assertAuditHolds();
        } else {
            // The audit, from the workers' events alone, names what the jobs' own records show.
            Cluster.AuditRun audit = cluster.audit();
            assertThat(audit.exit()).as("audit:%n%s", audit.out()).isEqualTo(4);
            assertThat(audit.out()).contains("VIOLATION second-run")
                    .contains(twice().get(0).substring(twice().get(0).indexOf('@') + 1));
        }
    }

    private List<String> twice() {
        return runs(1).entrySet().stream().filter(e -> e.getValue() > 1).map(Map.Entry::getKey).toList();
    }
}
