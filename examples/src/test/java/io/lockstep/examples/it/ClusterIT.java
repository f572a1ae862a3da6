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
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Three worker JVMs, twenty jobs firing every second, thirty seconds: every slot exactly once. */
class ClusterIT {

    private static final int JOBS = 20;
    private static final Duration WINDOW = Duration.ofSeconds(30);

    @TempDir
    Path dir;

    @Test
    void threeWorkersRunEverySlotOfTwentyPerSecondJobsExactlyOnce() {
        try (Cluster cluster = new Cluster(dir, Cluster.perSecondJobs(JOBS, 50, "5s", "2s"))) {
            Map<String, Long> before = cluster.commandStats();
            for (String id : List.of("w1", "w2", "w3")) {
                cluster.start(id);
            }
            cluster.awaitStarted();
            Instant lastStart = cluster.events("worker_started").stream().map(WorkerProcess::ts).max(Instant::compareTo).orElseThrow();
            Instant from = lastStart.truncatedTo(ChronoUnit.SECONDS).plusSeconds(2);
            Instant to = from.plus(WINDOW);
            await().atMost(WINDOW.plusSeconds(20)).until(() -> cluster.everyJobReached(JOBS, to.plusSeconds(1)));
            for (WorkerProcess w : cluster.workers) {
                assertThat(w.terminate()).as("exit code of %s after SIGTERM", w.id).isZero();
            }
            Map<String, Long> after = cluster.commandStats();

            Map<String, List<String>> starts = cluster.startsBySlot();
            assertThat(starts.values()).as("no slot started twice").allSatisfy(ws -> assertThat(ws).hasSize(1));
            Map<String, Integer> perWorker = new TreeMap<>();
            starts.forEach((key, ws) -> {
                Instant slot = Instant.parse(key.substring(key.indexOf('@') + 1));
                if (!slot.isBefore(from) && !slot.isAfter(to)) {
                    ws.forEach(w -> perWorker.merge(w, 1, Integer::sum));
                }
            });
            assertThat(cluster.slotsNeverStarted(JOBS, from, to)).as("slots in the window that never ran").isEmpty();
            assertThat(perWorker).as("runs per worker").hasSizeGreaterThan(1);
            assertThat(cluster.events("slot_missed")).isEmpty();
            assertThat(cluster.events("worker_stopped")).hasSize(3);

            report(cluster, before, after, perWorker, from, to);
        }
    }

    /** Prints the figures the closing note quotes: lateness and Redis commands per fired slot. */
    private static void report(Cluster cluster, Map<String, Long> before, Map<String, Long> after,
            Map<String, Integer> perWorker, Instant from, Instant to) {
        List<Long> lateness = cluster.events("job_started").stream().map(e -> e.path("lateness_ms").asLong()).sorted().toList();
        long fired = cluster.events("job_started").size();
        Map<String, Long> delta = new TreeMap<>();
        after.forEach((k, v) -> delta.put(k, v - before.getOrDefault(k, 0L)));
        delta.remove("info");
        delta.values().removeIf(v -> v == 0);
        long total = delta.values().stream().mapToLong(Long::longValue).sum();
        Set<String> scripted = Set.of("evalsha", "eval");
        long roundTripCommands = delta.entrySet().stream().filter(e -> scripted.contains(e.getKey()) || e.getKey().equals("ping"))
                .mapToLong(Map.Entry::getValue).sum();
        System.out.printf("%nClusterIT figures (%s .. %s)%n", from, to);
        System.out.printf("  runs per worker in window: %s%n", perWorker);
        System.out.printf("  job_started lateness ms over %d starts: p50=%d p99=%d max=%d%n", lateness.size(),
                percentile(lateness, 50), percentile(lateness, 99), lateness.get(lateness.size() - 1));
        System.out.printf("  redis commands (commandstats delta, all commands incl. those inside scripts): %s%n", delta);
        System.out.printf("  per fired slot: %.2f commands in all, %.2f scripts/pings sent by workers%n",
                (double) total / fired, (double) roundTripCommands / fired);
        List<JsonNode> claimed = cluster.events("slot_claimed");
        List<Long> claimLateness = claimed.stream().map(e -> e.path("lateness_ms").asLong()).sorted().toList();
        System.out.printf("  claim decided after the slot (Redis TIME) ms: p50=%d p99=%d max=%d%n",
                percentile(claimLateness, 50), percentile(claimLateness, 99), claimLateness.get(claimLateness.size() - 1));
        System.out.printf("  claims won: %d, contended: %d%n", claimed.size(), cluster.events("slot_contended").size());
        System.out.println("  by worker: " + claimed.stream().collect(Collectors.groupingBy(e -> e.path("worker").asText(), TreeMap::new, Collectors.counting())));
    }

    private static long percentile(List<Long> sorted, int p) {
        int index = (int) Math.ceil(p / 100.0 * sorted.size()) - 1;
        return sorted.get(Math.max(0, Math.min(sorted.size() - 1, index)));
    }
}
