package io.lockstep.spring;

import io.lockstep.scheduler.Scheduler;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthIndicator;

/** {@link LockstepHealth} for Spring Boot 3's actuator. */
final class Boot3HealthIndicator implements HealthIndicator {

    private final Scheduler scheduler;

    Boot3HealthIndicator(Scheduler scheduler) {
        this.scheduler = scheduler;
    }

    @Override
    public Health health() {
        return Health.status(LockstepHealth.status(scheduler)).withDetails(LockstepHealth.details(scheduler)).build();
    }
}
