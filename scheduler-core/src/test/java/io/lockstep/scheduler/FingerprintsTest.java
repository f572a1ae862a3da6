package io.lockstep.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.lockstep.scheduler.cron.CronSchedule;
import java.time.ZoneId;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** What workers publish about their jobs, and how drift between them is told. */
class FingerprintsTest {

    private static JobDefinition job(String name, String cron, Map<String, Object> params) {
        return new JobDefinition(name, CronSchedule.of(cron, ZoneId.of("Europe/Lisbon")), "com.example.Report", params,
                JobDefinition.DEFAULT_LEASE, JobDefinition.DEFAULT_MISFIRE_GRACE, Overlap.SKIP, java.time.Duration.ZERO, true,
                Retry.NONE, Recover.NONE, CatchUp.NONE, JobDefinition.DEFAULT_CATCH_UP_WINDOW);
    }

    @Test
    void theOrderOfParamsInTheYamlDoesNotCountButTheirValuesDo() {
        Map<String, Object> ab = new LinkedHashMap<>();
        ab.put("a", 1);
        ab.put("b", List.of("x", "y"));
        Map<String, Object> ba = new LinkedHashMap<>();
        ba.put("b", List.of("x", "y"));
        ba.put("a", 1);
        assertThat(Fingerprints.describe(job("r", "0 0 6 * * *", ab))).isEqualTo(Fingerprints.describe(job("r", "0 0 6 * * *", ba)));
        assertThat(Fingerprints.hash(Fingerprints.describe(List.of(job("r", "0 0 6 * * *", ab)))))
                .isEqualTo(Fingerprints.hash(Fingerprints.describe(List.of(job("r", "0 0 6 * * *", ba)))));
        assertThat(Fingerprints.hash(Fingerprints.describe(List.of(job("r", "0 0 6 * * *", Map.of("a", 2))))))
                .isNotEqualTo(Fingerprints.hash(Fingerprints.describe(List.of(job("r", "0 0 6 * * *", Map.of("a", 1))))));
    }

    @Test
    void aJitterIsPartOfTheSlotsIdentityAndAJobWithoutOneDescribesAsBefore() {
        JobDefinition plain = job("report", "0 0 6 * * *", Map.of());
        // Unchanged for a job without jitter or H: a worker of the previous version sees no drift.
        assertThat(Fingerprints.describe(plain)).isEqualTo("{\"catchUp\":\"none PT1H\",\"class\":\"com.example.Report\","
                + "\"cron\":\"0 0 6 * * *\",\"enabled\":true,\"lease\":\"PT30S\",\"misfireGrace\":\"PT10S\",\"overlap\":\"skip\","
                + "\"params\":{},\"recover\":\"none\",\"retry\":\"Retry[maxAttempts=1, backoff=PT1S, maxBackoff=PT30S]\","
                + "\"timeout\":\"PT0S\",\"zone\":\"Europe/Lisbon\"}");
        CronSchedule jittered = CronSchedule.of(List.of("0 0 6 * * *"), ZoneId.of("Europe/Lisbon"), "report")
                .withJitter(java.time.Duration.ofMinutes(10), "report");
        JobDefinition moved = new JobDefinition("report", jittered, plain.jobClass(), Map.of(), plain.lease(), plain.misfireGrace(),
                plain.overlap(), plain.timeout(), true);
        List<Fingerprints.Drift> drift = Fingerprints.drift(Fingerprints.describe(List.of(plain)), List.of("w1"),
                Map.of("h2", List.of("w2")), hash -> Fingerprints.describe(List.of(moved)));
        assertThat(drift).singleElement().satisfies(d -> {
            assertThat(d.differences()).containsExactly("jitter: w1: null; w2: PT10M offset " + jittered.offset());
            assertThat(Fingerprints.rollout(d.differences())).startsWith("not safe worker by worker (jitter)");
        });
        CronSchedule hashed = CronSchedule.of(List.of("H 6 * * *"), ZoneId.of("Europe/Lisbon"), "report");
        assertThat(Fingerprints.describe(new JobDefinition("report", hashed, plain.jobClass(), Map.of(), plain.lease(),
                plain.misfireGrace(), plain.overlap(), plain.timeout(), true)))
                .contains("\"cron\":\"H 6 * * * (" + hashed.expanded().get(0) + ")\"");
    }

