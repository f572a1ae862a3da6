package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.lockstep.redis.LocalCluster;
import io.lockstep.redis.LocalRedisServer;
import io.lockstep.redis.LocalSentinel;
import io.lockstep.redis.RedisFixture;
import io.lockstep.redis.TestCertificates;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.exceptions.JedisDataException;

/**
 * Worker JVMs on Redis the way production runs it: through Sentinel while the master is SIGKILLed
 * mid-run, on a Redis Cluster while one master is SIGKILLed, and over mutual TLS as the
 * least-privilege ACL user. Every slot runs once or is reported, and work resumes after the
 * failover (the time is printed).
 */
class ProductionRedisIT {

    private static final int JOBS = 6;

    @TempDir
    Path dir;

    /**
     * With {@code waitReplicas: 1} no claim the promoted replica lacks is ever started. With one
     * replica, the promoted master then has none to acknowledge claims until the old master is back
     * as its replica: until then every slot is reported missed and none runs (the pause is printed).
     */
    @ParameterizedTest(name = "waitReplicas: {0}")
    @ValueSource(ints = {0, 1})
    void threeWorkersOnSentinelFollowAFailoverOfTheMaster(int waitReplicas) {
        try (LocalSentinel sentinel = LocalSentinel.start();
             Cluster cluster = Cluster.onRedis(dir, "redis:\n  sentinel: { master: " + LocalSentinel.MASTER_NAME + ", nodes: ["
                     + String.join(", ", sentinel.nodes()) + "] }\n  timeout: 500ms\n  waitReplicas: " + waitReplicas + "\n",
                     Cluster.perSecondJobs(JOBS, 300, "2s", "2s"))) {
            java.util.concurrent.atomic.AtomicReference<Instant> killedAt = new java.util.concurrent.atomic.AtomicReference<>();
            java.util.concurrent.atomic.AtomicReference<Instant> promotedAt = new java.util.concurrent.atomic.AtomicReference<>();
            failover(cluster, () -> {
                killedAt.set(Instant.now());
                sentinel.master().kill();
                await().atMost(Duration.ofSeconds(20)).until(() -> sentinel.currentMaster().getPort() == sentinel.replica().port());
                promotedAt.set(Instant.now());
                sentinel.master().restart(); // empty, and turned into the new master's replica by the Sentinels
            }, "Sentinel, waitReplicas: " + waitReplicas, waitReplicas == 0);
            cluster.keepLogs(Path.of("target", "it-logs", "sentinel-" + waitReplicas));
            // Each worker followed the failover: its outage after the kill ended, and it started runs
            // after the replica was promoted, which only a writable master allows. (Which master its
            // recovery event names is not asserted: on a loaded machine the Sentinels may fail over
            // again, to the restarted old master and back, while a worker's outage lasts; a CI run saw
            // a worker recover on the old master between two such failovers.)
            for (WorkerProcess w : cluster.workers) {
                assertThat(w.events("redis_recovered")).as(w + ": its outage ended")
                        .anySatisfy(e -> assertThat(WorkerProcess.ts(e)).isAfter(killedAt.get()));
                assertThat(w.events("job_started")).as(w + ": it ran slots on the promoted master")
                        .anySatisfy(e -> assertThat(WorkerProcess.ts(e)).isAfter(promotedAt.get()));
            }
        }
    }

    @Test
    void threeWorkersOnAClusterGoOnWhenOneMasterDies() {
        Assumptions.assumeTrue(LocalCluster.unavailable().isEmpty(), () -> LocalCluster.unavailable().orElse(""));
        try (LocalCluster redis = LocalCluster.start();
             Cluster cluster = Cluster.onRedis(dir, "redis:\n  cluster: { nodes: [" + String.join(", ", redis.nodes()) + "] }\n"
                     + "  timeout: 500ms\n", Cluster.perSecondJobs(JOBS, 300, "2s", "2s"))) {
            LocalRedisServer victim = redis.masters().get(0);
            failover(cluster, victim::kill, "Cluster", true);
        }
    }

