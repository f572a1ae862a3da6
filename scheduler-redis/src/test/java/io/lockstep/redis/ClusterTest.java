package io.lockstep.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.lockstep.scheduler.config.RedisSettings;
import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.ClaimResult;
import io.lockstep.scheduler.lock.Completion;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.Outcome;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.Jedis;

/**
 * The provider on a real Redis Cluster (three masters, three replicas): one batch of claims for
 * jobs spread over every master goes through (script calls grouped by hash slot, never CROSSSLOT),
 * and so do renewals, completions, runs in flight, the last decided slots and the clock.
 */
class ClusterTest {

    @Test
    void batchesOfJobsOnEveryMasterAreClaimedRenewedAndCompleted() {
        Assumptions.assumeTrue(LocalCluster.unavailable().isEmpty(), () -> LocalCluster.unavailable().orElse(""));
        try (LocalCluster cluster = LocalCluster.start();
             RedisLockProvider provider = RedisLockProvider.builder().settings(new RedisSettings(
                     new RedisSettings.Cluster(cluster.nodes().subList(0, 1)), "lockstep", Duration.ofSeconds(2),
                     Optional.empty(), Optional.empty(), RedisSettings.Tls.OFF, 0, RedisSettings.DEFAULT_WAIT_TIMEOUT)).build()) {
            Instant slot = Instant.ofEpochMilli(provider.serverTimeMillis()).minusMillis(5);
            List<ClaimRequest> requests = new ArrayList<>();
            List<String> jobs = new ArrayList<>();
            for (int i = 0; i < 100; i++) {
                String job = RedisFixture.job() + "-" + i;
                jobs.add(job);
                requests.add(new ClaimRequest(new Lease(job, slot, "t" + i, Duration.ofSeconds(10), true), "w",
                        Duration.ofSeconds(10), false));
            }
            List<ClaimResult> results = provider.claim(requests);
            assertThat(results).extracting(ClaimResult::status).containsOnly(ClaimResult.Status.CLAIMED);
            for (LocalRedisServer master : cluster.masters()) {
                try (Jedis j = new Jedis(master.host(), master.port())) {
                    assertThat(j.dbSize()).as("keys on master %d", master.port()).isPositive();
                }
            }
            List<Lease> leases = requests.stream().map(ClaimRequest::lease).toList();
            assertThat(provider.renew(leases)).containsOnly(true);
            assertThat(provider.runsInFlight(jobs)).allSatisfy(r -> assertThat(r.expired()).isEmpty());
            assertThat(provider.lastSlots(jobs)).hasSize(jobs.size());
            assertThat(provider.complete(leases.stream().map(l -> new Completion(l, Outcome.SUCCEEDED)).toList())).containsOnly(true);

            // The clock is every master's (each decides its own jobs' claims by its own clock): each is read.
            List<Long> evalsBefore = cluster.masters().stream().map(ClusterTest::evalCalls).toList();
            provider.serverTimeMillis();
            List<Long> evalsAfter = cluster.masters().stream().map(ClusterTest::evalCalls).toList();
            for (int m = 0; m < evalsBefore.size(); m++) {
                assertThat(evalsAfter.get(m)).as("TIME read on master %d", m).isEqualTo(evalsBefore.get(m) + 1);
            }
        }
    }

    /** How many EVALs a server ran (INFO commandstats). */
    private static long evalCalls(LocalRedisServer server) {
        try (Jedis j = new Jedis(server.host(), server.port())) {
            return j.info("commandstats").lines().filter(l -> l.startsWith("cmdstat_eval:")).findFirst()
                    .map(l -> Long.parseLong(l.substring("cmdstat_eval:calls=".length(), l.indexOf(','))))
                    .orElse(0L);
        }
    }

