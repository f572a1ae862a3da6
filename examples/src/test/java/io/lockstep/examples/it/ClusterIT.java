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
    void threeWorkersRunEverySlotOfTwentyPerSecondJobsExactlyOnce() throws java.io.IOException {
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
            cluster.assertAuditHolds();
            negativeControl(cluster, from);
        }
    }

    /**
     * The audit's negative control: the same events with one run duplicated (a copy of a start on
     * another worker under the next token), one event dropped (a start), and two starts' tokens
     * swapped. The audit must name each, at its slot, and nothing else.
     */
    private void negativeControl(Cluster cluster, Instant from) throws java.io.IOException {
        com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
        List<String> lines = new java.util.ArrayList<>();
        for (WorkerProcess w : cluster.workers) {
            lines.addAll(java.nio.file.Files.readAllLines(w.log()));
        }
        // job-05's starts in the window, by slot: tamper with the 12th, 17th and 22nd/23rd (the audit's
        // default window begins misfireGrace + 5 s after the first event, a few seconds into the test's).
        List<Integer> starts = new java.util.ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            if (line.contains("\"event\":\"job_started\"") && line.contains("\"job\":\"job-05\"")
                    && !Instant.parse(json.readTree(line).path("slot").asText()).isBefore(from)) {
                starts.add(i);
            }
        }
        starts.sort(java.util.Comparator.comparing(i -> lines.get(i).substring(lines.get(i).indexOf("\"slot\""))));
        var duplicated = (com.fasterxml.jackson.databind.node.ObjectNode) json.readTree(lines.get(starts.get(12)));
        String otherWorker = duplicated.path("worker").asText().equals("w1") ? "w2" : "w1";
        duplicated.put("worker", otherWorker).put("fencing_token", duplicated.path("fencing_token").asLong() + 1);
        var first = (com.fasterxml.jackson.databind.node.ObjectNode) json.readTree(lines.get(starts.get(22)));
        var second = (com.fasterxml.jackson.databind.node.ObjectNode) json.readTree(lines.get(starts.get(23)));
        long token = first.path("fencing_token").asLong();
        first.put("fencing_token", second.path("fencing_token").asLong());
        second.put("fencing_token", token);
        String dropped = json.readTree(lines.get(starts.get(17))).path("slot").asText();
        lines.set(starts.get(22), first.toString());
        lines.set(starts.get(23), second.toString());
        lines.remove((int) starts.get(17));
        lines.add(duplicated.toString());
        Path tampered = dir.resolve("tampered.jsonl");
        java.nio.file.Files.write(tampered, lines);

        java.io.StringWriter out = new java.io.StringWriter();
        int exit = io.lockstep.worker.WorkerMain.execute(new java.io.PrintWriter(out, true), new java.io.PrintWriter(new java.io.StringWriter(), true),
                "audit", "--config", cluster.config.toString(), "--json", tampered.toString());
        com.fasterxml.jackson.databind.JsonNode report = json.readTree(out.toString());
        System.out.printf("%naudit of the tampered log: %s%n", report.path("checks"));
        assertThat(exit).as("audit of a tampered log").isEqualTo(4);
        Map<String, Integer> checks = new TreeMap<>();
        report.path("checks").fields().forEachRemaining(e -> checks.put(e.getKey(), e.getValue().asInt()));
        assertThat(checks).containsEntry("silent-slot", 1).containsEntry("second-run", 1).containsEntry("token-order", 1)
                .containsEntry("start-order", 0).containsEntry("start-time", 0).containsEntry("lease-stop", 0).containsEntry("contradiction", 0);
        Map<String, String> named = new TreeMap<>();
        report.path("violations").forEach(v -> named.put(v.path("check").asText(), v.path("job").asText() + "@" + v.path("slot").asText()));
        assertThat(named).containsEntry("silent-slot", "job-05@" + dropped)
                .containsEntry("second-run", "job-05@" + duplicated.path("slot").asText())
                .containsEntry("token-order", "job-05@" + second.path("slot").asText());
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