    @Test
    void threeWorkersOnAClusterGoOnThroughAGracefulFailoverOfAMaster() {
        Assumptions.assumeTrue(LocalCluster.unavailable().isEmpty(), () -> LocalCluster.unavailable().orElse(""));
        try (LocalCluster redis = LocalCluster.start();
             Cluster cluster = Cluster.onRedis(dir, "redis:\n  cluster: { nodes: [" + String.join(", ", redis.nodes()) + "] }\n"
                     + "  timeout: 500ms\n", Cluster.perSecondJobs(JOBS, 300, "2s", "2s"))) {
            LocalRedisServer replica = redis.replicas().get(0);
            // the replica takes over while claims flow; a manual failover waits for it to catch up, so nothing is lost
            failover(cluster, () -> redis.failover(replica), "Cluster, CLUSTER FAILOVER", false);
            assertThat(redis.masters()).extracting(LocalRedisServer::port).contains(replica.port());
        }
    }

    /**
     * A bulkhead per master: Redis Cluster 3+3 ({@code cluster-require-full-coverage no}, so that
     * Redis itself keeps the healthy masters serving while a dead one is failed over) with
     * {@code waitReplicas: 1}; one master is
     * SIGKILLed, and its replica is promoted without a replica of its own, so that shard's claims
     * can never be acknowledged (its jobs are reported missed, by design). The jobs on the two
     * healthy masters keep running: at least 95 % of their slots in the 20 s after the kill, and no
     * slot of any job is neither run nor reported.
     */
    @Test
    void onAClusterAShardThatCannotReachWaitReplicasCostsOnlyItsOwnJobs() {
        Assumptions.assumeTrue(LocalCluster.unavailable().isEmpty(), () -> LocalCluster.unavailable().orElse(""));
        int jobs = 20;
        try (LocalCluster redis = LocalCluster.start(3, 1, "--cluster-require-full-coverage", "no");
             Cluster cluster = Cluster.onRedis(dir, "redis:\n  cluster: { nodes: [" + String.join(", ", redis.nodes()) + "] }\n"
                     + "  timeout: 500ms\n  waitReplicas: 1\n  waitTimeout: 200ms\n", Cluster.perSecondJobs(jobs, 50, "2s", "2s"))) {
            LocalRedisServer victim = redis.masters().get(0);
            java.util.Set<String> degraded = new java.util.TreeSet<>();
            try (RedisClient direct = RedisClient.create(victim.host(), victim.port())) {
                for (String job : Cluster.jobNames(jobs)) {
                    try {
                        direct.exists(io.lockstep.redis.ItKeys.clusterMarks(job));
                        degraded.add(job); // answered: the victim holds the job's keys
                    } catch (JedisDataException moved) {
                        // MOVED: another master holds them
                    }
                }
            }
            List<String> healthy = Cluster.jobNames(jobs).stream().filter(j -> !degraded.contains(j)).toList();
            assertThat(degraded).as("the victim holds some jobs, and not all").isNotEmpty().hasSizeLessThan(jobs);
            List<WorkerProcess> workers = List.of(cluster.start("w1"), cluster.start("w2"), cluster.start("w3"));
            cluster.awaitStarted();
            Instant warm = Instant.now().plusSeconds(3);
            await().atMost(Duration.ofSeconds(30)).until(() -> cluster.everyJobReached(jobs, warm));
            Instant killedAt = Instant.now();
            victim.kill();
            Instant from = killedAt.truncatedTo(ChronoUnit.SECONDS).plusSeconds(1);
            Instant to = from.plusSeconds(20);
            await().atMost(Duration.ofSeconds(60)).until(() -> healthy.stream().allMatch(job ->
                    cluster.events("job_started").stream().anyMatch(e -> e.path("job").asText().equals(job)
                            && !WorkerProcess.slot(e).isBefore(to.plusSeconds(3))))
                    || Instant.now().isAfter(to.plusSeconds(10)));
            workers.forEach(w -> assertThat(w.terminate()).isZero());

            Map<String, List<String>> starts = cluster.startsBySlot();
            long slots = 0;
            long ran = 0;
            for (String job : healthy) {
                for (Instant slot = from; slot.isBefore(to); slot = slot.plusSeconds(1)) {
                    slots++;
                    if (starts.containsKey(io.lockstep.scheduler.SlotCoverage.key(job, slot))) {
                        ran++;
                    }
                }
            }
            System.out.printf("%nProductionRedisIT[Cluster, waitReplicas 1, a shard without a replica]: %d of %d slots of the %d jobs"
                    + " on healthy masters ran in the 20 s after the kill; %d jobs on the degraded shard, %d slot_missed events%n",
                    ran, slots, healthy.size(), degraded.size(), cluster.events("slot_missed").size());
            // What became of the healthy jobs' slots that did not run, by event and reason (for a failure's diagnosis).
            Map<String, Long> why = new java.util.TreeMap<>();
            for (String name : List.of("slot_missed", "slot_skipped", "lease_lost", "tick_failed", "redis_error")) {
                cluster.events(name).stream().filter(e -> !e.has("job") || healthy.contains(e.path("job").asText()))
                        .forEach(e -> why.merge(name + ": " + e.path("reason").asText(e.path("error").asText()).replaceAll("[0-9]{3,}", "N"),
                                1L, Long::sum));
            }
            why.forEach((k, v) -> System.out.printf("  %5d %s%n", v, k.length() > 200 ? k.substring(0, 200) : k));
            cluster.keepLogs(Path.of("target", "it-logs", "cluster-bulkhead"));
            // Measured 220 of 220 (2 runs). Before the bulkhead, 25-32 %. Under Redis's default full coverage, every
            // master answers CLUSTERDOWN from the dead master's FAIL flag to its replica's promotion (about 1.1 s):
            // that window, Redis's and not the bulkhead's, cost 83-97 % here, so the servers run without it.
            assertThat((double) ran / slots).as("%d of %d slots of the jobs on healthy masters ran", ran, slots).isGreaterThanOrEqualTo(0.95);
            assertThat(cluster.silentSlots(jobs, from, to)).as("slots neither started nor reported").isEmpty();
            cluster.assertAuditHolds();
        }
    }