    @Test
    void driftNamesTheJobTheWorkersAndTheFieldsThatDiffer() {
        Map<String, String> ours = Fingerprints.describe(List.of(job("report", "0 0 6 * * *", Map.of()), job("same", "0 * * * * *", Map.of())));
        Map<String, String> theirs = Fingerprints.describe(List.of(job("report", "0 0 7 * * *", Map.of()), job("same", "0 * * * * *", Map.of()),
                job("extra", "0 0 * * * *", Map.of())));
        List<Fingerprints.Drift> drift = Fingerprints.drift(ours, List.of("w1"), Map.of("h2", List.of("w3", "w2")),
                hash -> hash.equals("h2") ? theirs : Map.of());

        assertThat(drift).extracting(Fingerprints.Drift::job).containsExactly("extra", "report");
        Fingerprints.Drift report = drift.get(1);
        assertThat(report.workers()).containsExactly("w1", "w2", "w3");
        // Who has which value (F16 of the 2026-12-04 trial: "X vs Y" did not say which worker had which).
        assertThat(report.differences()).containsExactly("cron: w1: 0 0 6 * * *; w2, w3: 0 0 7 * * *");
        assertThat(drift.get(0).differences()).containsExactly("job: w1: not defined; w2, w3: defined");
        // What a rollout of them does: a moved cron or a renamed job runs under both definitions meanwhile.
        assertThat(Fingerprints.rollout(report.differences())).startsWith("not safe worker by worker (cron)");
        assertThat(Fingerprints.rollout(drift.get(0).differences())).startsWith("not safe worker by worker (job)");
        assertThat(Fingerprints.rollout(List.of("misfireGrace: PT10S vs PT5M", "lease: PT30S vs PT1M", "params: {} vs {a=1}")))
                .startsWith("safe worker by worker");
        // Three configs: each value once, with every worker that has it.
        Map<String, String> third = Fingerprints.describe(List.of(job("report", "0 0 6 * * *", Map.of("a", 1)), job("same", "0 * * * * *", Map.of())));
        List<Fingerprints.Drift> three = Fingerprints.drift(ours, List.of("w1"), Map.of("h2", List.of("w2"), "h3", List.of("w4")),
                hash -> hash.equals("h2") ? theirs : third);
        assertThat(three.stream().filter(d -> d.job().equals("report")).findFirst().orElseThrow().differences())
                .containsExactly("cron: w1, w4: 0 0 6 * * *; w2: 0 0 7 * * *", "params: w1, w2: {}; w4: {a=1}");
        // F6 of the 2026-12-04 trial: another application on the same prefix (no job in common) is not drift,
        // it is a stranger (one warning, prefix_shared).
        Map<String, String> otherApp = Fingerprints.describe(List.of(job("invoices", "0 0 1 * * *", Map.of())));
        assertThat(Fingerprints.drift(ours, List.of("w1"), Map.of("h2", List.of("w2"), "h9", List.of("sb-1", "sb-2")),
                hash -> hash.equals("h2") ? theirs : otherApp)).extracting(Fingerprints.Drift::job).containsExactly("extra", "report");
        assertThat(Fingerprints.strangers(ours, Map.of("h2", List.of("w2"), "h9", List.of("sb-2", "sb-1")),
                hash -> hash.equals("h2") ? theirs : otherApp)).containsExactly("sb-1", "sb-2");
        // Equal configs, or a config not published yet: no drift.
        assertThat(Fingerprints.drift(ours, List.of("w1"), Map.of("h1", List.of("w2")), hash -> ours)).isEmpty();
        assertThat(Fingerprints.drift(ours, List.of("w1"), Map.of("h9", List.of("w2")), hash -> Map.of())).isEmpty();
    }
}
