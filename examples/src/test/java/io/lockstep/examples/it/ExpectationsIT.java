package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpServer;
import io.lockstep.examples.cli.CliRun;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Expectations on worker JVMs and a real Redis: a job made to fail breaches {@code succeededWithin}
 * once per slot, not once per worker, and the webhook takes each breach once, even when the worker
 * sending one is SIGKILLed mid-send (another sends it after its delivery lease, without logging it
 * again); a job paused for longer than {@code successEvery} breaches once and the next success
 * clears it; {@code status} shows the breach.
 */
class ExpectationsIT {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String SECRET = "s3cr3t-7c1f";

    @TempDir
    Path dir;

    /** A local webhook: holds the very first POST until told, then answers it 503; answers every other 200. */
    static final class Hook implements AutoCloseable {
        record Arrival(String id, String worker, String body) {}

        final HttpServer server;
        final List<Arrival> arrivals = new CopyOnWriteArrayList<>();
        /** Verdict id -> how many POSTs of it were answered 2xx. */
        final Map<String, Integer> acked = new ConcurrentHashMap<>();
        final CountDownLatch release = new CountDownLatch(1);

        Hook() throws IOException {
            server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
            server.setExecutor(Executors.newCachedThreadPool()); // one held request must not hold the others
            server.createContext("/hooks/" + SECRET, exchange -> {
                String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
                Arrival a = new Arrival(exchange.getRequestHeaders().getFirst("Lockstep-Alert-Id"),
                        exchange.getRequestHeaders().getFirst("Lockstep-Worker"), body);
                boolean first;
                synchronized (arrivals) {
                    first = arrivals.isEmpty();
                    arrivals.add(a);
                }
                int status = 200;
                if (first) {
                    try {
                        release.await(30, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    status = 503; // its sender was killed meanwhile: never taken
                }
                try {
                    exchange.sendResponseHeaders(status, -1);
                    if (status == 200) {
                        acked.merge(a.id(), 1, Integer::sum);
                    }
                } catch (IOException e) {
                    // the sender is gone
                } finally {
                    exchange.close();
                }
            });
            server.start();
        }

        String url() {
            return "http://127.0.0.1:" + server.getAddress().getPort() + "/hooks/" + SECRET;
        }

        @Override
        public void close() {
            release.countDown();
            server.stop(0);
        }
    }

    @Test
    void aFailingJobBreachesOncePerSlotAndTheWebhookTakesEachOnceThroughTheKillOfItsSender() throws Exception {
        Path ok = dir.resolve("ok");
        try (Hook hook = new Hook()) {
            String yaml = """
                    alerts:
                      webhooks: ["%s"]
                      timeout: 2s
                      retries: 0
                    defaults:
                      lease: 5s
                      misfireGrace: 2s
                    jobs:
                      - name: flaky
                        cron: "*/2 * * * * *"
                        class: io.lockstep.examples.it.jobs.SwitchJob
                        params: { ok: "%s" }
                        expect: { succeededWithin: 1s }
                    """.formatted(hook.url(), ok);
            try (Cluster cluster = new Cluster(dir, yaml)) {
                cluster.start("w1");
                cluster.start("w2");
                cluster.start("w3");
                cluster.awaitStarted();
                await().atMost(Duration.ofSeconds(30)).until(() -> !hook.arrivals.isEmpty());
                Hook.Arrival first = hook.arrivals.get(0);
                WorkerProcess sender = cluster.workers.stream().filter(w -> w.id.equals(first.worker())).findFirst().orElseThrow();
                sender.signal("KILL"); // mid-send: the webhook holds its POST
                hook.release.countDown();
                assertThat(sender.waitForExit(Duration.ofSeconds(10))).isNotZero();

                await().atMost(Duration.ofSeconds(40)).until(() -> hook.acked.containsKey(first.id()) && hook.acked.size() >= 4);
                Files.writeString(ok, "now");
                await().atMost(Duration.ofSeconds(40)).until(() -> {
                    List<JsonNode> breaches = cluster.events("expectation_breached");
                    List<JsonNode> met = cluster.events("expectation_met");
                    Instant lastBreach = breaches.stream().map(WorkerProcess::ts).max(Instant::compareTo).orElse(Instant.MIN);
                    Set<String> loggedIds = breaches.stream().map(e -> e.path("alert_id").asText()).collect(Collectors.toSet());
                    return met.stream().anyMatch(m -> WorkerProcess.ts(m).isAfter(lastBreach)) && hook.acked.keySet().containsAll(loggedIds)
                            && succeededSlots(cluster).size() >= 2;
                });
                for (WorkerProcess w : cluster.workers) {
                    if (w != sender) {
                        assertThat(w.terminate()).as(w.stderr()).isZero();
                    }
                }

                List<JsonNode> breaches = cluster.events("expectation_breached");
                Map<String, Long> perId = breaches.stream().collect(Collectors.groupingBy(e -> e.path("alert_id").asText(), Collectors.counting()));
                assertThat(perId.values()).as("each breach logged once in the cluster, the killed sender's included").allMatch(n -> n == 1);
                Set<Instant> breachedSlots = breaches.stream().map(e -> Instant.parse(e.path("slot").asText())).collect(Collectors.toSet());
                assertThat(breachedSlots).as("one breach per slot").hasSize(breaches.size());
                assertThat(breachedSlots).as("never a slot that succeeded").doesNotContainAnyElementsOf(succeededSlots(cluster));
                Instant okFrom = succeededSlots(cluster).stream().min(Instant::compareTo).orElseThrow();
                Set<Instant> failedInTime = cluster.events("job_failed").stream().map(WorkerProcess::slot)
                        .filter(s -> s.plusSeconds(1).isBefore(okFrom)).collect(Collectors.toSet());
                assertThat(failedInTime).as("failures to judge").hasSizeGreaterThanOrEqualTo(3);
                assertThat(breachedSlots).as("every slot that failed before the job succeeded again").containsAll(failedInTime);
                assertThat(breaches).allSatisfy(e -> assertThat(e.path("level").asText()).isEqualTo("ERROR"));

                assertThat(hook.arrivals.stream().filter(a -> a.id().equals(first.id()))).as("the held POST, then another worker's")
                        .hasSizeGreaterThanOrEqualTo(2).extracting(Hook.Arrival::worker).contains(first.worker())
                        .anyMatch(w -> !w.equals(first.worker()));
                for (JsonNode b : breaches) {
                    assertThat(hook.acked.get(b.path("alert_id").asText())).as("taken once: %s", b).isEqualTo(1);
                }
                JsonNode body = JSON.readTree(hook.arrivals.get(0).body());
                assertThat(body.path("event").asText()).isEqualTo("expectation_breached");
                assertThat(body.path("job").asText()).isEqualTo("flaky");
                assertThat(body.path("expected").asText()).isEqualTo("a success within 1s of each slot");
                assertThat(hook.arrivals).as("the clearance is sent too")
                        .anyMatch(a -> a.body().contains("\"event\":\"expectation_met\""));
                for (WorkerProcess w : cluster.workers) {
                    assertThat(Files.readString(w.log()) + w.stderr()).as("a webhook's path may be a secret: never logged").doesNotContain(SECRET);
                }
                cluster.assertAuditHolds();
            }
        }
    }

    private static Set<Instant> succeededSlots(Cluster cluster) {
        return cluster.events("job_succeeded").stream().map(WorkerProcess::slot).collect(Collectors.toSet());
    }

    @Test
    void aJobPausedLongerThanSuccessEveryBreachesOnceAndTheNextSuccessClearsIt() throws Exception {
        String yaml = """
                defaults:
                  lease: 5s
                  misfireGrace: 2s
                jobs:
                  - name: beat
                    cron: "* * * * * *"
                    class: io.lockstep.examples.HeartbeatJob
                    expect: { successEvery: 3s }
                """;
        try (Cluster cluster = new Cluster(dir, yaml)) {
            cluster.start("w1");
            cluster.start("w2");
            cluster.awaitStarted();
            await().atMost(Duration.ofSeconds(20)).until(() -> succeededSlots(cluster).size() >= 2);
            CliRun pause = CliRun.of("pause", "--config", cluster.config.toString(), "--job", "beat", "--note", "maintenance");
            assertThat(pause.exit()).as(pause.err()).isZero();
            await().atMost(Duration.ofSeconds(20)).until(() -> !cluster.events("expectation_breached").isEmpty());
            JsonNode status = status(cluster);
            assertThat(status.path("jobs").get(0).path("expect").path("breached").asBoolean()).as("%s", status).isTrue();
            // A breach once per silence: two more windows of it, and still one, whichever worker looks.
            await().during(Duration.ofSeconds(7)).atMost(Duration.ofSeconds(10))
                    .until(() -> cluster.events("expectation_breached").size() == 1);
            JsonNode breach = cluster.events("expectation_breached").get(0);
            assertThat(breach.path("expectation").asText()).isEqualTo("successEvery");
            assertThat(breach.path("expected").asText()).isEqualTo("a success every 3s");

            CliRun resume = CliRun.of("resume", "--config", cluster.config.toString(), "--job", "beat");
            assertThat(resume.exit()).as(resume.err()).isZero();
            await().atMost(Duration.ofSeconds(20)).until(() -> !cluster.events("expectation_met").isEmpty());
            await().atMost(Duration.ofSeconds(10)).until(() -> !status(cluster).path("jobs").get(0).path("expect").path("breached").asBoolean());
            for (WorkerProcess w : cluster.workers) {
                assertThat(w.terminate()).as(w.stderr()).isZero();
            }
            assertThat(cluster.events("expectation_breached")).hasSize(1);
            assertThat(cluster.events("expectation_met")).hasSize(1);
            cluster.assertAuditHolds();
        }
    }

    private static JsonNode status(Cluster cluster) throws IOException {
        CliRun status = CliRun.of("status", "--config", cluster.config.toString(), "--json");
        assertThat(status.exit()).as(status.err()).isZero();
        return JSON.readTree(status.out());
    }
}
