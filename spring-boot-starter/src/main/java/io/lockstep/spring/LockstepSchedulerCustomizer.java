package io.lockstep.spring;

import io.lockstep.scheduler.Scheduler;

/** Applied to the scheduler's builder before it is built: a bean of this type adjusts what the starter set. */
@FunctionalInterface
public interface LockstepSchedulerCustomizer {

    void customize(Scheduler.Builder builder);
}
