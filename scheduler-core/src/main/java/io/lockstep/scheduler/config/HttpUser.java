package io.lockstep.scheduler.config;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * One user of the worker's HTTP endpoints ({@code worker.http.auth.users}, a file of
 * {@code name:role:hash} lines). {@code role} is {@value #VIEWER} (reads the page, the status and
 * the metrics) or {@value #OPERATOR} (also pauses, resumes, triggers and backfills from the page).
 * {@code hash} is a bcrypt hash of a password ({@code $2a$}, {@code $2b$} or {@code $2y$}: HTTP
 * basic authentication) or {@code sha256:<64 hex>} of a bearer token ({@code Authorization: Bearer}).
 * Core only reads the file's form; the worker checks what a request presents against it.
 *
 * @param line the line of the file it is on (for messages)
 */
public record HttpUser(String name, String role, String hash, int line) {

    public static final String VIEWER = "viewer";
    public static final String OPERATOR = "operator";

    /** No {@code @}: the CLI records its operators as {@code <user>@<host>}, and a console user must not pass for one. */
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._-]{1,64}");
    private static final Pattern BCRYPT = Pattern.compile("\\$2[aby]\\$[0-9]{2}\\$[./0-9A-Za-z]{53}");
    /** bcrypt costs taken: below 10 is cheap to crack, above 14 makes every wrong guess cost the worker seconds. */
    public static final int MIN_COST = 10;
    public static final int MAX_COST = 14;
    private static final Pattern SHA256 = Pattern.compile("sha256:[0-9a-f]{64}");

    public HttpUser {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(role, "role");
        Objects.requireNonNull(hash, "hash");
    }

    /** Whether {@link #hash} is a bearer token's (else a password's). */
    public boolean token() {
        return hash.startsWith("sha256:");
    }

    /** Whether this user may act (pause, resume, trigger, backfill), not only read. */
    public boolean operator() {
        return OPERATOR.equals(role);
    }

    /** Never the hash: a hash in a log is a password cracked offline. */
    @Override
    public String toString() {
        return name + " (" + role + ", " + (token() ? "bearer token" : "password") + ")";
    }

    /**
     * The users of a users file's text: a line each, {@code #} comments and blank lines ignored.
     *
     * @throws IllegalArgumentException naming the first bad line ({@code line N: ...}); never with a hash in it
     */
    public static List<HttpUser> parse(String text) {
        List<HttpUser> users = new ArrayList<>();
        Set<String> names = new HashSet<>();
        int passwordCost = 0;
        int passwordCostLine = 0;
        String[] lines = text.split("\r?\n", -1);
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i].strip();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            String[] parts = line.split(":", 3);
            String at = "line " + (i + 1) + ": ";
            if (parts.length < 3) {
                throw new IllegalArgumentException(at + "must be name:role:hash (lockstep user prints such a line)");
            }
            if (!NAME.matcher(parts[0]).matches()) {
                throw new IllegalArgumentException(at + "the name must be 1 to 64 letters, digits or . _ -");
            }
            if (!parts[1].equals(VIEWER) && !parts[1].equals(OPERATOR)) {
                throw new IllegalArgumentException(at + "the role of " + parts[0] + " must be viewer or operator, but was \""
                        + parts[1] + "\"");
            }
            if (!BCRYPT.matcher(parts[2]).matches() && !SHA256.matcher(parts[2]).matches()) {
                throw new IllegalArgumentException(at + "the hash of " + parts[0] + " must be a bcrypt hash ($2a$, $2b$ or $2y$, "
                        + "60 characters) or sha256:<64 lowercase hex> of a bearer token (lockstep user prints one)");
            }
            if (BCRYPT.matcher(parts[2]).matches()) {
                int cost = Integer.parseInt(parts[2].substring(4, 6));
                if (cost < MIN_COST || cost > MAX_COST) {
                    throw new IllegalArgumentException(at + "the bcrypt cost of " + parts[0] + " must be " + MIN_COST + " to " + MAX_COST
                            + ", but was " + cost + " (lockstep user hashes at 10)");
                }
                if (passwordCost == 0) {
                    passwordCost = cost;
                    passwordCostLine = i + 1;
                } else if (cost != passwordCost) {
                    // A wrong password costs its hash's time; one cost for all keeps that time from telling names apart.
                    throw new IllegalArgumentException(at + "the bcrypt cost of " + parts[0] + " is " + cost + ", but line " + passwordCostLine
                            + "'s is " + passwordCost + ": every password of the file must use one cost (lockstep user hashes at 10)");
                }
            }
            if (!names.add(parts[0])) {
                throw new IllegalArgumentException(at + parts[0] + " is named twice");
            }
            users.add(new HttpUser(parts[0], parts[1], parts[2], i + 1));
        }
        if (users.isEmpty()) {
            throw new IllegalArgumentException("no user in it (each line is name:role:hash; lockstep user prints one)");
        }
        return List.copyOf(users);
    }
}
