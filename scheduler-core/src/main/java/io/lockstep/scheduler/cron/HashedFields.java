package io.lockstep.scheduler.cron;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Jenkins' {@code H} in cron fields, and the stable offset of {@code jitter}: values derived from a
 * key (the job's name, or its {@code jitterSeed}) by SHA-256, so every worker, every restart and
 * every version computes the same ones. Jenkins' forms are accepted in any field but the
 * day-of-week names: {@code H} (one value in the field's range), {@code H(a-b)} (one value in
 * a..b), {@code H/n} and {@code H(a-b)/n} (every n from an offset below n). As in Jenkins, {@code H}
 * in the day of the month stays within 1-28, so it fires every month. Each {@code H} of an
 * expression has its own hash (field and position), so {@code H H * * *} is not 00:00 nor 07:07.
 */
final class HashedFields {

    private static final Pattern TOKEN = Pattern.compile("H(?:\\((\\d+)-(\\d+)\\))?(?:/(\\d+))?");
    private static final String[] FIVE = {"minute", "hour", "day of month", "month", "day of week"};
    private static final int[][] FIVE_RANGES = {{0, 59}, {0, 23}, {1, 28}, {1, 12}, {0, 6}};

    private HashedFields() {}

    /** An {@code H} as a token of a field (not the H of a day name such as THU): at a field's or list item's start. */
    private static final Pattern H_TOKEN = Pattern.compile("(^|[\\s,])H(?![A-Za-z])");

    /** Whether an expression has an {@code H} to expand (macros never do; {@code THU} is a day, not an H). */
    static boolean hashed(String expression) {
        return expression != null && !expression.trim().startsWith("@") && H_TOKEN.matcher(expression.trim()).find();
    }

    /**
     * The expression with each {@code H} replaced by its value for {@code key}.
     *
     * @throws IllegalArgumentException with a one-line reason for a malformed {@code H}, or when there is no key
     */
    static String expand(String expression, String key) {
        if (!hashed(expression)) {
            return expression;
        }
        if (key == null || key.isEmpty()) {
            throw new IllegalArgumentException("\"" + expression.trim() + "\" uses H, which needs a name to hash"
                    + " (a job's name or jitterSeed)");
        }
        String[] fields = expression.trim().split("\\s+");
        int first = fields.length == 6 ? 1 : 0;
        if (fields.length != 5 && fields.length != 6) {
            return expression; // the parser says what is wrong with the field count
        }
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < fields.length; i++) {
            int[] range = i < first ? new int[] {0, 59} : FIVE_RANGES[i - first];
            String name = i < first ? "second" : FIVE[i - first];
            String[] parts = fields[i].split(",", -1);
            for (int p = 0; p < parts.length; p++) {
                if (parts[p].startsWith("H") && (parts[p].length() == 1 || !Character.isLetter(parts[p].charAt(1)))) { // not a day name
                    parts[p] = value(parts[p], range, name, key + "\u0000" + i + "\u0000" + p, expression.trim());
                }
            }
            out.append(i == 0 ? "" : " ").append(String.join(",", parts));
        }
        return out.toString();
    }

    private static String value(String token, int[] range, String field, String hashKey, String expression) {
        Matcher m = TOKEN.matcher(token);
        if (!m.matches()) {
            throw new IllegalArgumentException("invalid H \"" + token + "\" in the " + field + " of \"" + expression
                    + "\": use H, H(a-b), H/n or H(a-b)/n");
        }
        int lo = m.group(1) == null ? range[0] : Integer.parseInt(m.group(1));
        int hi = m.group(2) == null ? range[1] : Integer.parseInt(m.group(2));
        if (lo > hi || lo < range[0] || hi > range[1]) {
            throw new IllegalArgumentException("H(" + lo + "-" + hi + ") in the " + field + " of \"" + expression
                    + "\" must be a range within " + range[0] + "-" + range[1]);
        }
        long h = hash(hashKey);
        if (m.group(3) == null) {
            return Long.toString(lo + h % (hi - lo + 1));
        }
        int step = Integer.parseInt(m.group(3));
        if (step < 1) {
            throw new IllegalArgumentException("H/" + step + " in the " + field + " of \"" + expression + "\" needs a step of at least 1");
        }
        long start = lo + h % Math.min(step, hi - lo + 1);
        return start + "-" + hi + "/" + step;
    }

    /** A non-negative number from the first bytes of SHA-256 of {@code key}: the same everywhere. */
    static long hash(String key) {
        try {
            byte[] d = MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8));
            long v = 0;
            for (int i = 0; i < 7; i++) {
                v = (v << 8) | (d[i] & 0xff);
            }
            return v;
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }
}
