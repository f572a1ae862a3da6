package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.lockstep.examples.cli.CliRun;
import io.lockstep.redis.LocalRedisServer;
import io.lockstep.redis.LocalRedlock;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Redlock keeps going (issue 20), with worker JVMs on 5 real masters: a new set of masters runs
 * from its first slot (no quarantine to wait out); a {@code resume} that missed two stopped masters
 * is repaired by the heartbeat, so one more master stalled later (SIGSTOP) splits nothing (at least 4 of the 5
 * slots after it run, each once, and the audit finds none silent: before the repair, 2 paused
 * against 2, none would run); a rolling restart of every master, declared durable, costs no slot;
 * a run killed with one master down is rerun (its rerun starts, under a higher token).
 */
class RedlockLivenessIT {

    private static final int JOBS = 3;

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

    /** The 5 masters (the default quarantine: the longest record ttl, minutes), and per-second jobs plus a long one. */
    private Cluster cluster(List<String> durable) {
        StringBuilder yaml = new StringBuilder("redis:\n  redlock:\n    nodes: [").append(String.join(", ", redlock.names()))
                .append("]\n    nodeTimeout: 200ms\n");
        if (!durable.isEmpty()) {
            yaml.append("    durable: [").append(String.join(", ", durable)).append("]\n");
        }
        yaml.append("  timeout: 1s\n");
        StringBuilder jobs = new StringBuilder("defaults:\n  lease: 2s\n  misfireGrace: 3s\njobs:\n");
        for (int j = 0; j < JOBS; j++) {
            jobs.append(String.format("  - { name: job-%02d, cron: \"* * * * * *\", class: io.lockstep.examples.HeartbeatJob,"
                    + " params: { workMillis: 50 } }%n", j));
        }
        jobs.append("  - { name: long, cron: \"*/10 * * * * *\", class: io.lockstep.examples.HeartbeatJob, params: { workMillis: 6000 },"
                + " recover: rerun, overlap: allow }\n"); // the next slot's run never holds the lease against the rerun
        return Cluster.onRedis(dir, yaml.toString(), jobs.toString());
    }

    /**
     * Each slot started once, or again only as a rerun (its {@code job_started} says {@code rerun}:
     * a run whose lease was lost while masters restarted, recovered under {@code recover: rerun});
     * the audit then checks that each rerun was decided once the first run's lease had ended.
     */
    private void assertOncePerSlotOrRerun() {
        cluster.startEventsBySlot().forEach((slot, starts) -> assertThat(starts.subList(1, starts.size()))
                .as("%s started %d times: %s", slot, starts.size(), starts).allSatisfy(e -> assertThat(e.path("rerun").asBoolean()).isTrue()));
    }

    private long started(String job, Instant from, Instant to) {
        return cluster.events("job_started").stream().filter(e -> e.path("job").asText().equals(job))
                .map(WorkerProcess::slot).filter(s -> !s.isBefore(from) && s.isBefore(to)).distinct().count();
    }

    private CliRun cli(String... args) {
        List<String> all = new ArrayList<>(List.of(args));
        all.addAll(List.of("--config", cluster.config.toString()));
        return CliRun.of(all.toArray(String[]::new));
    }