    @Test
    void aGracefulFailoverOfAReplicaKeepsEveryDecisionAndClaimsGoOn() throws Exception {
        Assumptions.assumeTrue(LocalCluster.unavailable().isEmpty(), () -> LocalCluster.unavailable().orElse(""));
        try (LocalCluster cluster = LocalCluster.start();
             RedisLockProvider provider = RedisLockProvider.builder().settings(new RedisSettings(
                     new RedisSettings.Cluster(cluster.nodes().subList(0, 1)), "lockstep", Duration.ofSeconds(2),
                     Optional.empty(), Optional.empty(), RedisSettings.Tls.OFF, 0, RedisSettings.DEFAULT_WAIT_TIMEOUT)).build()) {
            List<ClaimRequest> before = requests(provider, "before", 30);
            assertThat(provider.claim(before)).extracting(ClaimResult::status).containsOnly(ClaimResult.Status.CLAIMED);
            List<LocalRedisServer> mastersBefore = cluster.masters();
            LocalRedisServer replica = cluster.replicas().get(0);
            cluster.failover(replica);
            assertThat(cluster.masters()).isNotEqualTo(mastersBefore);
            // Every decision survived: the same slots, asked by someone else, are taken.
            List<ClaimRequest> thieves = before.stream().map(r -> new ClaimRequest(new Lease(r.lease().job(), r.lease().slot(),
                    "thief", Duration.ofSeconds(10), true), "w2", Duration.ofSeconds(10), false)).toList();
            // Until the client follows the new topology, the moved shard's calls fail alone (UNANSWERED:
            // nothing done, asked again with the same token); the other shards answer meanwhile.
            List<ClaimResult> stolen = org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(20))
                    .ignoreException(io.lockstep.scheduler.lock.LockException.class).until(() -> provider.claim(thieves),
                            r -> r.stream().noneMatch(c -> c.status() == ClaimResult.Status.UNANSWERED));
            assertThat(stolen).extracting(ClaimResult::status).containsOnly(ClaimResult.Status.TAKEN);
            assertThat(provider.claim(requests(provider, "after", 30))).extracting(ClaimResult::status)
                    .containsOnly(ClaimResult.Status.CLAIMED);
        }
    }

    /**
     * A bulkhead per master: with waitReplicas 1, a master whose replica was promoted (and has
     * none of its own) cannot acknowledge anything; claims made ahead of jobs on the healthy
     * masters, in the same batches, still win, start and complete.
     */
    @Test
    void aMasterThatCannotReachWaitReplicasCostsOnlyItsOwnJobs() {
        Assumptions.assumeTrue(LocalCluster.unavailable().isEmpty(), () -> LocalCluster.unavailable().orElse(""));
        try (LocalCluster cluster = LocalCluster.start();
             RedisLockProvider provider = RedisLockProvider.builder().settings(new RedisSettings(
                     new RedisSettings.Cluster(cluster.nodes()), "lockstep", Duration.ofSeconds(2),
                     Optional.empty(), Optional.empty(), RedisSettings.Tls.OFF, 1, Duration.ofMillis(200))).build()) {
            // Which of the 30 jobs the victim holds, asked of it directly before it dies (MOVED: another master does).
            java.util.Set<String> onVictim = new java.util.HashSet<>();
            LocalRedisServer victim = cluster.masters().get(0);
            try (Jedis direct = new Jedis(victim.host(), victim.port())) {
                for (int i = 0; i < 30; i++) {
                    try {
                        direct.exists(new RedisKeys("lockstep", true).marks("ahead-" + i));
                        onVictim.add("ahead-" + i);
                    } catch (redis.clients.jedis.exceptions.JedisMovedDataException moved) {
                        // another master's
                    }
                }
            }
            assertThat(onVictim).as("the victim holds some of the jobs, and not all").isNotEmpty().hasSizeLessThan(30);
            victim.kill();
            // Once the failover is done, every call is answered: the promoted master's claims unconfirmed.
            List<ClaimResult> settled = org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(30))
                    .ignoreException(io.lockstep.scheduler.lock.LockException.class).until(() -> provider.claim(requests(provider,
                            "settle-" + System.nanoTime(), 30)), r -> r.stream().noneMatch(c -> c.status() == ClaimResult.Status.UNANSWERED));
            assertThat(settled).extracting(ClaimResult::status).contains(ClaimResult.Status.UNCONFIRMED, ClaimResult.Status.CLAIMED);
            Instant slot = Instant.ofEpochMilli(provider.serverTimeMillis()).plusSeconds(2);
            List<ClaimRequest> ahead = new ArrayList<>();
            for (int i = 0; i < 30; i++) {
                ahead.add(new ClaimRequest(new Lease("ahead-" + i, slot, "a" + i, Duration.ofSeconds(10), true), "w",
                        Duration.ofSeconds(10), ClaimRequest.Mode.CLAIM, false, false, Duration.ofSeconds(5)));
            }
            List<ClaimResult> claimed = provider.claim(ahead);
            List<io.lockstep.scheduler.lock.StartRequest> starts = new ArrayList<>();
            for (int i = 0; i < ahead.size(); i++) {
                if (claimed.get(i).status() == ClaimResult.Status.CLAIMED) {
                    starts.add(new io.lockstep.scheduler.lock.StartRequest(ahead.get(i).lease(), Duration.ofSeconds(10)));
                }
            }
            for (int i = 0; i < ahead.size(); i++) {
                String job = ahead.get(i).lease().job();
                assertThat(claimed.get(i).status()).as("the claim of %s, %s", job, onVictim.contains(job) ? "on the promoted master" : "on a healthy master")
                        .isEqualTo(onVictim.contains(job) ? ClaimResult.Status.UNCONFIRMED : ClaimResult.Status.CLAIMED);
            }
            assertThat(starts).as("claims on the healthy masters won").hasSize(30 - onVictim.size());
            assertThat(provider.start(starts)).extracting(io.lockstep.scheduler.lock.StartReply::answer).as("and start").containsOnly(io.lockstep.scheduler.lock.StartAnswer.STARTED);
            assertThat(provider.complete(starts.stream().map(s -> new io.lockstep.scheduler.lock.Completion(s.lease(),
                    io.lockstep.scheduler.lock.Outcome.SUCCEEDED)).toList())).containsOnly(true);
        }
    }

    /**
     * A bulkhead for the peers that stepped aside: with one master dead (before any failover),
     * {@code slotStates} still answers: the healthy masters' slots as their marks say, the dead
     * one's as unknown ({@code NONE}: claim them, and the claim meets the dead master). It threw
     * before (Jedis leaves a dead node's pipelined replies unset), and one dead shard then failed
     * every worker's whole tick.
     */
    @Test
    void aDeadMasterLeavesTheOtherMastersSlotStatesReadable() {
        Assumptions.assumeTrue(LocalCluster.unavailable().isEmpty(), () -> LocalCluster.unavailable().orElse(""));
        try (LocalCluster cluster = LocalCluster.start();
             RedisLockProvider provider = RedisLockProvider.builder().settings(new RedisSettings(
                     new RedisSettings.Cluster(cluster.nodes()), "lockstep", Duration.ofSeconds(2),
                     Optional.empty(), Optional.empty(), RedisSettings.Tls.OFF, 0, Duration.ofMillis(200))).build()) {
            List<ClaimRequest> done = requests(provider, "states", 30);
            List<ClaimResult> claimed = provider.claim(done);
            assertThat(claimed).extracting(ClaimResult::status).containsOnly(ClaimResult.Status.CLAIMED);
            assertThat(provider.complete(done.stream().map(r -> new io.lockstep.scheduler.lock.Completion(r.lease(),
                    io.lockstep.scheduler.lock.Outcome.SUCCEEDED)).toList())).containsOnly(true);
            List<io.lockstep.scheduler.lock.SlotState.Ref> refs = done.stream()
                    .map(r -> new io.lockstep.scheduler.lock.SlotState.Ref(r.lease().job(), r.lease().slot())).toList();
            assertThat(provider.slotStates(refs)).extracting(io.lockstep.scheduler.lock.SlotState::kind)
                    .containsOnly(io.lockstep.scheduler.lock.SlotState.Kind.DECIDED);

            cluster.masters().get(0).kill();
            List<io.lockstep.scheduler.lock.SlotState.Kind> kinds = provider.slotStates(refs).stream()
                    .map(io.lockstep.scheduler.lock.SlotState::kind).toList();
            assertThat(kinds).as("the healthy masters' slots, decided").contains(io.lockstep.scheduler.lock.SlotState.Kind.DECIDED);
            assertThat(kinds).as("the dead master's, unknown: claimed").contains(io.lockstep.scheduler.lock.SlotState.Kind.NONE);
            assertThat(kinds).containsOnly(io.lockstep.scheduler.lock.SlotState.Kind.DECIDED, io.lockstep.scheduler.lock.SlotState.Kind.NONE);
        }
    }

    private static List<ClaimRequest> requests(RedisLockProvider provider, String name, int jobs) {
        Instant slot = Instant.ofEpochMilli(provider.serverTimeMillis()).minusMillis(5);
        List<ClaimRequest> requests = new ArrayList<>();
        for (int i = 0; i < jobs; i++) {
            requests.add(new ClaimRequest(new Lease(name + "-" + i, slot, "t" + i, Duration.ofSeconds(10), true), "w",
                    Duration.ofSeconds(10), false));
        }
        return requests;
    }
}
