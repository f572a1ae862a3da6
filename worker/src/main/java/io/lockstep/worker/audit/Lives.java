package io.lockstep.worker.audit;

import io.lockstep.scheduler.JobDefinition;
import io.lockstep.worker.audit.Ledger.Life;
import java.util.List;

/**
 * The workers' lives as the checks look them up: which life of a worker wrote an event (a worker restarted under its
 * id has several, each with its own clock offset and config), that event's time by Redis's clock, and the job
 * definition the life had in force. Apart from the checks so that {@link Checks} and {@link LeaseChecks} judge a run
 * the same way: by its own worker's clock, lease and grace.
 */
final class Lives {

    private final List<Life> lives;
    private final Targets targets;

    Lives(List<Life> lives, Targets targets) {
        this.lives = lives;
        this.targets = targets;
    }

    /**
     * The definition the worker that logged {@code started} had in force for {@code slot} (its config by its
     * {@code config_hash}); {@code fallback} when the log cannot say. A run is judged by its own worker's lease and
     * grace: in a rollout they differ from worker to worker.
     */
    JobDefinition runDef(JobDefinition fallback, Ev started, long slot) {
        Life life = started == null ? null : lifeAt(started.worker(), started.ts());
        Targets.Target t = life == null ? null : targets.of(life, fallback.name(), slot);
        return t != null && t.def() != null ? t.def() : fallback;
    }

    /** The life of {@code worker} that wrote an event at {@code ts} (its wall clock): the latest begun by then; null when none. */
    Life lifeAt(String worker, long ts) {
        Life best = null;
        for (Life l : lives) {
            if (l.worker().equals(worker) && l.start() <= ts && (best == null || l.start() > best.start())) {
                best = l;
            }
        }
        return best;
    }

    /** An event's time by Redis's clock: its worker's wall clock through the offset of the life it was written in. */
    long cluster(Ev e) {
        Life life = lifeAt(e.worker(), e.ts());
        return e.ts() + (life == null ? 0 : life.offset());
    }
}
