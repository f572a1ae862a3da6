package io.lockstep.worker;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code lockstep audit}'s command line: exit 0, 4 and 2, the summary, {@code --json}, and one line for bad input. */
class AuditCommandTest {

    @TempDir
    Path dir;

    private Path config;
    private final StringWriter out = new StringWriter(), err = new StringWriter();

    @BeforeEach
    void setUp() throws IOException {
        config = dir.resolve("jobs.yaml");
        Files.writeString(config, "redis:\n  uri: redis://127.0.0.1:6379\njobs:\n  - name: tick\n    cron: \"* * * * * *\"\n    class: com.example.Nope\n");
    }

    private int audit(String... args) {
        List<String> all = new ArrayList<>(List.of("audit", "--config", config.toString()));
        all.addAll(List.of(args));
        return WorkerMain.execute(new PrintWriter(out, true), new PrintWriter(err, true), all.toArray(String[]::new));
    }

    /** Slots 0..29 s after 10:00, run by w1 under rising tokens, except {@code skip}. */
    private Path events(int skip) throws IOException {
        Instant t0 = Instant.parse("2026-12-01T10:00:00Z");
        List<String> lines = new ArrayList<>();
        lines.add(event(t0.minusSeconds(1), "worker_started", ""));
        for (int s = 0; s < 30; s++) {
            if (s != skip) {
                Instant slot = t0.plusSeconds(s);
                lines.add(event(slot.plusMillis(2), "job_started", ",\"job\":\"tick\",\"slot\":\"" + slot + "\",\"fencing_token\":" + (100 + s)
                        + ",\"attempt\":1,\"lateness_ms\":2"));
            }
        }
        lines.add(event(t0.plusMillis(29_500), "worker_stopping", ""));
        lines.add(event(t0.plusMillis(29_510), "worker_stopped", ""));
        Path file = dir.resolve("events-" + skip + ".log");
        Files.write(file, lines);
        return file;
    }

    private static String event(Instant ts, String event, String fields) {
        return "{\"ts\":\"" + ts + "\",\"event\":\"" + event + "\",\"worker\":\"w1\"" + fields + "}";
    }

    @Test
    void everyCheckHoldingExitsZeroWithTheSummary() throws IOException {
        assertThat(audit(events(-1).toString())).as("%s", err).isZero();
        assertThat(out.toString()).contains("silent-slot    holds").contains("every check holds").contains("started once");
        assertThat(err.toString()).isEmpty();
    }

    @Test
    void aViolationExitsFourAndJsonNamesIt() throws IOException {
        assertThat(audit("--json", events(15).toString())).isEqualTo(AuditCommand.VIOLATED);
        JsonNode report = new ObjectMapper().readTree(out.toString());
        assertThat(report.path("holds").asBoolean()).isFalse();
        assertThat(report.path("checks").path("silent-slot").asInt()).isEqualTo(1);
        assertThat(report.path("violations").get(0).path("slot").asText()).isEqualTo("2026-12-01T10:00:15Z");
    }

    @Test
    void badUsageOrUnreadableInputExitsTwoWithOneLine() throws IOException {
        assertThat(audit(dir.resolve("missing.log").toString())).isEqualTo(WorkerMain.BAD_INPUT);
        assertThat(err.toString().strip()).startsWith("error: cannot read").contains("missing.log").doesNotContain("\n").doesNotContain("Exception");
        err.getBuffer().setLength(0);
        assertThat(audit("--from", "yesterday", events(-1).toString())).isEqualTo(WorkerMain.BAD_INPUT);
        assertThat(err.toString().strip()).contains("--from must be an ISO-8601 instant").doesNotContain("\n");
        err.getBuffer().setLength(0);
        Files.writeString(config, "jobs:\n  - name: tick\n    cron: \"not a cron\"\n    class: x\n");
        assertThat(audit(events(-1).toString())).isEqualTo(WorkerMain.BAD_INPUT);
        assertThat(err.toString()).contains("jobs.yaml");
    }

    @Test
    void anUnverifiedSlotIsCountedInTextAndJsonListedWithVerboseAndFailsWithStrict() throws IOException {
        // Slot 29 has no event; w1 stopped 500 ms after it, within its grace: unverified.
        Path log = events(29);
        assertThat(audit(log.toString())).isZero();
        assertThat(out.toString()).contains("1 with no worker running, 1 unverified")
                .contains("unverified     1 (the log cannot show their fate; not blamed; --verbose lists them)")
                .doesNotContain("unverified: tick @");
        out.getBuffer().setLength(0);
        assertThat(audit("--verbose", log.toString())).isZero();
        assertThat(out.toString()).contains("unverified: tick @ 2026-12-01T10:00:29Z: no run or report; w1 stopped 500 ms after it");
        out.getBuffer().setLength(0);
        assertThat(audit("--json", log.toString())).isZero();
        JsonNode report = new ObjectMapper().readTree(out.toString());
        assertThat(report.path("holds").asBoolean()).isTrue();
        assertThat(report.path("slots").path("unverified").asInt()).isEqualTo(1);
        assertThat(report.path("slots").path("noWorkerRunning").asInt()).as("09:59:59, when w1 was starting").isEqualTo(1);
        assertThat(report.path("unverified").get(0).path("slot").asText()).isEqualTo("2026-12-01T10:00:29Z");
        assertThat(report.path("unverified").get(0).path("reason").asText()).contains("within its grace");
        out.getBuffer().setLength(0);
        assertThat(audit("--strict", log.toString())).isEqualTo(AuditCommand.VIOLATED);
        assertThat(audit("--strict", events(-1).toString())).as("nothing unverified: --strict holds").isZero();
    }

    @Test
    void severalConfigsAreGivenByRepeatingTheOption() throws IOException {
        Path other = dir.resolve("other.yaml");
        Files.writeString(other, "redis:\n  uri: redis://127.0.0.1:6379\njobs:\n  - name: tock\n    cron: \"* * * * * *\"\n    class: com.example.Nope\n");
        assertThat(audit("--config", other.toString(), events(-1).toString())).isZero();
        assertThat(out.toString()).contains("every check holds").contains("31 checked: 30 started once");
    }
}
