package io.lockstep.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import io.lockstep.scheduler.lock.Expectations.Notice;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Webhooks against a local HTTP server: a POST that is refused is retried until one is taken; one
 * that gets no answer within the timeout is retried, then given up with one ERROR event; the body
 * says what was expected and what happened; no event names the webhook's path or query, which may
 * be a secret.
 */
class WebhooksTest {

    private static final Notice BREACH = new Notice("succeededWithin:1796541742000", "nightly", "breached", "succeededWithin",
            1796541742000L, 1796542642000L, "failed", 0, 1796542642100L, false);

    private HttpServer server;
    private final List<String> bodies = new CopyOnWriteArrayList<>();
    private final AtomicInteger refuse = new AtomicInteger();
    private final CountDownLatch never = new CountDownLatch(1);

    @BeforeEach
    void start() throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.setExecutor(Executors.newCachedThreadPool());
        server.createContext("/refusing/secret-path", ex -> {
            bodies.add(new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
            ex.sendResponseHeaders(refuse.getAndDecrement() > 0 ? 503 : 204, -1);
            ex.close();
        });
        server.createContext("/silent/secret-path", ex -> {
            bodies.add(new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
            try {
                never.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            ex.close();
        });
        server.start();
    }

    @AfterEach
    void stop() {
        never.countDown();
        server.stop(0);
    }

    private URI hook(String path) {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + path + "?token=secret-query");
    }

    @Test
    void aRefusedPostIsRetriedUntilTakenAndItsBodySaysWhatWasExpectedAndWhatHappened() throws Exception {
        refuse.set(1);
        try (CapturedEvents events = new CapturedEvents()) {
            Webhooks hooks = new Webhooks(new Alerts(List.of(hook("/refusing/secret-path")), Duration.ofSeconds(2), 2), new Events("w1"), "w1");
            assertThat(hooks.send(BREACH, Webhooks.body(BREACH, "a success within 15m of each slot"), () -> true)).isTrue();
            assertThat(bodies).hasSize(2);
            assertThat(bodies.get(1)).contains("\"event\":\"expectation_breached\"", "\"id\":\"succeededWithin:1796541742000\"",
                    "\"job\":\"nightly\"", "\"expected\":\"a success within 15m of each slot\"", "\"happened\":\"failed\"",
                    "\"slot\":\"2026-12-06T", "\"deadline\":\"2026-12-06T");
            assertThat(events.named("alert_retry")).singleElement().satisfies(e -> assertThat(e.get("error")).isEqualTo("answered 503"));
            assertThat(events.named("alert_sent")).hasSize(1);
            assertThat(events.named("alert_undelivered")).isEmpty();
            assertThat(events.all().toString()).doesNotContain("secret");
        }
    }

    @Test
    void aHookThatNeverAnswersIsGivenUpAfterItsRetriesWithOneErrorAndNoSecretInIt() throws Exception {
        try (CapturedEvents events = new CapturedEvents()) {
            Webhooks hooks = new Webhooks(new Alerts(List.of(hook("/silent/secret-path")), Duration.ofMillis(300), 1), new Events("w1"), "w1");
            long start = System.nanoTime();
            assertThat(hooks.send(BREACH, Webhooks.body(BREACH, "a success within 15m of each slot"), () -> true)).isTrue();
            assertThat(Duration.ofNanos(System.nanoTime() - start)).as("two timeouts and a 1 s back-off, not the server's 10 s")
                    .isLessThan(Duration.ofSeconds(5));
            assertThat(bodies).hasSize(2);
            assertThat(events.named("alert_retry")).hasSize(2);
            assertThat(events.named("alert_undelivered")).singleElement()
                    .satisfies(e -> assertThat(e.get("webhook")).isEqualTo("http://127.0.0.1:" + server.getAddress().getPort()));
            assertThat(events.all().toString()).doesNotContain("secret");
        }
    }

    @Test
    void aVerdictAnotherWorkerTookOverIsNotSentAgainHere() throws Exception {
        refuse.set(5);
        try (CapturedEvents events = new CapturedEvents()) {
            Webhooks hooks = new Webhooks(new Alerts(List.of(hook("/refusing/secret-path")), Duration.ofSeconds(2), 3), new Events("w1"), "w1");
            AtomicInteger asked = new AtomicInteger();
            assertThat(hooks.send(BREACH, "{}", () -> asked.incrementAndGet() == 1)).as("its lease went to another worker").isFalse();
            assertThat(bodies).as("the first attempt only").hasSize(1);
            assertThat(events.named("alert_undelivered")).isEmpty();
        }
    }

    @Test
    void theDeliveryLeaseCoversEveryAttemptOfEveryHook() {
        Alerts alerts = new Alerts(List.of(URI.create("https://a.example/x"), URI.create("https://b.example/y")), Duration.ofSeconds(2), 2);
        // per hook: 3 attempts of 2 s, then back-offs of 1 s and 2 s
        assertThat(alerts.deliveryTime()).isEqualTo(Duration.ofSeconds(2 * (3 * 2 + 1 + 2) + 5));
    }
}
