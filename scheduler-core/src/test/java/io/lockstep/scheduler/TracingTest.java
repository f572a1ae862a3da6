package io.lockstep.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lockstep.scheduler.cron.CronSchedule;
import io.lockstep.scheduler.lock.InMemoryLockProvider;
import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.EventData;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.time.Duration;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * One OpenTelemetry span per run (issue 22), checked with the SDK's in-memory exporter: its name,
 * kind and attributes after the FaaS conventions, the job's own spans nested under it, its events
 * (retry, lease lost), its status, and its ids in the run's JSON events.
 */
class TracingTest {

    private static final CronSchedule EVERY_SECOND = CronSchedule.of("* * * * * *", ZoneOffset.UTC);

    @RegisterExtension
    final SchedulerHarness harness = new SchedulerHarness();

    private final InMemorySpanExporter exporter = InMemorySpanExporter.create();
    private OpenTelemetrySdk otel;

    @BeforeEach
    void sdk() {
        otel = OpenTelemetrySdk.builder()
                .setTracerProvider(SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(exporter)).build())
                .build();
    }

    @AfterEach
    void close() {
        harness.closeAll();
        otel.close();
        GlobalOpenTelemetry.resetForTest();
    }

    private static JobDefinition job(String name, Duration lease) {
        return new JobDefinition(name, EVERY_SECOND, Job.class.getName(), Map.of(), lease, Duration.ofSeconds(2),
                Overlap.ALLOW, Duration.ZERO, true);
    }

    @Test
    void aRunIsOneSpanWithTheJobsOwnSpansInsideAndItsIdsInTheRunsEvents() {
        JobDefinition report = job("report", Duration.ofSeconds(5)).withRetry(new Retry(2, Duration.ofMillis(20), Duration.ofMillis(20)));
        harness.start(Scheduler.builder(InMemoryLockProvider.create()).workerId("w1").job(report).openTelemetry(otel)
                .jobFactory(d -> ctx -> {
                    Span query = otel.getTracer("app").spanBuilder("query").startSpan(); // the job's own span: parent from the context
                    query.end();
                    if (ctx.attempt() == 1) {
                        throw new IllegalStateException("first attempt fails");
                    }
                }));
        SpanData run = await().atMost(Duration.ofSeconds(10)).until(() -> runSpans("report"), l -> !l.isEmpty()).get(0);

        assertThat(run.getKind()).isEqualTo(SpanKind.INTERNAL);
        assertThat(run.getParentSpanContext().isValid()).as("a run is a root span").isFalse();
        String slot = run.getAttributes().get(AttributeKey.stringKey("faas.time"));
        assertThat(run.getAttributes().asMap()).containsEntry(AttributeKey.stringKey("faas.trigger"), "timer")
                .containsEntry(AttributeKey.stringKey("faas.cron"), "* * * * * *")
                .containsEntry(AttributeKey.stringKey("lockstep.job"), "report")
                .containsEntry(AttributeKey.stringKey("lockstep.slot"), slot)
                .containsEntry(AttributeKey.stringKey("lockstep.worker"), "w1")
                .containsEntry(AttributeKey.longKey("lockstep.attempt"), 2L)
                .containsEntry(AttributeKey.stringKey("lockstep.outcome"), "succeeded")
                .containsKey(AttributeKey.longKey("lockstep.fencing_token"));
        assertThat(run.getStatus().getStatusCode()).isEqualTo(StatusCode.UNSET);
        assertThat(run.getEvents()).extracting(EventData::getName).containsExactly("lockstep.retry");
        assertThat(run.getEvents().get(0).getAttributes().get(AttributeKey.stringKey("lockstep.error")))
                .isEqualTo("java.lang.IllegalStateException: first attempt fails");

        // The job's spans of both attempts nest under the run.
        List<SpanData> queries = exporter.getFinishedSpanItems().stream()
                .filter(s -> s.getName().equals("query") && s.getTraceId().equals(run.getTraceId())).toList();
        assertThat(queries).hasSize(2).allSatisfy(q -> assertThat(q.getParentSpanId()).isEqualTo(run.getSpanId()));

        // The run's events carry the span's ids.
        List<Map<String, Object>> ofRun = harness.events().all().stream()
                .filter(e -> "report".equals(e.get("job")) && slot.equals(e.get("slot"))
                        && List.of("job_started", "job_failed", "job_succeeded").contains(e.get("event"))).toList();
        assertThat(ofRun).extracting(e -> e.get("event")).containsExactly("job_started", "job_failed", "job_started", "job_succeeded");
        assertThat(ofRun).allSatisfy(e -> assertThat(e).containsEntry("trace_id", run.getTraceId()).containsEntry("span_id", run.getSpanId()));
        assertThat(run.getAttributes().get(AttributeKey.longKey("lockstep.fencing_token")))
                .isEqualTo(((Number) ofRun.get(0).get("fencing_token")).longValue());
    }

    @Test
    void aLostLeaseIsAnEventOfTheSpanWhichEndsInError() {
        FaultyStore store = new FaultyStore();
        CountDownLatch running = new CountDownLatch(1);
        harness.start(Scheduler.builder(store).workerId("w1").job(job("long", Duration.ofSeconds(2))).openTelemetry(otel)
                .shutdownTimeout(Duration.ofMillis(200))
                .jobFactory(d -> ctx -> {
                    running.countDown();
                    TimeUnit.SECONDS.sleep(30); // interrupted when the lease is lost
                }));
        await().atMost(Duration.ofSeconds(10)).until(() -> running.getCount() == 0);
        String token = harness.events().named("slot_claimed").stream().filter(e -> "long".equals(e.get("job")))
                .map(e -> (String) e.get("identifier")).findFirst().orElseThrow();
        store.refusedTokens.add(token);
        Map<String, Object> lost = await().atMost(Duration.ofSeconds(10))
                .until(() -> harness.events().named("lease_lost"), l -> !l.isEmpty()).get(0);
        SpanData run = await().atMost(Duration.ofSeconds(10))
                .until(() -> runSpans("long").stream().filter(s -> s.getSpanId().equals(lost.get("span_id"))).toList(), l -> !l.isEmpty())
                .get(0);

        assertThat(lost).containsEntry("trace_id", run.getTraceId());
        assertThat(run.getEvents()).extracting(EventData::getName).contains("lockstep.lease_lost");
        assertThat(run.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
        assertThat(run.getAttributes().get(AttributeKey.stringKey("lockstep.outcome"))).isEqualTo("lease_lost");
        assertThat(run.getEvents()).extracting(EventData::getName).contains("exception"); // the interrupt, recorded
    }

    @Test
    void withoutAnOpenTelemetryRunsAreTracedThroughTheGlobalOneOnlyOnceSomethingSetsIt() {
        harness.start(Scheduler.builder(InMemoryLockProvider.create()).workerId("w1").job(job("plain", Duration.ofSeconds(5)))
                .jobFactory(d -> ctx -> { }));
        await().atMost(Duration.ofSeconds(10)).until(() -> harness.events().named("job_succeeded", "plain").size() >= 1);
        assertThat(harness.events().named("job_started", "plain").get(0)).doesNotContainKey("trace_id");
        assertThat(GlobalOpenTelemetry.isSet()).as("the scheduler never sets the global OpenTelemetry itself").isFalse();

        GlobalOpenTelemetry.set(otel); // as an SDK's autoconfigure or the Java agent does
        SpanData run = await().atMost(Duration.ofSeconds(10)).until(() -> runSpans("plain"), l -> !l.isEmpty()).get(0);
        String slot = run.getAttributes().get(AttributeKey.stringKey("faas.time"));
        assertThat(harness.events().named("job_started", "plain")).filteredOn(e -> slot.equals(e.get("slot")))
                .singleElement().satisfies(e -> assertThat(e).containsEntry("span_id", run.getSpanId()));
    }

    private List<SpanData> runSpans(String job) {
        return exporter.getFinishedSpanItems().stream().filter(s -> s.getName().equals("lockstep.run " + job)).toList();
    }
}
