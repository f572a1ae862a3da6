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
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import io.lockstep.scheduler.config.HttpUser;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.function.Supplier;

/**
 * The worker's HTTP endpoints ({@code worker.http}), on the JDK's own server: {@code /metrics}
 * (Prometheus text), {@code /health/live}, {@code /health/ready} (503 while the lock store is
 * unreachable or the worker is not claiming), {@code /status.json} (what {@code status --json}
 * prints) and {@code /}, a status page that renders it and refreshes itself. Without
 * {@code worker.http.auth} it is read-only: any method but GET and HEAD answers 405, and nothing
 * here changes state. With it, every endpoint but the two health probes needs a user of the users
 * file (basic or bearer; 401 otherwise), and an operator gets the page's actions ({@link Console}).
 *
 * <p>An application that embeds the scheduler serves the same endpoints with
 * {@link #start(LockstepConfig, Scheduler, RedisLockProvider, PrometheusMeterRegistry)} (it needs
 * the {@code lockstep-worker} artifact; its Logback dependency is optional, so yours stays yours).
 */
public final class WorkerHttp implements AutoCloseable {

    private static final ObjectMapper JSON = new ObjectMapper();

    private final HttpServer server;
    private final java.util.concurrent.ExecutorService executor;
    /** Who may use the endpoints, and the forms' key; null when served without {@code worker.http.auth}. */
    private final ConsoleAuth auth;
    private final ConsoleForms forms;

    private WorkerHttp(HttpServer server, java.util.concurrent.ExecutorService executor, ConsoleAuth auth, ConsoleForms forms) {
        this.server = server;
        this.executor = executor;
        this.auth = auth;
        this.forms = forms;
    }

    /**
     * Puts a reloaded users file in force without a restart (the worker's SIGHUP): a user removed,
     * a password or role changed counts from the next request, nothing proved before is remembered,
     * and forms served before must be loaded again. Turning authentication on or off takes a
     * restart: false then, and nothing changes.
     */
    boolean replaceUsers(List<HttpUser> users) {
        if (auth == null || users.isEmpty()) {
            return false;
        }
        auth.replace(users);
        forms.replace(users);
        return true;
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
        Runnable changed = () -> { // an action was taken: the next page shows it, not a status up to 2 s old
            synchronized (readAt) {
                last[0] = null;
            }
        };
        List<HttpUser> users = config.worker().httpUsers();
        String bind = config.worker().httpBind();
        if (!users.isEmpty() && !(bind.equals("127.0.0.1") || bind.equals("::1") || bind.equals("localhost"))) {
            org.slf4j.LoggerFactory.getLogger("io.lockstep.events").atWarn().addKeyValue("event", "console_without_tls")
                    .addKeyValue("worker", scheduler.workerId()).addKeyValue("bind", bind)
                    .log("worker.http.auth on {}: the worker serves plain HTTP; put a proxy that terminates TLS in front", bind);
        }
        ConsoleForms forms = users.isEmpty() ? null : new ConsoleForms(users);
        Console console = users.isEmpty() ? null : new Console(forms, admin, scheduler::definitions, scheduler.workerId(), changed);
        return start(config.worker().httpBind(), config.worker().httpPort(), scheduler, registry, status, users, forms, console);
    }

    /**
     * Binds {@code bind:port} and serves until closed, without authentication (read-only).
     *
     * @throws UncheckedIOException when the address cannot be bound (in use, not an address of this host)
     */
    static WorkerHttp start(String bind, int port, Scheduler scheduler, PrometheusMeterRegistry registry,
            Supplier<String> statusJson) {
        return start(bind, port, scheduler, registry, statusJson, List.of(), null, null);
    }

