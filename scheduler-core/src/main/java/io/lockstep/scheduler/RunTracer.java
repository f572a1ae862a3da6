package io.lockstep.scheduler;

/**
 * Starts a {@link RunSpan} per run. OpenTelemetry is optional: with its API on the class path,
 * runs are traced through the application's {@code OpenTelemetry} (given to
 * {@link Scheduler.Builder#openTelemetry}), or else through the global one once something has set
 * it (an SDK, the Java agent); this never sets the global itself. Without the API, {@link #NONE}.
 * See {@link OtelRunTracer} for the span's name and attributes.
 */
interface RunTracer {

    RunTracer NONE = run -> RunSpan.NONE;

    /** A span for {@code run}, started now. */
    RunSpan start(SlotRun run);

    /**
     * The tracer for a scheduler: {@code openTelemetry} (an {@code io.opentelemetry.api.OpenTelemetry},
     * typed {@code Object} so that this class loads without the API) or, when null, the global one.
     */
    static RunTracer create(Object openTelemetry) {
        if (openTelemetry == null && !apiPresent()) {
            return NONE;
        }
        return OtelRunTracer.create(openTelemetry); // loaded only here: it links against the API
    }

    private static boolean apiPresent() {
        try {
            Class.forName("io.opentelemetry.api.GlobalOpenTelemetry", false, RunTracer.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }
}
