package io.lockstep.scheduler;

import java.util.Set;
import java.util.TreeSet;

/**
 * Which workers may run a job ({@code runOn: {labels: [gpu]}}): only those started with every one
 * of its labels ({@code worker.labels}, {@code run --label}). The others never claim, start, rerun
 * or trigger it; they report each of its slots that no labelled worker decided within its grace
 * ({@code slot_missed}, {@code code: no_worker}), so a job whose label no live worker has is never
 * silent. Immutable.
 *
 * @param labels the labels a worker needs, all of them (empty: any worker)
 */
public record RunOn(Set<String> labels) {

    /** Any worker. */
    public static final RunOn ANY = new RunOn(Set.of());

    public RunOn {
        for (String l : labels) {
            if (!JobDefinition.NAME.matcher(l).matches()) {
                throw new IllegalArgumentException("a label must match " + JobDefinition.NAME + ", but was \"" + l + "\"");
            }
        }
        labels = Set.copyOf(new TreeSet<>(labels));
    }

    /** Whether a worker with {@code workerLabels} may run the job. */
    public boolean allows(Set<String> workerLabels) {
        return workerLabels.containsAll(labels);
    }

    @Override
    public String toString() {
        return labels.isEmpty() ? "any worker" : "labels " + new TreeSet<>(labels);
    }
}
