package io.lockstep.redis;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A TCP proxy in the test's JVM, on a free loopback port in front of one Redis, that hurts the
 * traffic on command: replies dropped after Redis executed the request ({@link #dropReplies}),
 * replies held back ({@link #delayReplies}), or the link cut both ways ({@link #cut}: nothing
 * passes, connections hang as behind a firewall that drops packets). For faults that {@code kill}
 * cannot make: lost replies, and one worker cut off while its peers are not. Thread-safe.
 */
public final class TcpProxy implements AutoCloseable {

    private final ServerSocket server;
    private final String targetHost;
    private final int targetPort;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private volatile boolean dropReplies;
    private volatile boolean cut;
    private volatile long delayMillis;
    private volatile long delayRequestsMillis;
    private final AtomicLong repliesDropped = new AtomicLong();
    private volatile boolean closed;

    private TcpProxy(String targetHost, int targetPort) throws IOException {
        this.targetHost = targetHost;
        this.targetPort = targetPort;
        this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread accept = new Thread(this::accept, "tcp-proxy-" + server.getLocalPort());
        accept.setDaemon(true);
        accept.start();
    }

    /** A proxy in front of {@code host:port}, forwarding everything until told otherwise. */
    public static TcpProxy to(String host, int port) {
        try {
            return new TcpProxy(host, port);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public int port() {
        return server.getLocalPort();
    }

    public String uri() {
        return "redis://127.0.0.1:" + port();
    }

    /** Requests still reach Redis (and run there); their replies are thrown away. */
    public TcpProxy dropReplies(boolean drop) {
        this.dropReplies = drop;
        return this;
    }

    /** Every reply is held back this long before it is passed on. */
    public TcpProxy delayReplies(long millis) {
        this.delayMillis = millis;
        return this;
    }

    /** Nothing passes either way; new connections are accepted but hang. */
    /** Holds every request back this long before passing it on (replies pass at once). */
    public TcpProxy delayRequests(long millis) {
        this.delayRequestsMillis = millis;
        return this;
    }

    public TcpProxy cut(boolean cut) {
        this.cut = cut;
        return this;
    }

    /** How many reply chunks were thrown away so far. */
    public long repliesDropped() {
        return repliesDropped.get();
    }

    private void accept() {
        while (!closed) {
            try {
                Socket client = server.accept();
                client.setTcpNoDelay(true);
                Socket upstream = new Socket(targetHost, targetPort);
                upstream.setTcpNoDelay(true);
                sockets.add(client);
                sockets.add(upstream);
                pump(client, upstream, false);
                pump(upstream, client, true);
            } catch (IOException e) {
                if (closed) {
                    return;
                }
            }
        }
    }

    private void pump(Socket from, Socket to, boolean replies) {
        Thread t = new Thread(() -> {
            byte[] buffer = new byte[64 * 1024];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                int n;
                while ((n = in.read(buffer)) != -1) {
                    while (cut && !closed) {
                        Thread.onSpinWait();
                        java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
                    }
                    if (replies && dropReplies) {
                        repliesDropped.incrementAndGet();
                        continue;
                    }
                    long delay = replies ? delayMillis : delayRequestsMillis;
                    if (delay > 0) {
                        java.util.concurrent.locks.LockSupport.parkNanos(delay * 1_000_000);
                    }
                    out.write(buffer, 0, n);
                    out.flush();
                }
            } catch (IOException e) {
                // one side closed: close the other
            } finally {
                closeQuietly(from);
                closeQuietly(to);
            }
        }, "tcp-proxy-pump");
        t.setDaemon(true);
        t.start();
    }

    /** Closes every connection through the proxy (clients see a reset), but keeps accepting. */
    public void resetConnections() {
        sockets.forEach(TcpProxy::closeQuietly);
        sockets.clear();
    }

    @Override
    public void close() {
        closed = true;
        closeQuietly(server);
        resetConnections();
    }

    private static void closeQuietly(java.io.Closeable c) {
        try {
            c.close();
        } catch (IOException e) {
            // closing anyway
        }
    }
}
