package io.lockstep.worker;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.lockstep.redis.RedisAdmin;
import io.lockstep.redis.RedisLockProvider;
import io.lockstep.scheduler.Scheduler;
import io.lockstep.scheduler.config.LockstepConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;
import java.util.function.Supplier;

/**
 * The worker's HTTP endpoints ({@code worker.http}), on the JDK's own server: {@code /metrics}
 * (Prometheus text), {@code /health/live}, {@code /health/ready} (503 while the lock store is
 * unreachable or the worker is not claiming), {@code /status.json} (what {@code status --json}
 * prints) and {@code /}, a status page that renders it and refreshes itself. Read-only: any method
 * but GET and HEAD answers 405, and nothing here changes state.
 *
 * <p>An application that embeds the scheduler serves the same endpoints with
 * {@link #start(LockstepConfig, Scheduler, RedisLockProvider, PrometheusMeterRegistry)} (it needs
 * the {@code lockstep-worker} artifact; its Logback dependency is optional, so yours stays yours).
 */
public final class WorkerHttp implements AutoCloseable {

    private static final ObjectMapper JSON = new ObjectMapper();

    private final HttpServer server;
    private final java.util.concurrent.ExecutorService executor;

    private WorkerHttp(HttpServer server, java.util.concurrent.ExecutorService executor) {
        this.server = server;
        this.executor = executor;
    }

    /**
     * Serves the endpoints of {@code scheduler} on {@code config}'s {@code worker.http} bind and port
     * (port 0: any free one, see {@link #port()}) until closed: {@code registry} is scraped at
     * {@code /metrics} (the scheduler's meters go there when it was built with it), the status is
     * read through {@code provider} at most every 2 s.
     *
     * @throws UncheckedIOException when the address cannot be bound
     */
    public static WorkerHttp start(LockstepConfig config, Scheduler scheduler, RedisLockProvider provider, PrometheusMeterRegistry registry) {
        RedisAdmin admin = RedisAdmin.of(provider);
        ObjectMapper mapper = new ObjectMapper();
        long[] readAt = {0};
        String[] last = {null};
        Supplier<String> status = () -> {
            synchronized (readAt) {
                if (last[0] == null || System.nanoTime() - readAt[0] > 2_000_000_000L) {
                    // The definitions in force, not the startup config's: a SIGHUP reload changes them (F5 of the 2026-12-04 trial).
                    last[0] = StatusCommand.Snapshot.read(scheduler.definitions(), admin).toJson(mapper).toString();
                    readAt[0] = System.nanoTime();
                }
                return last[0];
            }
        };
        return start(config.worker().httpBind(), config.worker().httpPort(), scheduler, registry, status);
    }

    /**
     * Binds {@code bind:port} and serves until closed.
     *
     * @throws UncheckedIOException when the address cannot be bound (in use, not an address of this host)
     */
    static WorkerHttp start(String bind, int port, Scheduler scheduler, PrometheusMeterRegistry registry,
            Supplier<String> statusJson) {
        HttpServer server;
        try {
            server = HttpServer.create(new InetSocketAddress(bind, port), 16);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot listen on " + bind + ":" + port + " (worker.http): " + e.getMessage(), e);
        }
        server.createContext("/metrics", ex -> send(ex, 200, "text/plain; version=0.0.4; charset=utf-8", registry::scrape));
        server.createContext("/health/live", ex -> health(ex, scheduler.health(), scheduler.health().live()));
        server.createContext("/health/ready", ex -> health(ex, scheduler.health(), scheduler.health().ready()));
        server.createContext("/status.json", ex -> send(ex, 200, "application/json", statusJson));
        server.createContext("/", ex -> {
            if (!ex.getRequestURI().getPath().equals("/")) {
                send(ex, 404, "text/plain; charset=utf-8", () -> "not found\n");
                return;
            }
            send(ex, 200, "text/html; charset=utf-8", WorkerHttp::page);
        });
        java.util.concurrent.ExecutorService executor = Executors.newFixedThreadPool(2, r -> {
            Thread t = new Thread(r, "lockstep-http");
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(executor);
        server.start();
        return new WorkerHttp(server, executor);
    }

    /** The port it listens on (the one asked for, or the one chosen for 0). */
    public int port() {
        return server.getAddress().getPort();
    }

    private static void health(HttpExchange ex, Scheduler.Health h, boolean ok) throws IOException {
        String body = JSON.createObjectNode().put("status", ok ? "up" : "down").put("reason", h.reason()).toString();
        send(ex, ok ? 200 : 503, "application/json", () -> body);
    }

    private static void send(HttpExchange ex, int status, String type, Supplier<String> body) throws IOException {
        try (ex) {
            String method = ex.getRequestMethod();
            if (!method.equals("GET") && !method.equals("HEAD")) {
                ex.getResponseHeaders().set("Allow", "GET, HEAD");
                ex.sendResponseHeaders(405, -1);
                return;
            }
            byte[] bytes;
            int code = status;
            try {
                bytes = body.get().getBytes(StandardCharsets.UTF_8);
            } catch (RuntimeException e) { // Redis down while the status is read, say
                bytes = JSON.createObjectNode().put("error", String.valueOf(e.getMessage())).toString().getBytes(StandardCharsets.UTF_8);
                code = 503;
                type = "application/json";
            }
            ex.getResponseHeaders().set("Content-Type", type);
            ex.getResponseHeaders().set("Cache-Control", "no-store");
            if (method.equals("HEAD")) {
                ex.sendResponseHeaders(code, -1);
                return;
            }
            ex.sendResponseHeaders(code, bytes.length);
            ex.getResponseBody().write(bytes);
        }
    }

    private static String page() {
        try (InputStream in = WorkerHttp.class.getResourceAsStream("status.html")) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}
