package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The preferred claimer: each slot is claimed first by one worker (rendezvous hashing over the live
 * workers), ahead of its time; the others step aside on its word, or claim it themselves
 * {@code Preference.BACKOFF} (100 ms) after the slot when the word does not come. In steady state
 * the others do not race at all; a preferred claimer SIGSTOPped or SIGKILLed costs its slots the
 * backoff (while its heartbeat still counts it live), never the slot.
 */
class PreferredClaimerIT {

    private static final int JOBS = 30;
    /** {@code io.lockstep.scheduler.Preference.BACKOFF} and {@code AHEAD}. */
    private static final long BACKOFF_MS = 100;
    private static final long AHEAD_MS = 250;
    /** What a claim and a start may add to the backoff on a loaded 2-core machine. */
    private static final long SLACK_MS = 500;

    @TempDir
    Path dir;

    @ParameterizedTest(name = "SIG{0}")
    @ValueSource(strings = {"STOP", "KILL"})
    void aPreferredClaimerThatStopsOrDiesCostsItsSlotsTheBackoffNeverTheSlot(String signal) {
        try (Cluster cluster = new Cluster(dir, Cluster.perSecondJobs(JOBS, 0, "5s", "5s"))) {
            WorkerProcess w1 = cluster.start("w1");
            WorkerProcess w2 = cluster.start("w2");
            WorkerProcess w3 = cluster.start("w3");
            cluster.awaitStarted();

            // Steady state (every worker has heard the others' heartbeats): the others step aside.
            Instant from = Instant.now().truncatedTo(ChronoUnit.SECONDS).plusSeconds(8);
            Instant to = from.plusSeconds(4);
            await().atMost(Duration.ofSeconds(30)).until(() -> cluster.everyJobReached(JOBS, to.plusSeconds(1)));
            assertThat(cluster.slotsNeverStarted(JOBS, from, to)).isEmpty();
            long slots = JOBS * 5L;
            long contended = inWindow(cluster.events("slot_contended"), from, to).size();
            System.out.printf("preferred claimer: %d slots, %d contended claims (racing every slot would give %d)%n",
                    slots, contended, 2 * slots);
            assertThat(contended).as("claims that lost a race, of %d slots", slots).isLessThan(slots / 4);

            WorkerProcess victim = w2;
            victim.signal(signal);
            Instant at = Instant.now();
            // Slots it may have claimed ahead before the signal are a paused holder's (RecoveryIT's
            // subject); from the next whole second past AHEAD on, it claimed nothing.
            Instant first = at.plusMillis(AHEAD_MS).truncatedTo(ChronoUnit.SECONDS).plusSeconds(1);
            Instant last = first.plusSeconds(5); // well within the heartbeat ttl (10 s): still counted live
            await().atMost(Duration.ofSeconds(20)).until(() -> cluster.everyJobReached(JOBS, last.plusSeconds(1)));

            assertThat(cluster.slotsNeverStarted(JOBS, first, last)).as("no slot lost").isEmpty();
            Map<String, List<String>> starts = cluster.startsBySlot();
            List<JsonNode> started = inWindow(cluster.events("job_started"), first, last);
            assertThat(started).allSatisfy(e -> {
                assertThat(starts.get(e.path("job").asText() + "@" + e.path("slot").asText())).as("started once").hasSize(1);
                assertThat(e.path("worker").asText()).isNotEqualTo(victim.id);
            });
            List<Long> lateness = started.stream().map(e -> e.path("lateness_ms").asLong()).sorted().toList();
            long waited = lateness.stream().filter(ms -> ms >= BACKOFF_MS).count();
            System.out.printf("SIG%s of a preferred claimer: %d slots, %d waited the backoff, lateness max %d ms (backoff %d ms)%n",
                    signal, lateness.size(), waited, lateness.get(lateness.size() - 1), BACKOFF_MS);
            assertThat(waited).as("the victim's share of the slots waited the backoff").isPositive();
            assertThat(lateness.size() - waited).as("the survivors' own slots did not").isPositive();
            assertThat(lateness.get(lateness.size() - 1)).as("at most the backoff, plus a claim")
                    .isLessThanOrEqualTo(BACKOFF_MS + SLACK_MS);
            if (signal.equals("STOP")) {
                victim.signal("CONT");
            }
            for (WorkerProcess w : List.of(w1, w3)) {
                assertThat(w.terminate()).isZero();
            }
        }
    }

    private static List<JsonNode> inWindow(List<JsonNode> events, Instant from, Instant to) {
        return events.stream().filter(e -> {
            Instant slot = WorkerProcess.slot(e);
            return !slot.isBefore(from) && !slot.isAfter(to);
        }).toList();
    }
}
