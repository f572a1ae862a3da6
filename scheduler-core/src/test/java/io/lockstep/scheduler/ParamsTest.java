package io.lockstep.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A job's params that do not fit its type are explained in the YAML's terms, never in Jackson's. */
class ParamsTest {

    public record Report(int maxRows, List<String> recipients, boolean dryRun) {}

    public record Nested(Report report) {}

    @Test
    void aMisspeltKeyBesideAPrimitiveIsAnUnknownKeyNotANullPrimitive() {
        Params.Problem p = Params.problem(Map.of("max_rows", 5, "recipients", List.of("a")), Report.class).orElseThrow();
        assertThat(p.path()).isEqualTo("max_rows");
        assertThat(p.unknownKey()).isEqualTo("max_rows");
        assertThat(p.knownKeys()).contains("maxRows", "recipients", "dryRun");
        assertThat(p.message()).isEqualTo("unknown key \"max_rows\"");
    }

    @Test
    void aMissingPrimitiveIsRequired() {
        Params.Problem p = Params.problem(Map.of("recipients", List.of("a"), "dryRun", true), Report.class).orElseThrow();
        assertThat(p.path()).isEqualTo("maxRows");
        assertThat(p.message()).isEqualTo("is required (a whole number)");
    }

    @Test
    void aScalarWhereAListBelongsSaysSo() {
        Params.Problem p = Params.problem(Map.of("maxRows", 5, "recipients", "ops@example.com", "dryRun", false), Report.class)
                .orElseThrow();
        assertThat(p.path()).isEqualTo("recipients");
        assertThat(p.message()).isEqualTo("must be a list, but was a string (\"ops@example.com\")");
    }

    @Test
    void aWordWhereANumberBelongsSaysSo() {
        Params.Problem p = Params.problem(Map.of("maxRows", "five", "recipients", List.of(), "dryRun", false), Report.class).orElseThrow();
        assertThat(p.path()).isEqualTo("maxRows");
        assertThat(p.message()).isEqualTo("must be a whole number, but was a string (\"five\")");
    }

    @Test
    void nestedProblemsNameTheirPath() {
        Params.Problem p = Params.problem(Map.of("report", Map.of("maxRows", 1, "recipients", "x", "dryRun", true)), Nested.class)
                .orElseThrow();
        assertThat(p.path()).isEqualTo("report.recipients");
        assertThat(p.message()).doesNotContain("Jackson").doesNotContain("java.util").doesNotContain("DeserializationConfig");
    }

    public record Window(java.time.Duration window, java.time.Instant from, java.time.LocalTime at) {}

    /**
     * F4 of the 2026-12-04 trial: java.time types failed in params ("Java 8 date/time type not
     * supported by default"). A Duration reads as the config's durations do; the others as ISO-8601.
     */
    @Test
    void javaTimeTypesBindAndADurationReadsAsTheConfigsDurationsDo() {
        Window w = Params.bind(Map.of("window", "90s", "from", "2026-12-04T02:00:00Z", "at", "02:30"), Window.class);
        assertThat(w.window()).isEqualTo(java.time.Duration.ofSeconds(90));
        assertThat(w.from()).isEqualTo(java.time.Instant.parse("2026-12-04T02:00:00Z"));
        assertThat(w.at()).isEqualTo(java.time.LocalTime.of(2, 30));
        assertThat(Params.bind(Map.of("window", "PT5M"), Window.class).window()).isEqualTo(java.time.Duration.ofMinutes(5));

        Params.Problem bad = Params.problem(Map.of("window", "5min"), Window.class).orElseThrow();
        assertThat(bad.path()).isEqualTo("window");
        assertThat(bad.message()).isEqualTo("must be a duration like 250ms, 30s, 5m, 1h, 1d or PT30S, but was a string (\"5min\")");
        Params.Problem badTime = Params.problem(Map.of("from", "yesterday"), Window.class).orElseThrow();
        assertThat(badTime.message()).isEqualTo("must be a date and time with its offset, like 2026-12-04T02:00:00Z, but was a string (\"yesterday\")");
    }

    public record Aliased(@com.fasterxml.jackson.annotation.JsonAlias("max_rows") int maxRows) {}

    @com.fasterxml.jackson.annotation.JsonIgnoreProperties(ignoreUnknown = true)
    public record Lenient(int maxRows) {}

    @Test
    void whatJacksonAcceptsIsAccepted() {
        assertThat(Params.problem(Map.of("max_rows", 5), Aliased.class)).as("an alias").isEmpty();
        assertThat(Params.problem(Map.of("maxRows", 5, "other", 1), Lenient.class)).as("ignoreUnknown").isEmpty();
        assertThat(Params.problem(Map.of("anything", List.of(1)), com.fasterxml.jackson.databind.JsonNode.class)).as("a tree").isEmpty();
    }

    @Test
    void paramsThatFitHaveNoProblem() {
        assertThat(Params.problem(Map.of("maxRows", 5, "recipients", List.of("a"), "dryRun", true), Report.class)).isEmpty();
    }
}
