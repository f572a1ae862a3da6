package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Claims made ahead. A claim the store decides more than {@code ClaimRequest.START_WINDOW} (65 ms)
 * before its slot is staged: a worker that dies or stalls between claiming a slot ahead and starting
 * it never strands the slot. With the defaults' shape ({@code overlap: skip}, {@code recover: none},
 * a lease far longer than a slot), a peer runs every slot whose run never started, once, within its
 * grace, and no later slot of the job is skipped for the dead claim's lease; a worker stalled past
 * the grace after claiming ahead never starts the slot late. Workers claim 50 ms ahead by default,
 * inside the window, so their claims are the runs' starts; these tests make the victims claim 250 ms
 * ahead ({@code -Dlockstep.claimLeadMillis=250}) to stage them. A claim inside the window is the
 * run's start: a worker killed after it costs the slot as a kill mid-run does (the last test).
 */
class ClaimAheadIT {

    private static final int JOBS = 12;
    private static final long GRACE_MS = 5_000;
    private static final String JOBS_YAML = Cluster.perSecondJobs(JOBS, 50, "20s", "5s");
    /** Claims sent 250 ms ahead: decided before the start window, so staged. */
    private static final String STAGE = "-Dlockstep.claimLeadMillis=250";

    @TempDir
    Path dir;

    /**
     * SIGKILL a worker 100-150 ms before a whole second, three times (a new worker replaces each
     * victim): the victim's claims made ahead for that second never started, and each of those
     * slots runs once on a peer within its grace.
     */
    @Test
    void aWorkerKilledJustBeforeASlotStrandsNoneOfTheSlotsItClaimedAhead() {
        try (Cluster cluster = new Cluster(dir, JOBS_YAML)) {
            cluster.start("w1", STAGE);
            cluster.start("w2", STAGE);
            cluster.start("w3", STAGE);
            cluster.awaitStarted();
            int stranded = 0;
            List<Instant> kills = new ArrayList<>();
            for (int round = 0; round < 3; round++) {
                // Steady state: every live worker has heard the others (heartbeats every 3 s).
                Instant settled = Instant.now().plusSeconds(4);
                await().atMost(Duration.ofSeconds(30)).until(() -> cluster.everyJobReached(JOBS, settled));
                WorkerProcess victim = liveWorkers(cluster).get(round % 3);
                Instant slot = Instant.now().truncatedTo(ChronoUnit.SECONDS).plusSeconds(2);
                long before = 100 + (round * 25) % 50; // 100, 125, 100 ms before the slot
                Cluster.sleepUntil(slot.minusMillis(before));
                victim.signal("KILL");
                Instant killedAt = Instant.now();
                kills.add(killedAt);
                victim.waitForExit();
                // The slots the victim had claimed ahead and never started (its last events say so).
                final WorkerProcess dead = victim;
                List<String> claimedAhead = dead.events("slot_claimed").stream()
                        .filter(e -> e.has("ahead_ms") && WorkerProcess.slot(e).isAfter(killedAt.minusMillis(1)))
                        .map(WorkerProcess::key).toList();
                stranded += claimedAhead.size();
                cluster.start("w" + (4 + round), STAGE);
                Instant to = slot.plusSeconds(3);
                await().atMost(Duration.ofSeconds(30)).until(() -> cluster.everyJobReached(JOBS, to.plusSeconds(1)));
                Map<String, List<JsonNode>> starts = cluster.startEventsBySlot();
                for (String key : claimedAhead) {
                    assertThat(starts.get(key)).as("%s, claimed ahead by %s killed %d ms before it", key, dead.id, before).hasSize(1)
                            .allSatisfy(e -> assertThat(e.path("lateness_ms").asLong()).as("within the grace").isLessThan(GRACE_MS));
                }
                assertThat(cluster.slotsNeverStarted(JOBS, slot, to)).as("every slot from the kill on ran").isEmpty();
            }
            Instant from = kills.get(0).truncatedTo(ChronoUnit.SECONDS);
            Instant to = kills.get(kills.size() - 1).truncatedTo(ChronoUnit.SECONDS).plusSeconds(3);
            assertThat(cluster.events("slot_skipped")).as("no job skipped for a dead claim's lease").isEmpty();
            assertThat(cluster.events("slot_abandoned")).as("nothing abandoned: no run that started died").isEmpty();
            Map<String, List<JsonNode>> starts = cluster.startEventsBySlot();
            assertThat(starts).allSatisfy((key, runs) -> assertThat(runs).as(key).hasSize(1));
            assertThat(cluster.silentSlots(JOBS, from, to)).isEmpty();
            assertThat(stranded).as("the victims had claimed slots ahead when they were killed (else this proves nothing)").isPositive();
            System.out.printf("%nClaimAheadIT: 3 workers killed 100-150 ms before a slot; %d slots they had claimed ahead each ran"
                    + " once on a peer%n", stranded);
            cluster.assertAuditHolds();
        }
    }

