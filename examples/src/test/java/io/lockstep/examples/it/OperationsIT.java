package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.lockstep.examples.cli.CliRun;
import io.lockstep.redis.RedisFixture;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Operating a cluster of worker JVMs from the outside: {@code status}, {@code trigger},
 * {@code pause} / {@code resume} and {@code history} against three workers; each worker's
 * {@code /metrics} against its events; the status page in a real headless Chromium; a SIGKILLed
 * worker dropping out of {@code status}; and config drift between two workers.
 */
class OperationsIT {

    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;

    private String jobs() {
        return "jobs:\n"
                + "  - { name: tick, cron: \"* * * * * *\", class: io.lockstep.examples.it.jobs.RecordingJob,"
                + " params: { file: \"" + dir.resolve("tick.log") + "\", workMillis: 50 }, lease: 2s, misfireGrace: 2s }\n"
                + "  - { name: manual, cron: \"0 0 0 1 1 *\", class: io.lockstep.examples.it.jobs.RecordingJob,"
                + " params: { file: \"" + dir.resolve("manual.log") + "\" } }\n"
                + "  - { name: slow, cron: \"*/3 * * * * *\", class: io.lockstep.examples.it.jobs.RecordingJob,"
                + " params: { file: \"" + dir.resolve("slow.log") + "\", workMillis: 2500 }, lease: 2s, misfireGrace: 2s }\n"
                + "  - { name: failing, cron: \"0 0 0 1 1 *\", class: io.lockstep.examples.HeartbeatJob, params: { failAttempts: 9 } }\n";
    }

    /** A cluster whose workers serve HTTP on the port in their HTTP_PORT variable. */
    private Cluster cluster(String jobsYaml) throws IOException {
        Cluster cluster = new Cluster(dir, jobsYaml);
        cluster.editConfig("worker:\n", "worker:\n  http:\n    port: ${HTTP_PORT:-0}\n");
        return cluster;
    }

