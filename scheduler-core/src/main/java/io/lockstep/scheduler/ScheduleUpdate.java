package io.lockstep.scheduler;

import java.util.List;

/**
 * What {@link Scheduler#update} changed: the names of the jobs added (or enabled), changed (a new
 * version with a new job instance, its next slot computed from the update) and removed (or
 * disabled), and the hash of the definitions now in force (the {@code config_hash} of the worker's
 * heartbeat, which the drift check and {@code status} compare).
 */
public record ScheduleUpdate(List<String> added, List<String> changed, List<String> removed, String configHash) {

    public ScheduleUpdate {
        added = List.copyOf(added);
        changed = List.copyOf(changed);
        removed = List.copyOf(removed);
    }

    /** Whether any job was added, changed or removed. */
    public boolean changedAnything() {
        return !added.isEmpty() || !changed.isEmpty() || !removed.isEmpty();
    }
}
