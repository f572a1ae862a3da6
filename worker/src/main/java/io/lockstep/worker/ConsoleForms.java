package io.lockstep.worker;

import io.lockstep.scheduler.config.HttpUser;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The console's defence against cross-site requests: a token per form, and a cookie.
 *
 * <p>Each page load gives the browser a random cookie ({@value #COOKIE}, {@code SameSite=Strict},
 * {@code HttpOnly}; a browser sends it on no request another site starts) and each form a token:
 * an HMAC over the user, the form (its action), the time it was issued and that cookie. A POST is
 * taken only with its form's token, for the same user, the same cookie, within {@link #VALID_FOR}.
 * A page of another site can neither read the token nor send the cookie.
 *
 * <p>The HMAC key is derived from the users file (its names, roles and hashes), which every worker
 * of the cluster reads: a form served by one worker may be posted to another behind a load
 * balancer. Whoever can read that file could forge tokens, but could as well read the hashes in
 * it: keep it readable by the worker only. Thread-safe.
 */
final class ConsoleForms {

    static final String COOKIE = "lockstep_csrf";
    static final long VALID_FOR = 12 * 3600;
    private static final SecureRandom RANDOM = new SecureRandom();

    private volatile SecretKeySpec key;

    ConsoleForms(List<HttpUser> users) {
        this.key = keyOf(users);
    }

    /**
     * Puts a reloaded users file in force: its key signs the forms from now on, and the forms of
     * pages served before no longer pass (their page is loaded again).
     */
    void replace(List<HttpUser> users) {
        key = keyOf(users);
    }

    private static SecretKeySpec keyOf(List<HttpUser> users) {
        StringBuilder material = new StringBuilder("lockstep console forms v1\n");
        users.forEach(u -> material.append(u.name()).append(':').append(u.role()).append(':').append(u.hash()).append('\n'));
        return new SecretKeySpec(ConsoleAuth.sha256(material.toString()).getBytes(StandardCharsets.US_ASCII), "HmacSHA256");
    }

    /** A new cookie value for a browser that has none. */
    static String newCookie() {
        byte[] b = new byte[18];
        RANDOM.nextBytes(b);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(b);
    }

    /** The {@code Set-Cookie} header value that gives a browser {@code cookie}. */
    static String setCookie(String cookie) {
        return COOKIE + "=" + cookie + "; Path=/; HttpOnly; SameSite=Strict";
    }

    /** The cookie of a request's {@code Cookie} header; empty when it has none (or a malformed one). */
    static Optional<String> cookieOf(String header) {
        if (header == null) {
            return Optional.empty();
        }
        for (String part : header.split(";")) {
            String p = part.strip();
            if (p.startsWith(COOKIE + "=")) {
                String value = p.substring(COOKIE.length() + 1);
                return value.matches("[A-Za-z0-9_-]{16,64}") ? Optional.of(value) : Optional.empty();
            }
        }
        return Optional.empty();
    }

    /** The token of {@code form} for {@code user} with {@code cookie}, issued at {@code epochSecond}. */
    String token(String user, String form, String cookie, long epochSecond) {
        return epochSecond + "." + mac(user, form, cookie, epochSecond);
    }

    /** Whether {@code token} was issued for this user, form and cookie, no longer than {@link #VALID_FOR} before {@code nowSecond}. */
    boolean valid(String token, String user, String form, String cookie, long nowSecond) {
        if (token == null || cookie == null) {
            return false;
        }
        int dot = token.indexOf('.');
        if (dot < 1) {
            return false;
        }
        long issued;
        try {
            issued = Long.parseLong(token.substring(0, dot));
        } catch (NumberFormatException e) {
            return false;
        }
        if (issued > nowSecond + 60 || nowSecond - issued > VALID_FOR) {
            return false;
        }
        return MessageDigest.isEqual(token.substring(dot + 1).getBytes(StandardCharsets.US_ASCII),
                mac(user, form, cookie, issued).getBytes(StandardCharsets.US_ASCII));
    }

    private String mac(String user, String form, String cookie, long issued) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(key);
            byte[] out = mac.doFinal((user + "\n" + form + "\n" + cookie + "\n" + issued).getBytes(StandardCharsets.UTF_8));
            return Base64.getUrlEncoder().withoutPadding().encodeToString(out);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e); // every JDK has HmacSHA256
        }
    }
}