    @Test
    void aNewSetOfMastersRunsAtOnceAndAResumeThatMissedTwoMastersIsRepaired() throws Exception {
        redlock = new LocalRedlock(5); // just started: every master is within the restart quarantine
        cluster = cluster(List.of());
        Instant launched = Instant.now();
        cluster.start("w1");
        cluster.start("w2");
        cluster.start("w3");
        cluster.awaitStarted();
        JsonNode first = await().atMost(Duration.ofSeconds(30)).until(() -> cluster.events("job_started").stream().findFirst(),
                java.util.Optional::isPresent).orElseThrow();
        Duration firstRun = Duration.between(launched, WorkerProcess.ts(first));
        assertThat(cluster.events("redlock_new_deployment")).as("the first start marked the new set").isNotEmpty();

        // pause, then a resume while masters 3 and 4 are stopped: it reaches 0, 1 and 2 only.
        assertThat(cli("pause", "--job", "job-00").exit()).isZero();
        redlock.servers.get(3).pause();
        redlock.servers.get(4).pause();
        CliRun resume;
        try {
            resume = cli("resume", "--job", "job-00");
        } finally {
            redlock.servers.get(3).resume();
            redlock.servers.get(4).resume();
        }
        assertThat(resume.exit()).as(resume.err()).isZero();
        Instant back = Instant.now();
        JsonNode repaired = await().atMost(Duration.ofSeconds(15)).until(() -> cluster.events("redlock_repaired").stream()
                .filter(e -> e.path("jobs").asText().contains("job-00")).findFirst(), java.util.Optional::isPresent).orElseThrow();
        Duration repair = Duration.between(back, WorkerProcess.ts(repaired));
        // After the repair the five masters agree: job-00 is listed, not paused, with no disagreement
        // (RedlockStoreTest shows the field reads "paused on 2 of the 5 masters" before a repair).
        CliRun status = cli("status", "--json");
        assertThat(status.exit()).as(status.err()).isZero();
        JsonNode job00 = java.util.stream.StreamSupport.stream(new com.fasterxml.jackson.databind.ObjectMapper().readTree(status.out())
                .path("jobs").spliterator(), false).filter(j -> j.path("name").asText().equals("job-00")).findFirst().orElseThrow();
        assertThat(job00.path("paused").isNull()).as("job-00 resumed on every master: %s", job00).isTrue();
        assertThat(job00.has("mastersDisagree")).as("the masters disagree on job-00 after the repair: %s", job00).isFalse();

        // One more master down (killed: the case; a SIGSTOPped master, whose every call waits out
        // nodeTimeout, is a liveness question of its own, left to the Redlock work of issue 23): the four
        // that answer agree the job runs (before the repair, 2 paused against 2: no slot ran).
        redlock.servers.get(0).pause(); // stalled, not dead: left out after two fan-outs that waited for it (issue 37)
        Instant from = Instant.now().truncatedTo(ChronoUnit.SECONDS).plusSeconds(2);
        Instant to = from.plusSeconds(5);
        await().atMost(Duration.ofSeconds(20)).until(() -> cluster.events("job_started").stream()
                .anyMatch(e -> e.path("job").asText().equals("job-00") && !WorkerProcess.slot(e).isBefore(to)));
        long ran = started("job-00", from, to);
        System.out.printf("%nRedlockLivenessIT: new masters: first run %d ms after the workers were launched; resume that missed 2 "
                + "masters repaired %d ms after they were back; with 1 master stalled after it, job-00 ran %d of 5 slots%n",
                firstRun.toMillis(), repair.toMillis(), ran);
        assertThat(firstRun).as("new masters: no quarantine to wait out (the default is minutes)").isLessThan(Duration.ofSeconds(20));
        // The four masters that answer agree the job runs: before the repair, 2 paused against 2,
        // and none of the 5 slots ran.
        // What became of job-00's slots in the window, for a failure's diagnosis (CI once saw 3 of 5).
        StringBuilder fate = new StringBuilder();
        for (String name : List.of("slot_claimed", "slot_contended", "slot_skipped", "slot_missed", "job_started", "slot_released",
                "lease_lost", "redis_error", "quorum_lost", "node_left_out")) {
            cluster.events(name).stream().filter(e -> !e.has("job") || e.path("job").asText().equals("job-00"))
                    .filter(e -> !e.has("slot") || (!WorkerProcess.slot(e).isBefore(from) && WorkerProcess.slot(e).isBefore(to)))
                    .filter(e -> e.has("slot") || !WorkerProcess.ts(e).isBefore(from.minusSeconds(2)))
                    .forEach(e -> fate.append("\n  ").append(e));
        }
        assertThat(ran).as("slots of the resumed job with one master down; its events:%s", fate).isGreaterThanOrEqualTo(4);
        assertThat(cluster.startsBySlot()).as("each slot once").allSatisfy((slot, workers) -> assertThat(workers).as(slot).hasSize(1));
        cluster.assertAuditHolds();
    }