    /**
     * SIGSTOP a worker right after it claimed slots ahead, for longer than the grace: when it
     * resumes it starts none of them late (the store's start refuses: a peer took the slot over, or
     * the grace passed), and every slot ran once.
     */
    @Test
    void aWorkerStalledPastTheGraceAfterClaimingAheadNeverStartsTheSlotLate() {
        try (Cluster cluster = new Cluster(dir, JOBS_YAML)) {
            WorkerProcess victim = cluster.start("w1", STAGE);
            cluster.start("w2", STAGE);
            cluster.start("w3", STAGE);
            cluster.awaitStarted();
            Instant settled = Instant.now().plusSeconds(4);
            await().atMost(Duration.ofSeconds(30)).until(() -> cluster.everyJobReached(JOBS, settled));
            // Stop the victim after its claims ahead (250 ms before a slot) and before the start. Its
            // events are written synchronously, so what it logged before the stop is in its log: a
            // round in which it had claimed nothing ahead for that slot (it lost every race, or it
            // was late on a busy machine) is let go at once and tried again at the next slot, up to 5.
            List<String> claimedAhead = List.of();
            Instant slot = null;
            Instant stoppedAt = null;
            for (int round = 0; round < 5 && claimedAhead.isEmpty(); round++) {
                slot = Instant.now().truncatedTo(ChronoUnit.SECONDS).plusSeconds(2);
                Cluster.sleepUntil(slot.minusMillis(150));
                victim.signal("STOP");
                stoppedAt = Instant.now();
                Instant at = slot;
                claimedAhead = victim.events("slot_claimed").stream()
                        .filter(e -> e.has("ahead_ms") && WorkerProcess.slot(e).equals(at))
                        .map(WorkerProcess::key).toList();
                if (claimedAhead.isEmpty()) {
                    victim.signal("CONT");
                }
            }
            assertThat(claimedAhead).as("the victim had claimed slots ahead when it stopped (else this proves nothing)").isNotEmpty();
            Cluster.sleepUntil(stoppedAt.plusMillis(GRACE_MS + 2_000));
            victim.signal("CONT");
            Instant to = Instant.now().truncatedTo(ChronoUnit.SECONDS).plusSeconds(3);
            await().atMost(Duration.ofSeconds(30)).until(() -> cluster.everyJobReached(JOBS, to.plusSeconds(1)));
            assertThat(cluster.events("job_started")).as("no run started later than the grace")
                    .allSatisfy(e -> assertThat(e.path("lateness_ms").asLong()).as(WorkerProcess.key(e)).isLessThan(GRACE_MS));
            Map<String, List<JsonNode>> starts = cluster.startEventsBySlot();
            for (String key : claimedAhead) {
                assertThat(starts.get(key)).as("%s, claimed ahead by the stalled worker", key).hasSize(1)
                        .allSatisfy(e -> assertThat(e.path("worker").asText()).isNotEqualTo(victim.id));
            }
            assertThat(starts).allSatisfy((key, runs) -> assertThat(runs).as(key).hasSize(1));
            assertThat(cluster.silentSlots(JOBS, slot, to)).isEmpty();
            System.out.printf("%nClaimAheadIT: a worker stalled %d ms after claiming %d slots ahead started none of them;"
                    + " peers ran each once%n", GRACE_MS + 2_000, claimedAhead.size());
            cluster.assertAuditHolds();
        }
    }

