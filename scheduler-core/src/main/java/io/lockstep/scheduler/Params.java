package io.lockstep.scheduler;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * Binds a job's {@code params} to the type the job declares ({@link Job#paramsType()}), the same
 * way when the config is loaded (so a typo is a config error with its line) and when the job runs
 * ({@link JobContext#params(Class)}): an unknown key or a value of the wrong type is refused.
 */
public final class Params {

    private static final ObjectMapper MAPPER = new ObjectMapper()
            // java.time types as ISO-8601 text; a Duration also as the config's own "30s", "5m", "1h"
            // (registered after the JSR-310 module, so it is the one asked first)
            .registerModule(new com.fasterxml.jackson.datatype.jsr310.JavaTimeModule())
            .registerModule(new com.fasterxml.jackson.databind.module.SimpleModule("lockstep-durations")
                    .addDeserializer(java.time.Duration.class, new DurationParam()))
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES);
    /** The same, but a missing primitive is its default: so the first problem it finds is an unknown key. */
    private static final ObjectMapper LENIENT = MAPPER.copy().disable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES);

    private Params() {}

    /** A Duration param written as the config's durations are ({@code 250ms}, {@code 30s}, {@code 5m}, {@code 1h}, {@code 1d}, {@code PT30S}). */
    private static final class DurationParam extends com.fasterxml.jackson.databind.deser.std.StdScalarDeserializer<java.time.Duration> {
        DurationParam() {
            super(java.time.Duration.class);
        }

        @Override
        public java.time.Duration deserialize(com.fasterxml.jackson.core.JsonParser p, com.fasterxml.jackson.databind.DeserializationContext ctxt)
                throws java.io.IOException {
            if (p.currentToken() == com.fasterxml.jackson.core.JsonToken.VALUE_STRING) {
                String text = p.getText();
                return io.lockstep.scheduler.config.Durations.parse(text).filter(d -> !d.isNegative())
                        .orElseThrow(() -> com.fasterxml.jackson.databind.exc.InvalidFormatException.from(p, "not a duration", text,
                                java.time.Duration.class));
            }
            return (java.time.Duration) ctxt.handleUnexpectedToken(java.time.Duration.class, p);
        }
    }

    /**
     * {@code params} as a {@code type}.
     *
     * @throws IllegalArgumentException when they do not fit; {@link #problem} says why in one line
     */
    public static <T> T bind(Map<String, Object> params, Class<T> type) {
        return MAPPER.convertValue(params, type);
    }

    /**
     * Why {@code params} do not fit {@code type}: the key path (below params) and one line in the
     * YAML's terms (a key, a list, a number), never Jackson's; empty when they do.
     */
    public static Optional<Problem> problem(Map<String, Object> params, Class<?> type) {
        try {
            // Unknown keys first, as Jackson sees them (aliases, ignored names and types that take
            // any key included): for a record, bound through its constructor, the strict mapper
            // reports a missing primitive before a misspelt key, so "max_rows" would read as
            // "Cannot map null into int".
            LENIENT.convertValue(params, type);
        } catch (IllegalArgumentException e) {
            if (e.getCause() instanceof UnrecognizedPropertyException u) {
                return Optional.of(unknown(u));
            }
        } catch (RuntimeException | LinkageError e) {
            return Optional.of(new Problem("", null, Set.of(), "cannot be checked against " + type.getName() + ": " + e));
        }
        try {
            bind(params, type);
            return Optional.empty();
        } catch (IllegalArgumentException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            if (cause instanceof UnrecognizedPropertyException u) {
                return Optional.of(unknown(u));
            }
            if (cause instanceof MismatchedInputException m && m.getTargetType() != null) {
                Object value = valueAt(params, m);
                String wanted = kind(m.getTargetType());
                if (value == null && m.getTargetType().isPrimitive()) {
                    return Optional.of(new Problem(path(m), null, Set.of(), "is required (" + wanted + ")"));
                }
                return Optional.of(new Problem(path(m), null, Set.of(), "must be " + wanted + ", but was " + describe(value)));
            }
            if (cause instanceof JsonMappingException m) {
                String message = m.getOriginalMessage() == null ? "does not fit" : m.getOriginalMessage().lines().findFirst().orElse("");
                return Optional.of(new Problem(path(m), null, Set.of(), "does not fit " + type.getSimpleName() + ": " + message));
            }
            return Optional.of(new Problem("", null, Set.of(), "do not fit " + type.getName() + ": " + cause.getMessage()));
        } catch (RuntimeException | LinkageError e) {
            return Optional.of(new Problem("", null, Set.of(), "cannot be checked against " + type.getName() + ": " + e));
        }
    }

    private static Problem unknown(UnrecognizedPropertyException u) {
        Set<String> keys = u.getKnownPropertyIds().stream().map(String::valueOf).collect(Collectors.toCollection(TreeSet::new));
        return new Problem(path(u), u.getPropertyName(), keys, "unknown key \"" + u.getPropertyName() + "\"");
    }

    /** The value at the exception's path in {@code params}, or null when there is none. */
    private static Object valueAt(Map<String, Object> params, JsonMappingException e) {
        Object at = params;
        for (JsonMappingException.Reference r : e.getPath()) {
            if (r.getFieldName() != null && at instanceof Map<?, ?> map) {
                at = map.get(r.getFieldName());
            } else if (r.getIndex() >= 0 && at instanceof List<?> list && r.getIndex() < list.size()) {
                at = list.get(r.getIndex());
            } else {
                return null;
            }
        }
        return at;
    }

    /** A Java type in the YAML's words. */
    static String kind(Class<?> type) {
        if (type.isArray() || Collection.class.isAssignableFrom(type)) {
            return "a list";
        }
        if (type == boolean.class || type == Boolean.class) {
            return "true or false";
        }
        if (type == int.class || type == long.class || type == short.class || type == byte.class || type == Integer.class
                || type == Long.class || type == Short.class || type == Byte.class || type == java.math.BigInteger.class) {
            return "a whole number";
        }
        if (type.isPrimitive() || Number.class.isAssignableFrom(type)) {
            return "a number";
        }
        if (type == java.time.Duration.class) {
            return "a duration like 250ms, 30s, 5m, 1h, 1d or PT30S";
        }
        if (type == java.time.Instant.class || type == java.time.OffsetDateTime.class || type == java.time.ZonedDateTime.class) {
            return "a date and time with its offset, like 2026-12-04T02:00:00Z";
        }
        if (type == java.time.LocalDateTime.class) {
            return "a date and time, like 2026-12-04T02:00:00";
        }
        if (type == java.time.LocalDate.class) {
            return "a date, like 2026-12-04";
        }
        if (type == java.time.LocalTime.class) {
            return "a time of day, like 02:30";
        }
        if (type == String.class || type == char.class || type == Character.class || type.isEnum()) {
            return type.isEnum() ? "one of " + java.util.Arrays.toString(type.getEnumConstants()) : "a string";
        }
        return "a mapping (" + type.getSimpleName() + ")";
    }

    /** A YAML value in the YAML's words, with the value itself when it is short. */
    static String describe(Object value) {
        if (value == null) {
            return "empty";
        }
        if (value instanceof List<?>) {
            return "a list";
        }
        if (value instanceof Map<?, ?>) {
            return "a mapping";
        }
        String text = String.valueOf(value);
        String shown = text.length() > 40 ? text.substring(0, 37) + "..." : text;
        if (value instanceof String) {
            return "a string (\"" + shown + "\")";
        }
        if (value instanceof Boolean) {
            return shown;
        }
        return (value instanceof Number ? "a number" : "a value") + " (" + shown + ")";
    }

    /**
     * What a misspelt key may have meant: {@code (did you mean "maxRows"?)} for a key within two
     * edits of an allowed one (or differing in case), else the allowed keys. With a leading space.
     */
    public static String suggestion(String key, Set<String> allowed) {
        String lower = key.toLowerCase(java.util.Locale.ROOT);
        for (String candidate : new TreeSet<>(allowed)) {
            if (candidate.toLowerCase(java.util.Locale.ROOT).equals(lower) || editDistance(candidate, key) <= 2) {
                return " (did you mean \"" + candidate + "\"?)";
            }
        }
        return " (allowed: " + String.join(", ", new TreeSet<>(allowed)) + ")";
    }

    private static int editDistance(String a, String b) {
        int[] prev = new int[b.length() + 1];
        int[] cur = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            prev[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            cur[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
                cur[j] = Math.min(Math.min(cur[j - 1] + 1, prev[j] + 1), prev[j - 1] + cost);
            }
            int[] t = prev;
            prev = cur;
            cur = t;
        }
        return prev[b.length()];
    }

    /**
     * Why params do not fit.
     *
     * @param path the key path below {@code params}, such as {@code lable} or {@code limits.max}; empty for the whole
     * @param unknownKey the key the type does not have, or null
     * @param knownKeys the keys it has (when a key is unknown)
     * @param message one line
     */
    public record Problem(String path, String unknownKey, Set<String> knownKeys, String message) {}

    private static String path(JsonMappingException e) {
        return e.getPath().stream().map(r -> r.getFieldName() != null ? r.getFieldName() : "[" + r.getIndex() + "]")
                .collect(Collectors.joining(".")).replace(".[", "[");
    }
}
