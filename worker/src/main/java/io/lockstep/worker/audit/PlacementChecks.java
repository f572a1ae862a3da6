package io.lockstep.worker.audit;

import io.lockstep.scheduler.JobDefinition;
import io.lockstep.worker.audit.Ev.Type;
import java.time.Instant;
import java.util.List;
import java.util.Set;

/**
 * The checks of where and when a job may run at all, by its config ({@code calendar}, {@code labels}),
 * apart from {@link Checks}' checks of its runs: a slot the job's calendars exclude never runs and a
 * calendar's skip is one they exclude; a job with {@code runOn} labels runs only on workers that have them.
 */
final class PlacementChecks {

    private final Ledger ledger;
    private final AuditReport report;

    PlacementChecks(Ledger ledger, AuditReport report) {
        this.ledger = ledger;
        this.report = report;
    }

    /** Both checks of one slot of the config in force ({@code def}); {@code original} its first run, or null. */
    void check(JobDefinition def, long slot, List<Ev> events, Checks.Run original) {
        calendar(def, slot, events, original);
        labels(def, slot, original);
    }

    /**
     * The job's calendars, as the config in force at the slot says: a slot they exclude never runs,
     * and a slot reported skipped for them is one they exclude.
     */
    private void calendar(JobDefinition def, long slot, List<Ev> events, Checks.Run original) {
        if (events.isEmpty()) {
            return;
        }
        boolean[] unknown = {false};
        java.util.Optional<String> excluded = def.calendars().excludes(Instant.ofEpochMilli(slot), (c, e) -> unknown[0] = true);
        if (unknown[0]) {
            return; // an application's calendar not on the audit's class path (or one that failed): the log cannot be judged by it
        }
        if (original != null && excluded.isPresent()) {
            report.violation("calendar", def.name(), slot, "ran, although its calendars exclude it (" + excluded.get() + ")",
                    List.of(original.started()));
        }
        for (Ev e : events) {
            if (e.type() == Type.SLOT_SKIPPED && Ledger.CALENDAR.equals(e.text()) && excluded.isEmpty()) {
                report.violation("calendar", def.name(), slot, "reported skipped for its calendars by " + e.worker()
                        + ", but the config in force then does not exclude it", List.of(e));
            }
        }
    }

    /**
     * A job with {@code runOn} labels ran on a worker that had them, by the labels its process logged
     * at start ({@code config_loaded}; a worker that logged none, an embedded one, is not judged).
     */
    private void labels(JobDefinition def, long slot, Checks.Run original) {
        if (original == null || def.runOn().labels().isEmpty()) {
            return;
        }
        Ledger.WorkerLog w = ledger.workers.get(original.started().worker());
        String logged = null;
        for (Ev e : w == null ? List.<Ev>of() : w.lifecycle) {
            if (e.type() == Type.CONFIG_LOADED && e.ts() <= original.started().ts()) {
                logged = e.text();
            }
        }
        if (logged == null) {
            return;
        }
        Set<String> has = logged.isEmpty() ? Set.of() : new java.util.HashSet<>(java.util.Arrays.asList(logged.split(",")));
        if (!def.runOn().allows(has)) {
            report.violation("labels", def.name(), slot, "ran on " + original.started().worker() + ", which has labels " + new java.util.TreeSet<>(has)
                    + ", but the job runs only on workers with " + new java.util.TreeSet<>(def.runOn().labels()), List.of(original.started()));
        }
    }
}
