package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.Outcome;
import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import org.slf4j.spi.LoggingEventBuilder;

/**
 * Runs traced with OpenTelemetry, after its FaaS conventions for a timer-triggered invocation: one
 * span per run, kind {@code INTERNAL}, named {@code lockstep.run <job>}, a root span (a run has no
 * caller), with
 * <ul>
 *   <li>{@code faas.trigger} {@code timer} ({@code other} for a manual run, {@code lockstep trigger}),
 *       {@code faas.cron} the job's expression, {@code faas.time} its slot (ISO 8601);
 *   <li>{@code lockstep.job}, {@code lockstep.slot}, {@code lockstep.worker},
 *       {@code lockstep.fencing_token}, and at the end {@code lockstep.attempt} (attempts made) and
 *       {@code lockstep.outcome} ({@link Outcome#label}); {@code lockstep.manual} and
 *       {@code lockstep.recovered} when true;
 *   <li>events {@code lockstep.recovered} (the run is a rerun of one that lost its lease),
 *       {@code lockstep.retry}, {@code lockstep.lease_lost}, {@code lockstep.timed_out};
 *   <li>status {@code ERROR} unless the run succeeded (then unset), with the last failure recorded as an exception.
 * </ul>
 * The span's trace and span ids go into the run's JSON events ({@code trace_id}, {@code span_id}).
 */
final class OtelRunTracer implements RunTracer {

    static final String SCOPE = "io.lockstep.scheduler";

    private static final AttributeKey<String> FAAS_TRIGGER = AttributeKey.stringKey("faas.trigger");
    private static final AttributeKey<String> FAAS_CRON = AttributeKey.stringKey("faas.cron");
    private static final AttributeKey<String> FAAS_TIME = AttributeKey.stringKey("faas.time");
    private static final AttributeKey<String> JOB = AttributeKey.stringKey("lockstep.job");
    private static final AttributeKey<String> SLOT = AttributeKey.stringKey("lockstep.slot");
    private static final AttributeKey<String> WORKER = AttributeKey.stringKey("lockstep.worker");
    private static final AttributeKey<Long> TOKEN = AttributeKey.longKey("lockstep.fencing_token");
    private static final AttributeKey<Long> ATTEMPT = AttributeKey.longKey("lockstep.attempt");
    private static final AttributeKey<String> OUTCOME = AttributeKey.stringKey("lockstep.outcome");
    private static final AttributeKey<Boolean> MANUAL = AttributeKey.booleanKey("lockstep.manual");
    private static final AttributeKey<Boolean> RECOVERED = AttributeKey.booleanKey("lockstep.recovered");
    private static final AttributeKey<String> REASON = AttributeKey.stringKey("lockstep.reason");
    private static final AttributeKey<Long> DELAY = AttributeKey.longKey("lockstep.retry_in_ms");
    private static final AttributeKey<Long> TIMEOUT = AttributeKey.longKey("lockstep.timeout_ms");
    private static final AttributeKey<String> ERROR = AttributeKey.stringKey("lockstep.error");

    /** The application's tracer, or null to use the global one once it is set. */
    private final Tracer given;
    private volatile Tracer global;

    private OtelRunTracer(Tracer given) {
        this.given = given;
    }

    static RunTracer create(Object openTelemetry) {
        if (openTelemetry != null) {
            return new OtelRunTracer(tracer((OpenTelemetry) openTelemetry));
        }
        if (!GLOBAL_IS_SET) {
            org.slf4j.LoggerFactory.getLogger(Events.LOGGER).atWarn().addKeyValue("event", "tracing_unavailable")
                    .log("the OpenTelemetry API on the class path is older than 1.57: runs are traced only through an "
                            + "OpenTelemetry given to the scheduler (Scheduler.Builder.openTelemetry), not the global one");
            return RunTracer.NONE;
        }
        return new OtelRunTracer(null);
    }

    /**
     * {@code GlobalOpenTelemetry.isSet()} (API 1.57+) tells whether something set the global one
     * without setting it; before it, asking ({@code get()}) would fix it to a no-op for good.
     */
    private static final boolean GLOBAL_IS_SET = hasIsSet();

    private static boolean hasIsSet() {
        try {
            GlobalOpenTelemetry.class.getMethod("isSet");
            return true;
        } catch (NoSuchMethodException e) {
            return false;
        }
    }

    private static Tracer tracer(OpenTelemetry otel) {
        String version = OtelRunTracer.class.getPackage().getImplementationVersion();
        return version == null ? otel.getTracer(SCOPE) : otel.getTracer(SCOPE, version);
    }

    /** The tracer to use now: the given one, or the global one once something set it (never setting it ourselves). */
    private Tracer tracer() {
        if (given != null) {
            return given;
        }
        Tracer t = global;
        if (t == null && GlobalOpenTelemetry.isSet()) {
            t = tracer(GlobalOpenTelemetry.get());
            global = t;
        }
        return t;
    }

    @Override
    public RunSpan start(SlotRun run) {
        Tracer tracer = tracer();
        if (tracer == null) {
            return RunSpan.NONE;
        }
        String slot = run.scheduledTime().toString();
        var builder = tracer.spanBuilder("lockstep.run " + run.jobName()).setSpanKind(SpanKind.INTERNAL).setNoParent()
                .setAttribute(FAAS_TRIGGER, run.manual ? "other" : "timer")
                .setAttribute(FAAS_CRON, run.definition.schedule().expression())
                .setAttribute(FAAS_TIME, slot)
                .setAttribute(JOB, run.jobName())
                .setAttribute(SLOT, slot)
                .setAttribute(WORKER, run.workerId())
                .setAttribute(TOKEN, run.fencingToken());
        if (run.manual) {
            builder.setAttribute(MANUAL, true);
        }
        if (run.recovered) {
            builder.setAttribute(RECOVERED, true);
        }
        Span span = builder.startSpan();
        if (run.recovered) {
            span.addEvent("lockstep.recovered", Attributes.of(REASON,
                    "the slot's earlier run lost its lease without an outcome (or never started); this is its rerun"));
        }
        return new Traced(span);
    }

    private record Traced(Span span) implements RunSpan {

        @Override
        public Scope enter() {
            return Context.current().with(span).makeCurrent()::close;
        }

        @Override
        public LoggingEventBuilder tag(LoggingEventBuilder event) {
            SpanContext c = span.getSpanContext();
            return c.isValid() ? event.addKeyValue("trace_id", c.getTraceId()).addKeyValue("span_id", c.getSpanId()) : event;
        }

        @Override
        public void leaseLost(String reason) {
            span.addEvent("lockstep.lease_lost", Attributes.of(REASON, reason));
        }

        @Override
        public void retry(int attempt, long delayMillis, Throwable failure) {
            span.addEvent("lockstep.retry", Attributes.of(ATTEMPT, (long) attempt, DELAY, delayMillis, ERROR, Events.describe(failure)));
        }

        @Override
        public void timedOut(long timeoutMillis) {
            span.addEvent("lockstep.timed_out", Attributes.of(TIMEOUT, timeoutMillis));
        }

        @Override
        public void end(Outcome outcome, int attempts, Throwable failure) {
            span.setAttribute(ATTEMPT, (long) attempts);
            span.setAttribute(OUTCOME, outcome.label());
            if (outcome != Outcome.SUCCEEDED) { // a success leaves the status unset, as instrumentation should
                if (failure != null) {
                    span.recordException(failure);
                }
                span.setStatus(StatusCode.ERROR, outcome.label());
            }
            span.end();
        }
    }
}
