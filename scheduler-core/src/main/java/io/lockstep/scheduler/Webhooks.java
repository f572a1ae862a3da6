package io.lockstep.scheduler;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.lockstep.scheduler.lock.Expectations.Notice;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;

/**
 * Sends a verdict of an expectation to each webhook of {@link Alerts}: a JSON POST (the fields of
 * the event, and {@code id}, the same for a repeat, so a receiver can drop one), retried after
 * 1 s, 2 s, 4 s, ... while it gets no answer or one that is not 2xx. Headers name the sending worker
 * ({@code Lockstep-Worker}) and the verdict ({@code Lockstep-Alert-Id}). Logs name a webhook by its
 * scheme, host and port only: its path, query and user info may be a secret. Thread-safe; used
 * from one delivery thread.
 */
final class Webhooks {

    private static final ObjectMapper JSON = new ObjectMapper();

    private final Alerts alerts;
    private final Events events;
    private final HttpClient http;
    private final String workerId;

    Webhooks(Alerts alerts, Events events, String workerId) {
        this.workerId = workerId;
        this.alerts = alerts;
        this.events = events;
        this.http = HttpClient.newBuilder().connectTimeout(alerts.timeout()).followRedirects(HttpClient.Redirect.NEVER).build();
    }

    boolean any() {
        return !alerts.webhooks().isEmpty();
    }

    /** The wait before retry {@code n} (0-based): 1 s, 2 s, 4 s, ... at most 30 s. */
    static Duration backoff(int n) {
        return Duration.ofSeconds(Math.min(30, 1L << Math.min(n, 5)));
    }

    /** How logs name a webhook: scheme, host and port (its path, query and user info may be secret). */
    static String safe(URI u) {
        return (u.getScheme() == null ? "" : u.getScheme() + "://") + (u.getHost() == null ? "?" : u.getHost())
                + (u.getPort() < 0 ? "" : ":" + u.getPort());
    }

    /**
     * The JSON body a webhook receives for {@code n}: {@code id} is the verdict's (a repeat has the
     * same), {@code dedupKey} the job's expectation (a {@code met} clears every breach of it before).
     */
    static String body(Notice n, String expected) {
        ObjectNode o = JSON.createObjectNode();
        o.put("event", n.breached() ? "expectation_breached" : "expectation_met");
        o.put("id", n.id());
        o.put("job", n.job());
        o.put("expectation", n.expectation());
        o.put("dedupKey", n.job() + ":" + n.expectation());
        o.put("expected", expected);
        o.put("happened", n.happened());
        if (n.slotMillis() > 0) {
            o.put("slot", Instant.ofEpochMilli(n.slotMillis()).toString());
        }
        if (n.deadlineMillis() > 0) {
            o.put("deadline", Instant.ofEpochMilli(n.deadlineMillis()).toString());
        }
        if (n.lastSuccessMillis() > 0) {
            o.put("lastSuccess", Instant.ofEpochMilli(n.lastSuccessMillis()).toString());
        }
        o.put("decidedAt", Instant.ofEpochMilli(n.decidedMillis()).toString());
        return o.toString();
    }

    /**
     * POSTs {@code body} to every webhook, each with its retries; a webhook that never took it is
     * logged ({@code alert_undelivered}, ERROR) and left. Before each attempt {@code stillOurs} is
     * asked (it extends the delivery lease): false stops the delivery, another worker has it now.
     *
     * @return false when it stopped because the verdict is no longer this worker's
     * @throws InterruptedException when the worker stops meanwhile (the verdict stays in the store's
     *     outbox: another worker delivers it once its lease has run out)
     */
    boolean send(Notice n, String body, java.util.function.BooleanSupplier stillOurs) throws InterruptedException {
        for (URI hook : alerts.webhooks()) {
            String failure = null;
            for (int attempt = 0; attempt <= alerts.retries(); attempt++) {
                if (attempt > 0) {
                    Thread.sleep(backoff(attempt - 1).toMillis());
                }
                if (!stillOurs.getAsBoolean()) {
                    return false;
                }
                failure = post(hook, n, body);
                if (failure == null) {
                    break;
                }
                events.warn("alert_retry").addKeyValue("job", n.job()).addKeyValue("alert_id", n.id())
                        .addKeyValue("webhook", safe(hook)).addKeyValue("attempt", attempt + 1).addKeyValue("error", failure)
                        .log("webhook " + safe(hook) + " did not take the alert: " + failure);
            }
            if (failure != null) {
                events.error("alert_undelivered").addKeyValue("job", n.job()).addKeyValue("alert_id", n.id())
                        .addKeyValue("webhook", safe(hook)).addKeyValue("attempts", alerts.retries() + 1)
                        .log("webhook " + safe(hook) + " did not take the alert after " + (alerts.retries() + 1) + " attempt(s); giving up on it");
            } else {
                events.info("alert_sent").addKeyValue("job", n.job()).addKeyValue("alert_id", n.id()).addKeyValue("webhook", safe(hook))
                        .log("alert sent to " + safe(hook));
            }
        }
        return true;
    }

    /**
     * One POST, bounded as a whole by the timeout (headers and body: a receiver that trickles its
     * answer cannot hold the delivery thread). Null when taken (2xx), else why not, scrubbed.
     */
    private String post(URI hook, Notice n, String body) throws InterruptedException {
        java.util.concurrent.CompletableFuture<HttpResponse<Void>> call = null;
        try {
            call = http.sendAsync(HttpRequest.newBuilder(hook).timeout(alerts.timeout())
                    .header("Content-Type", "application/json").header("User-Agent", "lockstep")
                    .header("Lockstep-Worker", workerId).header("Lockstep-Alert-Id", n.id())
                    .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.discarding());
            HttpResponse<Void> r = call.get(alerts.timeout().toMillis() + 100, java.util.concurrent.TimeUnit.MILLISECONDS);
            return r.statusCode() / 100 == 2 ? null : "answered " + r.statusCode();
        } catch (java.util.concurrent.TimeoutException e) {
            call.cancel(true);
            return "no answer within " + alerts.timeout().toMillis() + " ms";
        } catch (java.util.concurrent.ExecutionException e) {
            Throwable c = e.getCause() == null ? e : e.getCause();
            return scrub(c.getClass().getSimpleName() + (c.getMessage() == null ? "" : ": " + c.getMessage()), hook);
        } catch (RuntimeException e) { // a header or URI the client refuses: this attempt fails, the delivery goes on
            return scrub(e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage()), hook);
        }
    }

    /** An error's text with the webhook's full URL (which may carry a secret) replaced by its safe form. */
    private static String scrub(String text, URI hook) {
        if (text == null) {
            return "";
        }
        String out = text.replace(hook.toString(), safe(hook));
        for (String part : new String[] {hook.getRawPath(), hook.getRawQuery(), hook.getRawUserInfo()}) {
            if (part != null && part.length() > 1) {
                out = out.replace(part, "…");
            }
        }
        return out;
    }
}
