package io.lockstep.scheduler.lock;

import java.util.Collections;
import java.util.List;

/**
 * A batch of completions or renewals of which only some are confirmed: a shard (one master of a
 * Redis Cluster) could not be reached, or fewer of its replicas than required acknowledged its part
 * ({@code waitReplicas}), so a failover could lose it. {@link #answers()} holds, per item in order,
 * the answer of each confirmed one and {@code null} for each to be sent again (both operations are
 * retry-safe). A degraded master thus delays only its own jobs: a bulkhead per master.
 */
public final class PartiallyConfirmed extends LockException {

    private final transient List<Boolean> answers;

    public PartiallyConfirmed(String target, String message, List<Boolean> answers) {
        super(target, message, null);
        this.answers = Collections.unmodifiableList(answers);
    }

    /** Per item, its answer when confirmed, else null. */
    public List<Boolean> answers() {
        return answers;
    }
}