    private static WorkerHttp start(String bind, int port, Scheduler scheduler, PrometheusMeterRegistry registry,
            Supplier<String> statusJson, List<HttpUser> users, ConsoleForms forms, Console console) {
        HttpServer server;
        try {
            server = HttpServer.create(new InetSocketAddress(bind, port), 16);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot listen on " + bind + ":" + port + " (worker.http): " + e.getMessage(), e);
        }
        ConsoleAuth auth = users.isEmpty() ? null : new ConsoleAuth(users);
        // Probes stay open: they say up or down, nothing more, and a kubelet has no password.
        server.createContext("/health/live", answering(ex -> health(ex, scheduler.health(), scheduler.health().live())));
        server.createContext("/health/ready", answering(ex -> health(ex, scheduler.health(), scheduler.health().ready())));
        server.createContext("/metrics", answering(guarded(auth, (ex, user) -> send(ex, 200, "text/plain; version=0.0.4; charset=utf-8", registry::scrape))));
        server.createContext("/status.json", answering(guarded(auth, (ex, user) -> send(ex, 200, "application/json", statusJson))));
        if (console != null) {
            server.createContext("/actions/", answering(guarded(auth, (ex, user) -> action(ex, console, user))));
        }
        server.createContext("/", answering(guarded(auth, (ex, user) -> {
            if (!ex.getRequestURI().getPath().equals("/")) {
                send(ex, 404, "text/plain; charset=utf-8", () -> "not found\n");
                return;
            }
            String cookie = null;
            if (forms != null && user.operator()) { // the forms' cookie: kept while the browser has one
                cookie = ConsoleForms.cookieOf(ex.getRequestHeaders().getFirst("Cookie")).orElse(null);
                if (cookie == null) {
                    cookie = ConsoleForms.newCookie();
                    ex.getResponseHeaders().add("Set-Cookie", ConsoleForms.setCookie(cookie));
                }
            }
            String json;
            try {
                json = statusJson.get();
            } catch (RuntimeException e) { // Redis down: the page still comes, and its script says why
                json = null;
            }
            String page = Console.page(json, user, Console.query(ex.getRequestURI().getRawQuery()),
                    scheduler.definitions().stream().map(d -> d.name()).toList(), forms, cookie);
            ex.getResponseHeaders().set("X-Frame-Options", "DENY"); // no clickjacking of the buttons
            ex.getResponseHeaders().set("Content-Security-Policy", "frame-ancestors 'none'");
            send(ex, 200, "text/html; charset=utf-8", () -> page);
        })));
        java.util.concurrent.ExecutorService executor = Executors.newFixedThreadPool(4, r -> { // bcrypt takes one of them at most (ConsoleAuth): the probes keep the others
            Thread t = new Thread(r, "lockstep-http");
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(executor);
        server.start();
        return new WorkerHttp(server, executor, auth, forms);
    }

    /** A handler that sees who asks: with {@code auth}, a request without valid credentials gets 401 and goes no further. */
    private interface Authenticated {
        void handle(HttpExchange ex, HttpUser user) throws IOException;
    }

    private static com.sun.net.httpserver.HttpHandler guarded(ConsoleAuth auth, Authenticated handler) {
        return ex -> {
            if (auth == null) {
                handler.handle(ex, null);
                return;
            }
            String header = ex.getRequestHeaders().getFirst("Authorization");
            Optional<HttpUser> user;
            try {
                user = auth.authenticate(header);
            } catch (ConsoleAuth.Busy e) {
                try (ex) {
                    ex.getResponseHeaders().set("Retry-After", "5");
                    ex.sendResponseHeaders(503, -1);
                }
                return;
            }
            if (user.isEmpty()) {
                if (header != null) {
                    org.slf4j.LoggerFactory.getLogger("io.lockstep.events").atWarn().addKeyValue("event", "console_refused")
                            .addKeyValue("path", ex.getRequestURI().getRawPath())
                            .addKeyValue("remote", ex.getRemoteAddress() == null ? "" : ex.getRemoteAddress().getAddress().getHostAddress())
                            .log("wrong credentials for {}", ex.getRequestURI().getRawPath());
                }
                try (ex) {
                    ex.getRequestBody().readNBytes(64 * 1024);
                    ex.getResponseHeaders().set("WWW-Authenticate", "Basic realm=\"lockstep\", charset=\"UTF-8\"");
                    byte[] body = "credentials needed (worker.http.auth)\n".getBytes(StandardCharsets.UTF_8);
                    ex.getResponseHeaders().set("Content-Type", "text/plain; charset=utf-8");
                    ex.sendResponseHeaders(401, body.length);
                    ex.getResponseBody().write(body);
                }
                return;
            }
            handler.handle(ex, user.get());
        };
    }

    /** Any failure of a handler still answers (500, logged), instead of a dropped connection and a TRACE line. */
    private static com.sun.net.httpserver.HttpHandler answering(com.sun.net.httpserver.HttpHandler handler) {
        return ex -> {
            try {
                handler.handle(ex);
            } catch (RuntimeException e) {
                org.slf4j.LoggerFactory.getLogger("io.lockstep.events").atError().addKeyValue("event", "http_failed")
                        .addKeyValue("path", ex.getRequestURI().getRawPath()).addKeyValue("error", String.valueOf(e))
                        .log("the HTTP endpoint failed: {}", e.toString());
                try (ex) {
                    ex.sendResponseHeaders(500, -1);
                } catch (IOException | RuntimeException ignored) {
                    // the answer had begun: the connection is closed
                }
            }
        };
    }

    private static void action(HttpExchange ex, Console console, HttpUser user) throws IOException {
        try (ex) {
            if (!ex.getRequestMethod().equals("POST")) {
                ex.getResponseHeaders().set("Allow", "POST");
                ex.sendResponseHeaders(405, -1);
                return;
            }
            Console.Answer a = console.act(ex, user);
            ex.getResponseHeaders().set("Cache-Control", "no-store");
            if (a.location() != null) {
                ex.getResponseHeaders().set("Location", a.location());
                ex.sendResponseHeaders(a.status(), -1);
                return;
            }
            byte[] body = ("<!doctype html><meta charset=\"utf-8\"><title>Lockstep</title><p id=\"answer\">" + Console.escape(a.line())
                    + "</p><p><a href=\"../\">Back to the status page</a></p>\n").getBytes(StandardCharsets.UTF_8);
            ex.getResponseHeaders().set("Content-Type", "text/html; charset=utf-8");
            ex.sendResponseHeaders(a.status(), body.length);
            ex.getResponseBody().write(body);
        }
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

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}
