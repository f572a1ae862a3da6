package io.lockstep.spring;

import io.lockstep.scheduler.Scheduler;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The scheduler's health in Boot's terms, shared by the indicators of Boot 3
 * ({@code org.springframework.boot.actuate.health}) and Boot 4 ({@code org.springframework.boot.health}):
 * {@code UP} while it claims; while it runs but does not claim (Redis unreachable, not started yet,
 * stopping), {@code UP} with {@code claiming: false} in the details, or {@code OUT_OF_SERVICE} under
 * {@code lockstep.health.strict=true}; {@code DOWN} when its tick thread died. Not strict by default
 * (F7 of the 2026-12-04 trial): Boot's root health decides whether a load balancer sends the web
 * application traffic, and a blip of the scheduler's Redis must not pull every instance out.
 */
final class LockstepHealth {

    private LockstepHealth() {}

    static String status(Scheduler scheduler, boolean strict) {
        Scheduler.Health h = scheduler.health();
        if (h.ready()) {
            return "UP";
        }
        if (!h.live() && !h.reason().equals("stopping")) {
            return "DOWN";
        }
        return strict ? "OUT_OF_SERVICE" : "UP";
    }

    static Map<String, Object> details(Scheduler scheduler) {
        Scheduler.Health h = scheduler.health();
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("worker", scheduler.workerId());
        d.put("claiming", h.ready());
        d.put("reason", h.reason());
        return d;
    }
}
