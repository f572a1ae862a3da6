package io.lockstep.scheduler;

import java.util.Set;
import java.util.TreeSet;

/**
 * Which workers may run a job ({@code runOn: {labels: [gpu]}}): only those started with every one
 * of its labels ({@code worker.labels}, {@code run --label}). The others never claim, start, rerun
 * or trigger it; they report each of its slots that no labelled worker decided within its grace
 * ({@code slot_missed}, {@code code: no_worker}), so a job whose label no live worker has is never
 * silent.
 *
 * <p>{@code runOn: every-worker} runs each slot once on every live worker (that has the labels):
 * each worker claims its own instance of the job, {@code <job>@<worker id>} ({@link #instance}),
 * with its own slot records, history and events, so a worker restarted under the same id never
 * runs a slot of its instance twice (give such workers a stable {@code worker.id}). Immutable.
 *
 * @param labels the labels a worker needs, all of them (empty: any worker)
 * @param everyWorker each slot runs on every such worker, once per worker, instead of once in the cluster
 */
public record RunOn(Set<String> labels, boolean everyWorker) {

    /** Any worker, once per slot in the cluster. */
    public static final RunOn ANY = new RunOn(Set.of());
    /** Every worker, once per slot each. */
    public static final RunOn EVERY_WORKER = new RunOn(Set.of(), true);

    /** Workers with {@code labels}, once per slot in the cluster. */
    public RunOn(Set<String> labels) {
        this(labels, false);
    }

    /** The name of the instance of an every-worker job that worker {@code workerId} runs: {@code <job>@<worker id>}. */
    public static String instance(String job, String workerId) {
        return job + "@" + workerId;
    }

    /** The job an instance name belongs to ({@code report} of {@code report@w1}); a job's own name otherwise. */
    public static String jobOf(String name) {
        int at = name.indexOf('@');
        return at < 0 ? name : name.substring(0, at);
    }

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
        return (everyWorker ? "every worker" : "") + (labels.isEmpty() ? (everyWorker ? "" : "any worker")
                : (everyWorker ? " with " : "") + "labels " + new TreeSet<>(labels));
    }
}
