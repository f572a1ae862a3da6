package io.lockstep.worker;

import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.autoconfigure.AutoConfiguredOpenTelemetrySdk;
import java.util.Map;

/**
 * The worker's OpenTelemetry SDK, configured from the standard {@code OTEL_*} environment
 * variables (or {@code otel.*} system properties) by the SDK's autoconfigure module, as any
 * OpenTelemetry-instrumented service is: {@code OTEL_SERVICE_NAME}, {@code OTEL_TRACES_EXPORTER},
 * {@code OTEL_EXPORTER_OTLP_ENDPOINT}, {@code OTEL_TRACES_SAMPLER}, {@code OTEL_RESOURCE_ATTRIBUTES}...
 *
 * <p>Off (no SDK, no span, no exporter connection) unless at least one such variable is set: a
 * worker nobody asked to trace does not try to reach a collector on localhost. When on, its
 * defaults differ from the SDK's in three places, each overridden by the environment: the service
 * name is {@code lockstep}, and metrics and logs are not exported (the worker's metrics are on
 * {@code /metrics}, its events in its JSON log). The SDK is also made the global one, so a job's
 * own instrumentation finds it through {@code GlobalOpenTelemetry}. Exporters shipped: OTLP (gRPC
 * and HTTP, over the JDK's HTTP client) and {@code logging}.
 */
final class Telemetry {

    private Telemetry() {}

    /** The SDK, or null when no {@code OTEL_*} variable nor {@code otel.*} property is set. */
    static OpenTelemetrySdk fromEnvironment() {
        boolean asked = System.getenv().keySet().stream().anyMatch(k -> k.startsWith("OTEL_"))
                || System.getProperties().stringPropertyNames().stream().anyMatch(k -> k.startsWith("otel."));
        if (!asked) {
            return null;
        }
        return AutoConfiguredOpenTelemetrySdk.builder()
                .addPropertiesSupplier(() -> Map.of("otel.service.name", "lockstep", "otel.metrics.exporter", "none",
                        "otel.logs.exporter", "none"))
                .setResultAsGlobal()
                .build()
                .getOpenTelemetrySdk();
    }

    /** Flushes the spans not exported yet and stops the SDK (at most 10 s); null: nothing. */
    static void close(OpenTelemetrySdk sdk) {
        if (sdk != null) {
            sdk.shutdown().join(10, java.util.concurrent.TimeUnit.SECONDS);
        }
    }
}
