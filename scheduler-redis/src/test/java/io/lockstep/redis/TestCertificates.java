package io.lockstep.redis;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A throwaway CA with a server certificate (SAN {@code 127.0.0.1}, {@code localhost}) and a client
 * certificate, made with the {@code openssl} command into a folder. Keys are PKCS#8 PEM.
 */
public final class TestCertificates {

    public final Path dir;

    private TestCertificates(Path dir) {
        this.dir = dir;
    }

    /** Whether {@code openssl} is here. */
    public static boolean available() {
        try {
            return new ProcessBuilder("openssl", "version").redirectErrorStream(true).start().waitFor(10, TimeUnit.SECONDS);
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private static Boolean redisTls;

    /**
     * Whether the {@code redis-server} the tests start ({@link LocalRedisServer}'s choice) was built
     * with TLS, decided from the binary alone (it links OpenSSL's {@code SSL_CTX_new}), before and
     * without any test's certificates or arguments: a TLS test skips only when this is false, and
     * any other failure to start its server fails it.
     */
    public static synchronized boolean redisServerHasTls() {
        if (redisTls == null) {
            try {
                byte[] binary = Files.readAllBytes(LocalRedisServer.findBinary());
                redisTls = indexOf(binary, "SSL_CTX_new".getBytes(java.nio.charset.StandardCharsets.US_ASCII)) >= 0;
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        return redisTls;
    }

    private static int indexOf(byte[] haystack, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= haystack.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (haystack[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    /** A CA named {@code name} with its server and client certificates, in a new folder. */
    public static TestCertificates make(String name) {
        try {
            Path dir = Files.createTempDirectory("lockstep-tls-");
            TestCertificates c = new TestCertificates(dir);
            c.run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=" + name,
                    "-keyout", "ca.key", "-out", "ca.crt");
            Files.writeString(dir.resolve("san.ext"), "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
            for (String who : List.of("server", "client")) {
                c.run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=" + who, "-keyout", who + ".key",
                        "-out", who + ".csr");
                c.run("openssl", "x509", "-req", "-in", who + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                        "-days", "2", "-extfile", "san.ext", "-out", who + ".crt");
            }
            return c;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public Path ca() {
        return dir.resolve("ca.crt");
    }

    public Path cert(String who) {
        return dir.resolve(who + ".crt");
    }

    public Path key(String who) {
        return dir.resolve(who + ".key");
    }

    /** The server arguments for a TLS port beside the plain one, client certificates {@code required}. */
    public List<String> serverArgs(int tlsPort, boolean clientCertRequired) {
        return new ArrayList<>(List.of("--tls-port", Integer.toString(tlsPort), "--tls-cert-file", cert("server").toString(),
                "--tls-key-file", key("server").toString(), "--tls-ca-cert-file", ca().toString(),
                "--tls-auth-clients", clientCertRequired ? "yes" : "optional"));
    }

    private void run(String... command) throws IOException {
        Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes());
        try {
            if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IllegalStateException(String.join(" ", command) + " failed: " + output);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
