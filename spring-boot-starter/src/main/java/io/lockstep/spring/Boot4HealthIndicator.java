package io.lockstep.spring;

import io.lockstep.scheduler.Scheduler;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;

/** {@link LockstepHealth} for Spring Boot 4, whose health API has a module and package of its own. */
final class Boot4HealthIndicator implements HealthIndicator {

    private final Scheduler scheduler;
    private final boolean strict;

    Boot4HealthIndicator(Scheduler scheduler, boolean strict) {
        this.scheduler = scheduler;
        this.strict = strict;
    }

    @Override
    public Health health() {
        return Health.status(LockstepHealth.status(scheduler, strict)).withDetails(LockstepHealth.details(scheduler)).build();
    }
}