    /**
     * Three workers run; {@code fault} kills a master mid-run; checks once-or-reported and measures
     * the pause. {@code claimsMayBeLost}: the fault may lose the last claims (SIGKILL of a master whose
     * replica has not acknowledged them, {@code waitReplicas: 0}; GUARANTEES.md's known limit), so a
     * slot may run a second time, but only under a higher fencing token, as SentinelTest shows.
     */
    private static void failover(Cluster cluster, Runnable fault, String mode, boolean claimsMayBeLost) {
        List<WorkerProcess> workers = List.of(cluster.start("w1"), cluster.start("w2"), cluster.start("w3"));
        cluster.awaitStarted();
        await().atMost(Duration.ofSeconds(20)).until(() -> cluster.events("job_started").size() >= 3 * JOBS);
        Instant killedAt = Instant.now();
        fault.run();
        Instant faultDone = Instant.now();
        await().atMost(Duration.ofSeconds(30)).until(() -> cluster.everyJobReached(JOBS, killedAt.plusSeconds(5)));
        // Every worker follows the failover: each starts runs again, not only the first to get there
        // (with waitReplicas: 1 runs resume ~14 s after the kill, and one worker may not have had a
        // slot of its own yet when every job has).
        await().atMost(Duration.ofSeconds(30)).until(() -> workers.stream().allMatch(w -> w.events("job_started").stream()
                .anyMatch(e -> WorkerProcess.ts(e).isAfter(faultDone))));
        Instant resumed = cluster.events("job_started").stream().map(WorkerProcess::ts).filter(t -> t.isAfter(killedAt.plusMillis(500)))
                .min(Instant::compareTo).orElseThrow();
        Instant until = Instant.now();
        workers.forEach(w -> assertThat(w.terminate()).isZero());

        List<String> rerun = new ArrayList<>();
        cluster.startEventsBySlot().forEach((slot, starts) -> {
            if (starts.size() > 1 && claimsMayBeLost) {
                rerun.add(slot);
                List<Long> tokens = starts.stream().sorted(java.util.Comparator.comparing(WorkerProcess::ts))
                        .map(e -> e.path("fencing_token").asLong()).toList();
                assertThat(tokens).as("%s ran again after a lost claim: only under a higher token each time", slot)
                        .hasSize(2).isSortedAccordingTo(java.util.Comparator.naturalOrder()).doesNotHaveDuplicates();
            } else {
                assertThat(starts).as("%s ran once", slot).hasSize(1);
            }
        });
        // Every slot from before the kill to the end (each one's grace, 2 s, over) either started or was reported.
        Instant from = killedAt.truncatedTo(ChronoUnit.SECONDS).minusSeconds(1);
        Instant to = until.truncatedTo(ChronoUnit.SECONDS).minusSeconds(2);
        assertThat(cluster.silentSlots(JOBS, from, to)).as("slots in [%s, %s) neither started nor reported", from, to).isEmpty();
        System.out.printf("%nProductionRedisIT[%s]: fault at 0; first job started again %d ms later; %d slots reported missed;"
                + " %d run again under a higher token after a lost claim%n", mode, Duration.between(killedAt, resumed).toMillis(),
                cluster.events("slot_missed").size(), rerun.size());
        if (rerun.isEmpty()) {
            cluster.assertAuditHolds();
            // The control: had the failover lost a claim, its rerun would be named, at its slot alone.
            cluster.assertAuditNamesAForgedRerun(killedAt);
        } else {
            // The known limit, named from the events alone: each slot a lost claim let run again is a second-run, nothing else.
            Cluster.AuditRun audit = cluster.audit("--json");
            System.out.printf("audit after lost claims: %s%n", audit.out());
            assertThat(audit.exit()).as("audit of a failover that lost claims").isEqualTo(4);
            com.fasterxml.jackson.databind.JsonNode report = readJson(audit.out());
            java.util.Set<String> named = new java.util.TreeSet<>();
            report.path("violations").forEach(v -> {
                // The same limit can show as a contradiction: a slot that ran under a claim the failover lost, which
                // the promoted master then decided missed because a later slot had started there (reason=order).
                if (v.path("check").asText().equals("contradiction")) {
                    assertThat(v.toString()).as("a contradiction other than a lost claim's order decision").contains("reason=order");
                    return;
                }
                assertThat(v.path("check").asText()).as(v.toString()).isEqualTo("second-run");
                named.add(v.path("job").asText() + "@" + v.path("slot").asText());
            });
            assertThat(named).containsExactlyInAnyOrderElementsOf(rerun);
        }
    }

