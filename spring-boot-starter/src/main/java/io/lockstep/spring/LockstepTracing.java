package io.lockstep.spring;

import io.lockstep.scheduler.Scheduler;
import io.opentelemetry.api.OpenTelemetry;
import java.util.Map;
import org.springframework.beans.factory.DisposableBean;

/**
 * Traces the runs with the application's {@code OpenTelemetry} bean; without one, with an SDK
 * configured from the standard {@code OTEL_*} environment when the SDK's autoconfigure module is on
 * the class path and at least one such variable is set (closed with the context, flushing its
 * spans); else through {@code GlobalOpenTelemetry} once something sets it (the Java agent).
 */
final class LockstepTracing implements LockstepSchedulerCustomizer, DisposableBean {

    private static final String AUTOCONFIGURE = "io.opentelemetry.sdk.autoconfigure.AutoConfiguredOpenTelemetrySdk";

    private final OpenTelemetry otel;
    private final AutoCloseable owned;

    LockstepTracing(OpenTelemetry application) {
        if (application != null) {
            this.otel = application;
            this.owned = null;
        } else if (present(AUTOCONFIGURE) && System.getenv().keySet().stream().anyMatch(k -> k.startsWith("OTEL_"))) {
            this.otel = FromEnvironment.sdk();
            this.owned = otel instanceof AutoCloseable c ? c : null;
        } else {
            this.otel = null;
            this.owned = null;
        }
    }

    @Override
    public void customize(Scheduler.Builder builder) {
        if (otel != null) {
            builder.openTelemetry(otel);
        }
    }

    @Override
    public void destroy() throws Exception {
        if (owned != null) {
            owned.close();
        }
    }

    /** Loaded only when the SDK's autoconfigure module is on the class path. */
    private static final class FromEnvironment {

        static OpenTelemetry sdk() {
            return io.opentelemetry.sdk.autoconfigure.AutoConfiguredOpenTelemetrySdk.builder()
                    .addPropertiesSupplier(() -> Map.of("otel.metrics.exporter", "none", "otel.logs.exporter", "none"))
                    .build().getOpenTelemetrySdk();
        }
    }

    private static boolean present(String className) {
        try {
            Class.forName(className, false, LockstepTracing.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }
}
