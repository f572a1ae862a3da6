package io.lockstep.scheduler;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
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
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES);

    private Params() {}

    /**
     * {@code params} as a {@code type}.
     *
     * @throws IllegalArgumentException when they do not fit; {@link #problem} says why in one line
     */
    public static <T> T bind(Map<String, Object> params, Class<T> type) {
        return MAPPER.convertValue(params, type);
    }

    /** Why {@code params} do not fit {@code type}: the key path (below params) and one line; empty when they do. */
    public static Optional<Problem> problem(Map<String, Object> params, Class<?> type) {
        try {
            bind(params, type);
            return Optional.empty();
        } catch (IllegalArgumentException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            if (cause instanceof UnrecognizedPropertyException u) {
                Set<String> known = u.getKnownPropertyIds().stream().map(String::valueOf).collect(Collectors.toCollection(TreeSet::new));
                return Optional.of(new Problem(path(u), u.getPropertyName(), known, "unknown key \"" + u.getPropertyName() + "\""));
            }
            if (cause instanceof JsonMappingException m) {
                String message = m.getOriginalMessage() == null ? "does not fit" : m.getOriginalMessage().lines().findFirst().orElse("");
                return Optional.of(new Problem(path(m), null, Set.of(), "does not fit " + type.getSimpleName() + ": " + message));
            }
            return Optional.of(new Problem("", null, Set.of(), "do not fit " + type.getName() + ": " + cause.getMessage()));
        }
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
