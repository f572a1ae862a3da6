package io.lockstep.spring;

import io.lockstep.scheduler.Scheduler;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The scheduler's health in Boot's terms, shared by the indicators of Boot 3
 * ({@code org.springframework.boot.actuate.health}) and Boot 4 ({@code org.springframework.boot.health}):
 * {@code UP} while it claims; {@code OUT_OF_SERVICE} while it runs but does not claim (Redis
 * unreachable, not started yet, stopping); {@code DOWN} when its tick thread died.
 */
final class LockstepHealth {

    private LockstepHealth() {}

    static String status(Scheduler scheduler) {
        Scheduler.Health h = scheduler.health();
        if (h.ready()) {
            return "UP";
        }
        return h.live() || h.reason().equals("stopping") ? "OUT_OF_SERVICE" : "DOWN";
    }

    static Map<String, Object> details(Scheduler scheduler) {
        Scheduler.Health h = scheduler.health();
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("worker", scheduler.workerId());
        d.put("reason", h.reason());
        return d;
    }
}
