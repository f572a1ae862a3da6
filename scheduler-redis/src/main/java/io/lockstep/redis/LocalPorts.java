package io.lockstep.redis;

import java.io.IOException;
import java.net.ServerSocket;

/**
 * Loopback ports for the local servers of tests and the demo ({@link LocalRedisServer},
 * {@link LocalCluster}'s buses, Sentinels): the kernel's free ones, or those of a range the build
 * gives each test JVM ({@value #PROPERTY}).
 */
public final class LocalPorts {

    /** A range of ports ({@code FROM-TO}) to draw from instead of the kernel's: see {@link #free()}. */
    public static final String PROPERTY = "lockstep.localRedis.ports";
    private static final java.util.Set<Integer> HANDED_OUT = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private static final java.util.concurrent.atomic.AtomicBoolean WARNED = new java.util.concurrent.atomic.AtomicBoolean();

    private LocalPorts() {}

    /**
     * A loopback port nothing listens on, for a server (or a cluster bus, or a Sentinel). By default
     * the kernel picks one. With the system property {@value #PROPERTY} set to {@code FROM-TO},
     * it is drawn from that range instead and never handed out twice in this JVM: the builds that run
     * tests in several JVMs at once give each JVM its own range below the kernel's ephemeral ports, so
     * a server that is killed and restarted on its port cannot lose it meanwhile to another JVM's new
     * server or to a client connection's local port. The walk through the range starts at a random
     * port, so two builds on one machine given the same ranges do not follow each other port by
     * port. A value that is not such a range (1 to 65535, FROM not above TO) is ignored: the kernel
     * picks.
     */
    public static int free() throws IOException {
        String text = System.getProperty(PROPERTY, "");
        int[] range = range(text);
        if (range == null && !text.isBlank() && WARNED.compareAndSet(false, true)) {
            System.err.println("lockstep: " + PROPERTY + "=" + text + " is not a range of ports like 21000-21999: the kernel picks them");
        }
        if (range == null) {
            try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
                socket.setReuseAddress(true);
                return socket.getLocalPort();
            }
        }
        int size = range[1] - range[0] + 1;
        int offset = java.util.concurrent.ThreadLocalRandom.current().nextInt(size);
        for (int i = 0; i < size; i++) {
            int port = range[0] + (offset + i) % size;
            if (!HANDED_OUT.add(port)) {
                continue;
            }
            try (ServerSocket socket = new ServerSocket(port, 1, java.net.InetAddress.getLoopbackAddress())) {
                return port;
            } catch (IOException taken) {
                // something else listens there: the next one
            }
        }
        throw new IOException("no free port left in " + PROPERTY + "=" + range[0] + "-" + range[1]);
    }

    /** {@code FROM-TO} as two ports, or null when it is not a range of ports (unset, unresolved, out of bounds). */
    static int[] range(String text) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("\\s*(\\d{1,5})\\s*-\\s*(\\d{1,5})\\s*").matcher(text);
        if (!m.matches()) {
            return null;
        }
        int from = Integer.parseInt(m.group(1));
        int to = Integer.parseInt(m.group(2));
        return from >= 1 && to <= 65_535 && from <= to ? new int[] {from, to} : null;
    }
}
