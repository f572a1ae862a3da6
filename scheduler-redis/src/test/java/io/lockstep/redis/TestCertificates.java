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
