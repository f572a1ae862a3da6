package io.lockstep.worker;

import io.lockstep.scheduler.config.HttpUser;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.security.crypto.bcrypt.BCrypt;

/**
 * Who a request to the worker's HTTP endpoints is ({@code worker.http.auth.users}): HTTP basic
 * authentication against bcrypt hashes, or a bearer token against its SHA-256. Thread-safe.
 *
 * <p>Wrong credentials cost what right ones do: a name nobody has is checked against a bcrypt hash
 * of the file's highest cost, a token against every token's hash, with constant-time compares, so
 * the time of a refusal does not say whether the name exists. A check that passed is remembered
 * for {@link #REMEMBERED} (by a SHA-256 of the header, never the header), so a page refreshing
 * every 3 s costs one bcrypt a minute, not twenty; wrong credentials are never remembered.
 *
 * <p>One bcrypt at a time: a flood of guesses takes one HTTP thread, not all of them, so the
 * health probes still answer; a guess that waits {@link #BUSY_WAIT_MS} for its turn is answered 503
 * ({@link Busy}).
 */
final class ConsoleAuth {

    /** How long a header that passed is taken without another bcrypt. */
    static final long REMEMBERED = 60_000_000_000L;
    private static final int REMEMBER_AT_MOST = 1000;

    /** The users file in force: replaced whole by {@link #replace}. */
    private volatile Users users;
    private final ConcurrentHashMap<String, Remembered> passed = new ConcurrentHashMap<>();
    private final java.util.concurrent.Semaphore bcrypt = new java.util.concurrent.Semaphore(1, true);
    private final java.util.concurrent.atomic.AtomicLong bcrypts = new java.util.concurrent.atomic.AtomicLong();

    /** How long a password check waits for the one bcrypt at a time. */
    static final long BUSY_WAIT_MS = 5_000;

    /** Too many password checks at once: answered 503, checked by nobody. */
    static final class Busy extends RuntimeException {
        Busy() {
            super("too many password checks at once", null, false, false);
        }
    }

    /**
     * One users file: password users by name, token users, and a bcrypt hash nobody's password
     * matches, at the file's highest cost, that an unknown name is checked against.
     */
    private record Users(Map<String, HttpUser> passwords, List<HttpUser> tokens, String decoy) {

        static Users of(List<HttpUser> list) {
            Map<String, HttpUser> passwords = new LinkedHashMap<>();
            int cost = HttpUser.MIN_COST;
            for (HttpUser u : list) {
                if (!u.token()) {
                    passwords.put(u.name(), u);
                    cost = Math.max(cost, Integer.parseInt(u.hash().substring(4, 6)));
                }
            }
            return new Users(passwords, list.stream().filter(HttpUser::token).toList(),
                    BCrypt.hashpw(java.util.UUID.randomUUID().toString(), BCrypt.gensalt(cost)));
        }
    }

    /** A header that passed: whom it proved, when, and under which users file (another file does not take it). */
    private record Remembered(HttpUser user, long at, Users under) {}

    ConsoleAuth(List<HttpUser> users) {
        this.users = Users.of(users);
    }

    /**
     * Puts a reloaded users file in force: from the next request on, a removed user, a changed
     * password or a changed role counts, and nothing proved under the file before is remembered.
     */
    void replace(List<HttpUser> list) {
        users = Users.of(list);
        passed.clear();
    }

    /** The user an {@code Authorization} header proves; empty when absent, malformed or wrong. */
    Optional<HttpUser> authenticate(String authorization) {
        if (authorization == null || authorization.isBlank()) {
            return Optional.empty();
        }
        String key = sha256(authorization);
        long now = System.nanoTime();
        Users in = users;
        Remembered r = passed.get(key);
        if (r != null && r.under == in && now - r.at < REMEMBERED) {
            return Optional.of(r.user);
        }
        Optional<HttpUser> user = check(authorization.strip(), in);
        if (user.isPresent()) {
            if (passed.size() >= REMEMBER_AT_MOST) {
                passed.clear();
            }
            passed.put(key, new Remembered(user.get(), now, in)); // under a file replaced meanwhile: never taken
        }
        return user;
    }

    private Optional<HttpUser> check(String authorization, Users in) {
        int space = authorization.indexOf(' ');
        String scheme = space < 0 ? authorization : authorization.substring(0, space);
        String value = space < 0 ? "" : authorization.substring(space + 1).strip();
        if (scheme.equalsIgnoreCase("Bearer")) {
            byte[] presented = sha256(value).getBytes(StandardCharsets.US_ASCII);
            HttpUser found = null;
            for (HttpUser t : in.tokens) { // every one, whichever matches: the time does not say which
                if (MessageDigest.isEqual(presented, t.hash().substring("sha256:".length()).getBytes(StandardCharsets.US_ASCII))) {
                    found = t;
                }
            }
            return Optional.ofNullable(found);
        }
        if (!scheme.equalsIgnoreCase("Basic")) {
            return Optional.empty();
        }
        String pair;
        try {
            pair = new String(Base64.getDecoder().decode(value), StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            return Optional.empty();
        }
        int colon = pair.indexOf(':');
        String name = colon < 0 ? pair : pair.substring(0, colon);
        String password = colon < 0 ? "" : pair.substring(colon + 1);
        HttpUser user = in.passwords.get(name);
        boolean matches = checkpw(password, user == null ? in.decoy : user.hash());
        return user != null && matches ? Optional.of(user) : Optional.empty();
    }

    private boolean checkpw(String password, String hash) {
        try {
            if (!bcrypt.tryAcquire(BUSY_WAIT_MS, java.util.concurrent.TimeUnit.MILLISECONDS)) {
                throw new Busy();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new Busy();
        }
        try {
            bcrypts.incrementAndGet();
            return BCrypt.checkpw(password, hash);
        } catch (IllegalArgumentException e) { // a password over bcrypt's 72 bytes: refused like a wrong one
            return false;
        } finally {
            bcrypt.release();
        }
    }

    /** How many bcrypt checks this has made (a remembered header makes none). */
    long bcrypts() {
        return bcrypts.get();
    }

    /** A bearer token's line for the users file: {@code sha256:<hex>} of the token. */
    static String tokenHash(String token) {
        return "sha256:" + sha256(token);
    }

    /** A password's bcrypt hash for the users file (cost 10). */
    static String passwordHash(String password) {
        return BCrypt.hashpw(password, BCrypt.gensalt(10));
    }

    static String sha256(String text) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e); // every JDK has SHA-256
        }
    }
}
