package io.lockstep.redis;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * A real {@code redis-server} process on a free loopback port, for tests and the demo: the binary
 * on {@code PATH} when there is one, otherwise the one shipped in the
 * {@code com.github.codemonstur:embedded-redis} jar (add that jar to use the fallback). The
 * environment variable {@value #BINARY_ENV} overrides the choice: a path, or {@code embedded}.
 * Nothing is persisted. The process is killed on {@link #close()} and when the JVM exits.
 *
 * <p>It can be hurt on purpose: {@link #pause()} / {@link #resume()} (SIGSTOP / SIGCONT),
 * {@link #kill()} (SIGKILL) and {@link #restart()} on the same port.
 *
 * <p>Not thread-safe: one owner drives its lifecycle.
 */
public final class LocalRedisServer implements AutoCloseable {

    /** Names the binary to run: a path, or {@code embedded} for the one in the embedded-redis jar. */
    public static final String BINARY_ENV = "LOCKSTEP_REDIS_SERVER";
    private static final long START_TIMEOUT_MS = 10_000;

    private final Path binary;
    private final Path workDir;
    private final int port;
    private final List<String> extraArgs;
    private Process process;

    private LocalRedisServer(Path binary, Path workDir, int port, List<String> extraArgs) {
        this.binary = binary;
        this.workDir = workDir;
        this.port = port;
        this.extraArgs = List.copyOf(extraArgs);
    }

    /**
     * Starts a server on a free port.
     *
     * @param extraArgs further {@code redis-server} arguments, for example {@code --requirepass s3cret}
     * @throws IllegalStateException when no binary is found or the server does not answer in time
     */
    public static LocalRedisServer start(String... extraArgs) {
        return startWith(findBinary(), extraArgs);
    }

    /** Starts a server from the binary inside the embedded-redis jar, whatever is on {@code PATH}. */
    public static LocalRedisServer startEmbedded(String... extraArgs) {
        return startWith(embeddedBinary(), extraArgs);
    }

    private static LocalRedisServer startWith(Path binary, String... extraArgs) {
        IllegalStateException last = null;
        for (int attempt = 0; attempt < 3; attempt++) {
            try {
                Path dir = Files.createTempDirectory("lockstep-redis-");
                LocalRedisServer server = new LocalRedisServer(binary, dir, LocalPorts.free(), List.of(extraArgs));
                server.launch();
                return server;
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            } catch (IllegalStateException e) {
                last = e; // most likely the port was taken between probing and binding: try another
            }
        }
        throw last;
    }

    public int port() {
        return port;
    }

    public String host() {
        return "127.0.0.1";
    }

    /** {@code redis://127.0.0.1:<port>}. */
    public String uri() {
        return "redis://" + host() + ":" + port;
    }

    /** The process id of the running server. */
    public long pid() {
        return process.pid();
    }

    /** Which binary runs: a path on {@code PATH} or the extracted embedded one. */
    public Path binary() {
        return binary;
    }

    /** One line of {@code INFO commandstats}: how often a command ran, and for how long in all. */
    public record CommandStat(long calls, long usec) {}

    /**
     * What the server has executed so far, per command name ({@code INFO commandstats}), counting
     * the commands that ran inside scripts. The {@code HELLO} of the connection this call opens is
     * taken out again.
     */
    public java.util.Map<String, CommandStat> commandStats() {
        java.util.Map<String, CommandStat> stats = new java.util.HashMap<>();
        try (redis.clients.jedis.RedisClient client = redis.clients.jedis.RedisClient.create(host(), port)) {
            for (String line : client.info("commandstats").split("\r?\n")) {
                if (line.startsWith("cmdstat_")) {
                    stats.put(line.substring("cmdstat_".length(), line.indexOf(':')),
                            new CommandStat(field(line, "calls="), field(line, "usec=")));
                }
            }
        }
        stats.computeIfPresent("hello", (k, v) -> new CommandStat(v.calls() - 1, v.usec()));
        return stats;
    }

    private static long field(String line, String name) {
        String rest = line.substring(line.indexOf(name) + name.length());
        return Long.parseLong(rest.substring(0, rest.indexOf(',')));
    }

    /** How long the server has been up ({@code INFO server}'s {@code uptime_in_seconds}): Redlock's quarantine reads the same. */
    public long uptimeSeconds() {
        try (redis.clients.jedis.RedisClient client = redis.clients.jedis.RedisClient.create(host(), port)) {
            return client.info("server").lines().filter(l -> l.startsWith("uptime_in_seconds:"))
                    .mapToLong(l -> Long.parseLong(l.substring("uptime_in_seconds:".length()).trim())).findFirst().orElseThrow();
        }
    }

    /** SIGSTOP: the server stops answering but keeps its connections and data. */
    public void pause() {
        signal("STOP");
    }

    /** SIGCONT after {@link #pause()}. */
    public void resume() {
        signal("CONT");
    }

    /** SIGKILL: the server is gone with all its data (nothing is persisted). */
    public void kill() {
        if (process != null && process.isAlive()) {
            process.destroyForcibly();
            try {
                process.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Starts the server again on the same port, empty, after {@link #kill()}. */
    public void restart() {
        kill();
        launch();
    }

    @Override
    public void close() {
        kill();
    }

    private void launch() {
        List<String> command = new ArrayList<>(List.of(binary.toString(), "--port", Integer.toString(port),
                "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no",
                "--dir", workDir.toString()));
        command.addAll(extraArgs);
        long readyBefore = readyLines();
        try {
            process = new ProcessBuilder(command)
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(workDir.resolve("redis.log").toFile()))
                    .start();
        } catch (IOException e) {
            throw new IllegalStateException("cannot start " + binary + ": " + e.getMessage(), e);
        }
        Process started = process;
        Runtime.getRuntime().addShutdownHook(new Thread(started::destroyForcibly));
        long deadline = System.currentTimeMillis() + START_TIMEOUT_MS;
        while (System.currentTimeMillis() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException("redis-server on port " + port + " exited at start: " + log());
            }
            // Our own process must say it is ready: a PONG alone may come from another server that
            // holds the port (ours then fails to bind and exits a moment later).
            if (readyLines() > readyBefore && answers() && process.isAlive()) {
                return;
            }
            try {
                Thread.sleep(20); // polling a starting process; there is no event to wait on
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        process.destroyForcibly();
        throw new IllegalStateException("redis-server on port " + port + " did not answer within "
                + START_TIMEOUT_MS + " ms: " + log());
    }

    private boolean answers() {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(host(), port), 200);
            socket.setSoTimeout(500);
            OutputStream out = socket.getOutputStream();
            out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            byte[] buffer = new byte[64];
            int n = socket.getInputStream().read(buffer);
            // +PONG, or -NOAUTH when a password is required: either way the server is up.
            return n > 0 && (buffer[0] == '+' || buffer[0] == '-');
        } catch (IOException e) {
            return false;
        }
    }

    /** How often the log (appended to by every launch) says "Ready to accept connections". */
    private long readyLines() {
        try (java.util.stream.Stream<String> lines = Files.lines(workDir.resolve("redis.log"), StandardCharsets.ISO_8859_1)) {
            return lines.filter(l -> l.contains("Ready to accept connections")).count();
        } catch (IOException e) {
            return 0; // no log yet
        }
    }

    private String log() {
        try {
            List<String> lines = Files.readAllLines(workDir.resolve("redis.log"));
            return String.join(" | ", lines.subList(Math.max(0, lines.size() - 3), lines.size()));
        } catch (IOException e) {
            return "(no log)";
        }
    }

    private void signal(String signal) {
        try {
            Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).inheritIO().start();
            if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
                throw new IllegalStateException("kill -" + signal + " " + process.pid() + " failed");
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while signalling redis-server", e);
        }
    }

    /** {@value #BINARY_ENV} if set, else the {@code redis-server} on PATH, else the embedded one. */
    static Path findBinary() {
        String chosen = System.getenv(BINARY_ENV);
        if (chosen != null && !chosen.isBlank()) {
            return chosen.equals("embedded") ? embeddedBinary() : Path.of(chosen);
        }
        Optional<Path> onPath = onPath("redis-server");
        if (onPath.isPresent()) {
            return onPath.get();
        }
        return embeddedBinary();
    }

    private static Path extracted;

    /** The binary shipped in the embedded-redis jar, extracted once to a temporary executable file. */
    private static synchronized Path embeddedBinary() {
        if (extracted == null || !Files.isExecutable(extracted)) {
            extracted = extractEmbedded();
        }
        return extracted;
    }

    private static Path extractEmbedded() {
        String arch = System.getProperty("os.arch").toLowerCase(Locale.ROOT);
        String os = System.getProperty("os.name").toLowerCase(Locale.ROOT);
        String resource;
        if (os.contains("linux") && (arch.equals("amd64") || arch.equals("x86_64"))) {
            resource = "/redis-server-6.2.6-v5-linux-amd64";
        } else if (os.contains("linux") && arch.equals("aarch64")) {
            resource = "/redis-server-6.2.7-linux-arm64";
        } else if (os.contains("mac") && arch.equals("aarch64")) {
            resource = "/redis-server-6.2.6-v5-darwin-arm64";
        } else if (os.contains("mac")) {
            resource = "/redis-server-6.2.6-v5-darwin-amd64";
        } else {
            throw new IllegalStateException("no redis-server on PATH and no embedded binary for " + os + "/" + arch);
        }
        try (InputStream in = LocalRedisServer.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("no redis-server on PATH, and the embedded-redis jar "
                        + "(com.github.codemonstur:embedded-redis) is not on the class path");
            }
            Path file = Files.createTempFile("lockstep-redis-server-", "");
            Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
            if (!file.toFile().setExecutable(true)) {
                throw new IllegalStateException("cannot make " + file + " executable");
            }
            file.toFile().deleteOnExit();
            return file;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Optional<Path> onPath(String name) {
        String path = System.getenv("PATH");
        if (path == null) {
            return Optional.empty();
        }
        for (String dir : path.split(java.io.File.pathSeparator)) {
            Path candidate = Path.of(dir, name);
            if (Files.isExecutable(candidate)) {
                return Optional.of(candidate);
            }
        }
        return Optional.empty();
    }
}