    @Test
    void operatorsSeeTriggerPauseAndReadTheClusterFromOutside() throws Exception {
        try (Cluster cluster = cluster(jobs())) {
            Map<String, Integer> ports = new HashMap<>();
            for (String id : List.of("w1", "w2", "w3")) {
                ports.put(id, RedisFixture.freeLoopbackPort());
                cluster.startWithEnv(id, Map.of("HTTP_PORT", Integer.toString(ports.get(id))));
            }
            cluster.awaitStarted();

            // status: every live worker and every job of the config.
            JsonNode status = statusJson(cluster);
            assertThat(status.path("workers").findValuesAsText("id")).containsExactlyInAnyOrder("w1", "w2", "w3");
            assertThat(status.path("jobs").findValuesAsText("name")).containsExactly("tick", "manual", "slow", "failing");
            assertThat(status.path("drift")).isEmpty();

            // trigger --wait: exactly one worker runs it (by the job's own record), and the command exits by its outcome.
            CliRun trigger = cli("trigger", "--config", cluster.config.toString(), "--job", "manual", "--wait", "--timeout", "30s");
            assertThat(trigger.exit()).as(trigger.err()).isZero();
            assertThat(trigger.out()).contains("succeeded on w");
            CliRun failing = cli("trigger", "--config", cluster.config.toString(), "--job", "failing", "--wait", "--timeout", "30s", "--json");
            assertThat(failing.exit()).as("a triggered run that fails exits 3").isEqualTo(3);
            JsonNode failed = JSON.readTree(failing.out());
            assertThat(failed.path("state").asText()).isEqualTo("done");
            assertThat(failed.path("outcome").asText()).isEqualTo("failed");
            assertThat(failed.path("fencingToken").asLong()).isPositive();
            List<String> manualRuns = Files.readAllLines(dir.resolve("manual.log"));
            assertThat(manualRuns).hasSize(1);
            assertThat(cluster.events("job_started").stream().filter(e -> e.path("manual").asBoolean() && e.path("job").asText().equals("manual"))).hasSize(1);
            // Every worker raced it: one won, the others were told it was taken; the meters say the same.
            await().atMost(Duration.ofSeconds(15)).until(() -> sum(ports, "lockstep_claims_total", "manual", "result=\"won\"")
                    + sum(ports, "lockstep_claims_total", "manual", "result=\"contended\"") == 3);
            assertThat(sum(ports, "lockstep_claims_total", "manual", "result=\"won\"")).isEqualTo(1);
            assertThat(sum(ports, "lockstep_runs_total", "manual", "outcome=\"succeeded\"")).isEqualTo(1);
            assertThat(scrape(ports.get("w1")).lines()).contains("lockstep_redis_up 1.0").anyMatch(l -> l.startsWith("lockstep_threads_busy "));
            String winner = manualRuns.get(0).split(" ")[1];
            assertThat(metric(scrape(ports.get(winner)), "lockstep_runs_total", "manual", "outcome=\"succeeded\"")).isEqualTo(1);

            // pause: no more starts of tick from the next slot on; each paused slot reported exactly once; resume restores.
            CliRun pause = cli("pause", "--config", cluster.config.toString(), "--job", "tick", "--note", "deploy");
            assertThat(pause.exit()).as(pause.err()).isZero();
            Instant pausedAt = Instant.now();
            await().atMost(Duration.ofSeconds(15)).until(() -> pausedSlots(cluster).size() >= 3);
            Instant checked = Instant.now();
            assertThat(statusJson(cluster).path("jobs").get(0).path("paused").path("note").asText()).isEqualTo("deploy");
            CliRun resume = cli("resume", "--config", cluster.config.toString(), "--job", "tick");
            assertThat(resume.exit()).as(resume.err()).isZero();
            Instant resumedAt = Instant.now();
            await().atMost(Duration.ofSeconds(10)).until(() -> cluster.events("job_started").stream()
                    .anyMatch(e -> e.path("job").asText().equals("tick") && WorkerProcess.slot(e).isAfter(resumedAt.plusSeconds(1))));
            Map<String, Integer> skippedBySlot = pausedSlots(cluster);
            assertThat(skippedBySlot).as("each paused slot reported once").allSatisfy((slot, n) -> assertThat(n).isEqualTo(1));
            assertThat(cluster.events("job_started").stream().filter(e -> e.path("job").asText().equals("tick")
                    && WorkerProcess.slot(e).isAfter(pausedAt.plusSeconds(1)) && WorkerProcess.slot(e).isBefore(checked)))
                    .as("no tick started while paused").isEmpty();
            assertThat(sum(ports, "lockstep_slots_skipped_total", "tick", "reason=\"paused\"")).isEqualTo(skippedBySlot.size());

            // history: what the job recorded itself, newest first, and the slots decided without a run.
            CliRun history = cli("history", "--config", cluster.config.toString(), "--job", "tick", "--limit", "40", "--json");
            assertThat(history.exit()).as(history.err()).isZero();
            Map<Long, String> recorded = new HashMap<>();
            for (String line : Files.readAllLines(dir.resolve("tick.log"))) {
                String[] f = line.split(" ");
                recorded.put(Long.parseLong(f[0]), f[1] + " " + f[2]);
            }
            JsonNode entries = JSON.readTree(history.out());
            assertThat(entries).hasSizeGreaterThanOrEqualTo(5);
            Instant previous = Instant.MAX;
            java.util.Set<String> pausedInHistory = new java.util.HashSet<>();
            int runs = 0;
            for (JsonNode entry : entries) {
                Instant slot = Instant.parse(entry.path("slot").asText());
                assertThat(slot).isBefore(previous);
                previous = slot;
                if (entry.path("outcome").asText().equals("paused")) {
                    assertThat(entry.path("reason").asText()).isEqualTo("paused");
                    pausedInHistory.add(slot.toString());
                    continue;
                }
                runs++;
                assertThat(recorded.get(slot.toEpochMilli())).isEqualTo(entry.path("worker").asText() + " " + entry.path("fencingToken").asText());
                assertThat(entry.path("outcome").asText()).isEqualTo("succeeded");
            }
            assertThat(runs).isGreaterThanOrEqualTo(3);
            assertThat(pausedInHistory).as("every slot reported paused is in the history as paused, and no other")
                    .isEqualTo(skippedBySlot.keySet());

            // The HTTP port is read-only and tells readiness.
            HttpClient http = HttpClient.newHttpClient();
            URI w1 = URI.create("http://127.0.0.1:" + ports.get("w1"));
            assertThat(http.send(HttpRequest.newBuilder(w1.resolve("/health/ready")).build(), HttpResponse.BodyHandlers.ofString())
                    .statusCode()).isEqualTo(200);
            assertThat(http.send(HttpRequest.newBuilder(w1.resolve("/metrics")).POST(HttpRequest.BodyPublishers.noBody()).build(),
                    HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(405);

            // A lease lost by force (the holder SIGSTOPped past its lease) is counted where it happened.
            JsonNode holder = await().atMost(Duration.ofSeconds(10)).until(() -> statusJson(cluster).path("jobs").get(2).path("running"),
                    running -> running.size() == 1 && running.get(0).path("leaseLeftMs").asLong() > 1000);
            String stoppedId = holder.get(0).path("worker").asText();
            WorkerProcess stopped = cluster.workers.stream().filter(w -> w.events("worker_started").get(0).path("worker").asText()
                    .equals(stoppedId)).findFirst().orElseThrow();
            stopped.signal("STOP");
            try {
                // Its lease runs out while it is stopped: a peer abandons the run (recover: none).
                await().atMost(Duration.ofSeconds(10)).until(() -> cluster.events("slot_abandoned").stream()
                        .anyMatch(e -> e.path("job").asText().equals("slow")));
            } finally {
                stopped.signal("CONT");
            }
            await().atMost(Duration.ofSeconds(10)).until(() -> !stopped.events("lease_lost").isEmpty());
            long lostEvents = stopped.events("lease_lost").stream().filter(e -> e.path("job").asText().equals("slow")).count();
            assertThat(lostEvents).isPositive();
            assertThat(metric(scrape(ports.get(stoppedId)), "lockstep_leases_lost_total", "slow", "")).isEqualTo(lostEvents);

            // A worker killed without a goodbye leaves the list once its heartbeat expires.
            cluster.workers.get(2).signal("KILL");
            await().atMost(Duration.ofSeconds(25)).until(() -> statusJson(cluster).path("workers").findValuesAsText("id").size() == 2);
            assertThat(statusJson(cluster).path("workers").findValuesAsText("id")).containsExactlyInAnyOrder("w1", "w2");
            cluster.assertAuditHolds();
        }
    }

    /**
     * The status page in a real headless Chromium (its own test, so that a machine without Chromium
     * skips this alone): the jobs, the workers, a run in flight with its worker, and an update after a
     * new run.
     */
    @Test
    void theStatusPageInABrowserShowsJobsWorkersRunsInFlightAndUpdates() throws Exception {
        Optional<String> chromium = Chromium.binary();
        Assumptions.assumeTrue(chromium.isPresent(), "the status page test needs Chromium: install the Debian package chromium");
        try (Cluster cluster = cluster(jobs())) {
            int port = RedisFixture.freeLoopbackPort();
            cluster.startWithEnv("w1", Map.of("HTTP_PORT", Integer.toString(port)));
            cluster.startWithEnv("w2", Map.of("HTTP_PORT", Integer.toString(RedisFixture.freeLoopbackPort())));
            cluster.awaitStarted();
            statusPageInChromium(chromium.get(), port, cluster);
            cluster.assertAuditHolds();
        }
    }

    @Test
    void twoWorkersThatDisagreeOnAJobAreToldWhichJobAndWhich() throws Exception {
        try (Cluster cluster = cluster(jobs())) {
            Path other = dir.resolve("other.yaml");
            Files.writeString(other, Cluster.replacing(Files.readString(cluster.config), "name: slow, cron: \"*/3 * * * * *\"",
                    "name: slow, cron: \"*/4 * * * * *\""));
            int port = RedisFixture.freeLoopbackPort();
            cluster.startWithEnv("w1", Map.of("HTTP_PORT", Integer.toString(port)));
            WorkerProcess w2 = WorkerProcess.start(dir, other, "w2", Map.of("HTTP_PORT", Integer.toString(RedisFixture.freeLoopbackPort())));
            cluster.workers.add(w2);
            // Another application on the same Redis and prefix: no job in common. Not drift; one warning (F6).
            String base = Files.readString(cluster.config);
            Path stranger = dir.resolve("stranger.yaml");
            Files.writeString(stranger, base.substring(0, base.indexOf("jobs:\n")) + "jobs:\n"
                    + "  - { name: invoices, cron: \"0 0 0 1 1 *\", class: io.lockstep.examples.HeartbeatJob }\n");
            try (WorkerProcess w3 = WorkerProcess.start(dir, stranger, "sb-1", Map.of("HTTP_PORT", Integer.toString(RedisFixture.freeLoopbackPort())))) {
                cluster.awaitStarted();
                await().atMost(Duration.ofSeconds(15)).until(() -> cluster.workers.stream()
                        .allMatch(w -> !w.events("config_drift").isEmpty() && !w.events("prefix_shared").isEmpty()));
                for (WorkerProcess w : cluster.workers) {
                    JsonNode drift = w.events("config_drift").get(0);
                    assertThat(drift.path("job").asText()).isEqualTo("slow");
                    assertThat(drift.path("workers").asText()).isEqualTo("w1,w2");
                    // Who has which value (F16), the reporting worker's own first.
                    String own = w == w2 ? "w2: */4 * * * * *" : "w1: */3 * * * * *";
                    String theirs = w == w2 ? "w1: */3 * * * * *" : "w2: */4 * * * * *";
                    assertThat(drift.path("differences").asText()).isEqualTo("cron: " + own + "; " + theirs);
                    assertThat(w.events("prefix_shared").get(0).path("workers").asText()).isEqualTo("sb-1");
                    assertThat(w.events("config_drift")).as("the other application's jobs are not drift")
                            .noneMatch(e -> e.path("job").asText().equals("invoices") || e.path("workers").asText().contains("sb-1"));
                }
                // w3 may hear of w1's config before w2's: a warning per new set of strangers, the last naming both.
                await().atMost(Duration.ofSeconds(15)).until(() -> w3.events("prefix_shared").stream()
                        .anyMatch(e -> e.path("workers").asText().equals("w1,w2")));
                assertThat(w3.events("config_drift")).isEmpty();
            }
            JsonNode status = statusJson(cluster);
            assertThat(status.path("drift")).as(status.toString()).singleElement().satisfies(d -> {
                assertThat(d.path("job").asText()).isEqualTo("slow");
                assertThat(d.path("workers").toString()).contains("w1", "w2");
            });
            assertThat(w2.events("config_drift")).hasSize(1); // reported once, not at every heartbeat
            assertThat(scrape(port).lines()).contains("lockstep_config_drift 1.0");
            // The audit leaves out the last 11 s of a log cut while it runs: let the run go on past that.
            Instant auditFrom = Instant.now().plusSeconds(12);
            await().atMost(Duration.ofSeconds(30)).until(() -> cluster.events("job_started").stream()
                    .anyMatch(e -> WorkerProcess.slot(e).isAfter(auditFrom)));
            cluster.assertAuditHolds();
        }
    }

    @Test
    void badUsageAndUnknownJobsExitTwoWithOneLine() throws Exception {
        try (Cluster cluster = new Cluster(dir, jobs())) {
            CliRun unknown = cli("trigger", "--config", cluster.config.toString(), "--job", "nope");
            assertThat(unknown.exit()).isEqualTo(2);
            assertThat(unknown.err().strip()).doesNotContain("\n").contains("no job named \"nope\"").contains("tick, manual, slow, failing");
            CliRun both = cli("pause", "--config", cluster.config.toString(), "--job", "tick", "--all");
            assertThat(both.exit()).isEqualTo(2);
            CliRun help = cli("status", "--help");
            assertThat(help.exit()).isZero();
            assertThat(help.out()).contains("--config", "--json");
            CliRun empty = cli("history", "--config", cluster.config.toString(), "--job", "tick");
            assertThat(empty.exit()).isZero();
            assertThat(empty.out()).contains("no runs of tick recorded yet");
        }
        Path nowhere = dir.resolve("down.yaml");
        Files.writeString(nowhere, "redis:\n  uri: redis://127.0.0.1:" + RedisFixture.freeLoopbackPort() + "\n  timeout: 300ms\n" + jobs());
        CliRun down = cli("status", "--config", nowhere.toString());
        assertThat(down.exit()).isEqualTo(1);
        assertThat(down.err().strip()).doesNotContain("\n").startsWith("error: ");
    }

    // ------------------------------------------------------------------ helpers

    /**
     * The status page in headless Chromium: the jobs, a run in flight with its worker, an update
     * after a new run, and each job's strip of last slots, where slots paused show among the runs.
     */
    private void statusPageInChromium(String chromium, int port, Cluster cluster) throws Exception {
        String url = "http://127.0.0.1:" + port + "/";
        await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(500)).until(() -> {
            String dom = Chromium.dumpDom(chromium, url);
            return dom.contains("data-job=\"slow\"") && Pattern.compile("data-running=\"1\"").matcher(dom).find()
                    && dom.contains("data-worker=\"w");
        });
        String first = Chromium.dumpDom(chromium, url);
        assertThat(first).contains("data-job=\"tick\"", "data-job=\"manual\"", "data-worker-id=\"w1\"", "data-worker-id=\"w2\"");
        String tickBefore = lastRun(first, "tick");
        await().atMost(Duration.ofSeconds(15)).pollInterval(Duration.ofSeconds(1))
                .until(() -> !lastRun(Chromium.dumpDom(chromium, url), "tick").equals(tickBefore));
        // Pause tick for a few slots: each is decided paused, in the history and so in the strip, between runs.
        assertThat(cli("pause", "--config", cluster.config.toString(), "--job", "tick", "--for", "3s").exit()).isZero();
        await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofSeconds(1)).until(() -> {
            String strip = String.join(" ", stripOf(Chromium.dumpDom(chromium, url), "tick"));
            return strip.matches(".*\\bran\\b.*\\bpaused\\b.*\\bran\\b.*");
        });
        List<String> strip = stripOf(Chromium.dumpDom(chromium, url), "tick");
        assertThat(strip).as("tick's strip (a late slot on a loaded machine may show missed)").contains("ran", "paused")
                .doesNotContain("failed");
        CliRun history = cli("history", "--config", cluster.config.toString(), "--job", "tick", "--limit", "30");
        assertThat(history.out()).as("history shows the slots decided without a run, with why").contains(" paused ", "its job was paused");
        String shot = System.getProperty("lockstep.screenshot");
        if (shot != null && !shot.isBlank()) {
            Chromium.screenshot(chromium, url, Path.of(shot));
        }
    }