    private static com.fasterxml.jackson.databind.JsonNode readJson(String json) {
        try {
            return new com.fasterxml.jackson.databind.ObjectMapper().readTree(json);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @Test
    void aWorkerOverMutualTlsAsTheLeastPrivilegeAclUser() throws Exception {
        Assumptions.assumeTrue(TestCertificates.available(), "openssl not found: install the Debian package openssl");
        // Decided up front, from the binary the test would start: once it has TLS, any failure to
        // start the server below (a bad certificate, a port race, a wrong argument) fails the test.
        Assumptions.assumeTrue(TestCertificates.redisServerHasTls(), "the redis-server the tests start was built without TLS:"
                + " install the Debian package redis-server to run this test");
        TestCertificates certs = TestCertificates.make("lockstep-it-ca");
        int tlsPort = RedisFixture.freeLoopbackPort();
        LocalRedisServer server = LocalRedisServer.start(certs.serverArgs(tlsPort, true).toArray(new String[0]));
        try (server; RedisClient admin = RedisClient.create(server.host(), server.port())) {
            List<String> acl = new ArrayList<>(List.of("SETUSER", "worker", "reset", "on", ">worker-pw"));
            acl.addAll(io.lockstep.redis.AclTest.WORKER_RULES);
            admin.sendCommand(redis.clients.jedis.Protocol.Command.ACL, acl.toArray(new String[0]));
            String redisYaml = "redis:\n  uri: rediss://127.0.0.1:" + tlsPort + "\n  user: worker\n  password: worker-pw\n  timeout: 1s\n"
                    + "  tls: { caCert: " + certs.ca() + ", clientCert: " + certs.cert("client") + ", clientKey: " + certs.key("client") + " }\n";
            try (Cluster cluster = Cluster.onRedis(dir, redisYaml, Cluster.perSecondJobs(2, 50, "2s", "2s"))) {
                WorkerProcess w = cluster.start("secure");
                cluster.awaitStarted();
                await().atMost(Duration.ofSeconds(20)).until(() -> w.events("slot_released").size() >= 4);
                assertThat(w.terminate()).isZero();
                assertThat(w.events("slot_released")).allSatisfy(e -> assertThat(e.path("success").asBoolean()).isTrue());
                JsonNode started = w.events("worker_started").get(0);
                assertThat(started.path("lock_store").asText()).startsWith("rediss 127.0.0.1:" + tlsPort);
                cluster.assertAuditHolds();
            }
        }
    }
}