    @Test
    void aRollingRestartOfDurableMastersCostsNoSlotAndARunKilledWithAMasterDownIsRerun() {
        List<LocalRedisServer> started = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            started.add(LocalRedisServer.start("--appendonly", "yes", "--appendfsync", "always"));
        }
        redlock = new LocalRedlock(started);
        cluster = cluster(redlock.names());
        cluster.start("w1");
        cluster.start("w2");
        cluster.start("w3");
        cluster.awaitStarted();
        await().atMost(Duration.ofSeconds(30)).until(() -> !cluster.events("job_started").isEmpty());

        // Every master in turn: SIGKILL, up again from its AOF, and the next once every job has run a
        // slot since (what an operator watching the cluster would wait for).
        Instant from = Instant.now().truncatedTo(ChronoUnit.SECONDS).plusSeconds(1);
        Instant rollStart = Instant.now();
        for (LocalRedisServer master : redlock.servers) {
            master.restart();
            Instant after = Instant.now().truncatedTo(ChronoUnit.SECONDS).plusSeconds(1);
            await().atMost(Duration.ofSeconds(20)).until(() -> java.util.stream.IntStream.range(0, JOBS)
                    .allMatch(j -> started(String.format("job-%02d", j), after, after.plusSeconds(3600)) > 0));
        }
        Duration roll = Duration.between(rollStart, Instant.now());
        Instant to = Instant.now().truncatedTo(ChronoUnit.SECONDS).plusSeconds(2);
        await().atMost(Duration.ofSeconds(20)).until(() -> cluster.events("job_started").stream()
                .anyMatch(e -> e.path("job").asText().equals("job-00") && !WorkerProcess.slot(e).isBefore(to)));
        long slots = 0;
        long ran = 0;
        for (int j = 0; j < JOBS; j++) {
            slots += Duration.between(from, to).toSeconds();
            ran += started(String.format("job-%02d", j), from, to);
        }
        assertOncePerSlotOrRerun();

        // A master down, then the worker running the long job is killed mid-run: a peer reruns it.
        redlock.servers.get(4).pause();
        try {
            JsonNode longRun = await().atMost(Duration.ofSeconds(30)).until(() -> cluster.events("job_started").stream()
                    .filter(e -> e.path("job").asText().equals("long") && WorkerProcess.ts(e).isAfter(Instant.now().minusSeconds(3)))
                    .reduce((a, b) -> b), java.util.Optional::isPresent).orElseThrow(); // still running (6 s): killed mid-run
            WorkerProcess holder = cluster.workers.stream().filter(w -> w.id.equals(longRun.path("worker").asText())).findFirst().orElseThrow();
            holder.signal("KILL");
            Instant killed = Instant.now();
            JsonNode recovered = await().atMost(Duration.ofSeconds(20)).until(() -> cluster.events("slot_recovered").stream()
                    .filter(e -> WorkerProcess.same(e, longRun) && WorkerProcess.ts(e).isAfter(WorkerProcess.ts(longRun)))
                    .findFirst(), java.util.Optional::isPresent).orElseThrow(); // the long run may itself be a recovery (a claim never started during the roll)
            Duration rerun = Duration.between(killed, WorkerProcess.ts(recovered));
            System.out.printf("%nRedlockLivenessIT: rolling restart of 5 durable masters in %d ms: %d of %d slots ran, each once; "
                    + "a run killed with 1 master down rerun %d ms after the kill (lease 2 s)%n", roll.toMillis(), ran, slots, rerun.toMillis());
            assertThat(recovered.path("fencing_token").asLong()).isGreaterThan(longRun.path("fencing_token").asLong());
            await().atMost(Duration.ofSeconds(20)).until(() -> cluster.events("job_started").stream()
                    .anyMatch(e -> WorkerProcess.same(e, longRun) && e.path("fencing_token").asLong() == recovered.path("fencing_token").asLong()));
        } finally {
            redlock.servers.get(4).resume();
        }
        assertThat(ran).as("slots run through a rolling restart of durable masters").isEqualTo(slots);
        cluster.assertAuditHolds(); // the killed holder is flagged, its run's rerun passes
    }
}