    /** The slot of the last run the page shows in a job's row. */
    private static String lastRun(String dom, String job) {
        Matcher m = Pattern.compile("data-job=\"" + job + "\".*?data-last-slot=\"([^\"]*)\"").matcher(dom);
        return m.find() ? m.group(1) : "";
    }

    /** What became of each of the job's last slots, oldest first, as the status page's strip shows it. */
    private static List<String> stripOf(String dom, String job) {
        int row = dom.indexOf("data-job=\"" + job + "\"");
        if (row < 0) {
            return List.of();
        }
        String tr = dom.substring(row, dom.indexOf("</tr>", row));
        List<String> outcomes = new java.util.ArrayList<>();
        Matcher m = Pattern.compile("data-outcome=\"([a-z]+)\"").matcher(tr);
        while (m.find()) {
            outcomes.add(m.group(1));
        }
        return outcomes;
    }

    /** slot -> how many slot_skipped (reason paused) events of tick name it. */
    private static Map<String, Integer> pausedSlots(Cluster cluster) {
        Map<String, Integer> bySlot = new HashMap<>();
        cluster.events("slot_skipped").stream().filter(e -> e.path("job").asText().equals("tick") && e.path("reason").asText().equals("paused"))
                .forEach(e -> bySlot.merge(e.path("slot").asText(), 1, Integer::sum));
        return bySlot;
    }