    /**
     * The default lead: a worker claims its slots 50 ms ahead, inside the start window, so each claim
     * is its run's start and the slot costs two calls. SIGKILL a worker after such claims and before
     * their slot: those slots cost what a kill mid-run costs under {@code recover: none}, each
     * reported {@code slot_abandoned} once by a peer when its lease (3 s here) runs out, never run by
     * a peer, never twice, never silent; every other slot runs. (Kills land at 25 ms before a whole
     * second; a round in which the victim's claims had not landed yet is tried again, up to 5.)
     */
    @Test
    void aWorkerKilledAfterClaimsInsideTheStartWindowCostsThoseSlotsAsAKillMidRun() {
        try (Cluster cluster = new Cluster(dir, Cluster.perSecondJobs(JOBS, 50, "3s", "5s"))) {
            cluster.start("w1");
            cluster.start("w2");
            cluster.start("w3");
            cluster.awaitStarted();
            List<String> claimedAhead = List.of();
            WorkerProcess victim = null;
            Instant slot = null;
            for (int round = 0; round < 5 && claimedAhead.isEmpty(); round++) {
                Instant settled = Instant.now().plusSeconds(4);
                await().atMost(Duration.ofSeconds(30)).until(() -> cluster.everyJobReached(JOBS, settled));
                victim = liveWorkers(cluster).get(0);
                slot = Instant.now().truncatedTo(ChronoUnit.SECONDS).plusSeconds(2);
                Cluster.sleepUntil(slot.minusMillis(25));
                victim.signal("KILL");
                victim.waitForExit();
                Instant at = slot;
                claimedAhead = victim.events("slot_claimed").stream()
                        .filter(e -> e.has("ahead_ms") && !e.path("staged").asBoolean() && WorkerProcess.slot(e).equals(at))
                        .map(WorkerProcess::key).toList();
                cluster.start("w" + (4 + round));
            }
            assertThat(claimedAhead).as("the victim had claimed slots inside the window when it was killed (else this proves nothing)")
                    .isNotEmpty();
            List<String> lost = claimedAhead;
            Instant to = slot.plusSeconds(6);
            await().atMost(Duration.ofSeconds(30)).until(() -> cluster.everyJobReached(JOBS, to.plusSeconds(1))
                    && cluster.events("slot_abandoned").stream().map(WorkerProcess::key).toList().containsAll(lost));
            Map<String, List<JsonNode>> starts = cluster.startEventsBySlot();
            String victimId = victim.id;
            for (String key : claimedAhead) {
                // Its claim was its start: nobody else runs it (recover: none). The victim itself may have begun it
                // when the kill, sent 25 ms ahead, landed after the slot on a busy machine (seen in CI: a start at
                // +10 ms): then it is a kill mid-run, which costs the slot the same way.
                assertThat(starts.getOrDefault(key, List.of())).as("%s: its claim was its start; recover: none does not run it again", key)
                        .allSatisfy(e -> assertThat(e.path("worker").asText()).isEqualTo(victimId));
                assertThat(cluster.events("slot_abandoned").stream().map(WorkerProcess::key).filter(key::equals)).as(key).hasSize(1);
            }
            assertThat(starts).allSatisfy((key, runs) -> assertThat(runs).as(key).hasSize(1));
            assertThat(cluster.silentSlots(JOBS, slot.minusSeconds(2), to)).isEmpty();
            System.out.printf("%nClaimAheadIT: a worker killed 25 ms before a slot after claiming %d slots inside the start window;"
                    + " each reported abandoned once, none run by a peer%n", claimedAhead.size());
            cluster.assertAuditHolds();
        }
    }

    /** The workers still running, in the order they were started. */
    private static List<WorkerProcess> liveWorkers(Cluster cluster) {
        return cluster.workers.stream().filter(WorkerProcess::isAlive).toList();
    }
}
