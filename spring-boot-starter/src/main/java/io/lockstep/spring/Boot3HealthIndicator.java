package io.lockstep.spring;

import io.lockstep.scheduler.Scheduler;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthIndicator;

/** {@link LockstepHealth} for Spring Boot 3's actuator. */
final class Boot3HealthIndicator implements HealthIndicator {

    private final Scheduler scheduler;
    private final boolean strict;

    Boot3HealthIndicator(Scheduler scheduler, boolean strict) {
        this.scheduler = scheduler;
        this.strict = strict;
    }

    @Override
    public Health health() {
        return Health.status(LockstepHealth.status(scheduler, strict)).withDetails(LockstepHealth.details(scheduler)).build();
    }
}