    private JsonNode statusJson(Cluster cluster) throws IOException {
        CliRun status = cli("status", "--config", cluster.config.toString(), "--json");
        assertThat(status.exit()).as(status.err()).isZero();
        return JSON.readTree(status.out());
    }

    private static CliRun cli(String... args) {
        return CliRun.of(args);
    }

    private static String scrape(int port) {
        try {
            return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics")).build(),
                    HttpResponse.BodyHandlers.ofString()).body();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** The value of one series of a Prometheus text scrape: {@code name{job="job",...,label...}}; 0 when absent. */
    private static double metric(String scrape, String name, String job, String label) {
        double total = 0;
        for (String line : scrape.lines().toList()) {
            if (line.startsWith(name + "{") && line.contains("job=\"" + job + "\"") && line.contains(label)) {
                total += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        return total;
    }

    private static double sum(Map<String, Integer> ports, String name, String job, String label) {
        double total = 0;
        for (int port : ports.values()) {
            total += metric(scrape(port), name, job, label);
        }
        return total;
    }

    /** Debian's headless Chromium, run as a command; nothing is downloaded. */
    static final class Chromium {

        static Optional<String> binary() {
            for (String candidate : List.of("/usr/bin/chromium", "/usr/bin/chromium-browser")) {
                if (Files.isExecutable(Path.of(candidate))) {
                    return Optional.of(candidate);
                }
            }
            return Optional.empty();
        }

        static String dumpDom(String chromium, String url) throws IOException, InterruptedException {
            return run(chromium, "--dump-dom", url);
        }

        static void screenshot(String chromium, String url, Path file) throws IOException, InterruptedException {
            run(chromium, "--screenshot=" + file.toAbsolutePath(), "--window-size=1100,760", "--hide-scrollbars", url);
        }

        private static String run(String chromium, String... args) throws IOException, InterruptedException {
            List<String> command = new ArrayList<>(List.of(chromium, "--headless=new", "--no-sandbox", "--disable-gpu",
                    "--disable-dev-shm-usage", "--no-first-run", "--user-data-dir=" + Files.createTempDirectory("chromium-"),
                    "--virtual-time-budget=2500"));
            command.addAll(List.of(args));
            Process p = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.DISCARD).start();
            String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException("chromium did not finish within 60 s");
            }
            return out;
        }
    }
}
