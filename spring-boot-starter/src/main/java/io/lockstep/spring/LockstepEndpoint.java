package io.lockstep.spring;

import io.lockstep.redis.OperatorActions;
import io.lockstep.redis.RedisAdmin;
import io.lockstep.redis.RedisLockProvider;
import io.lockstep.scheduler.JobDefinition;
import io.lockstep.scheduler.Scheduler;
import io.lockstep.scheduler.config.LockstepConfig;
import io.lockstep.scheduler.lock.WorkerInfo;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;
import org.springframework.lang.Nullable;

/**
 * {@code /actuator/lockstep}: the cluster as {@code lockstep status} shows it (live workers with
 * their config hash, every job with its pause, last run and runs in flight), read from Redis at
 * each request; and {@code POST /actuator/lockstep} with {@code {"action": "pause" | "resume" |
 * "trigger" | "backfill", "job": ..., "note", "duration", "from", "to", "rate"}}: the status page's
 * actions ({@link OperatorActions}: the CLI's checks, recorded with the user as {@code by}, logged
 * as {@code operator_action}).
 *
 * <p>The write operation is secured by the application's Spring Security: it acts only for an
 * authenticated user in the role {@code lockstep.endpoint.operator-role}, by default
 * {@value #OPERATOR_ROLE} (authority {@code ROLE_LOCKSTEP_OPERATOR});
 * anyone else gets 403 and nothing changes, also when the application has no Spring Security at
 * all, and over JMX (which carries no user: expose the write operation over the web). Plain maps of strings and numbers, so that Boot 3's Jackson 2 and Boot 4's Jackson 3 write
 * the same JSON.
 */
@Endpoint(id = "lockstep")
public class LockstepEndpoint {

    /** The role a user needs for the write operation unless {@code lockstep.endpoint.operator-role} names another. */
    public static final String OPERATOR_ROLE = "LOCKSTEP_OPERATOR";

    private final LockstepConfig config;
    private final RedisAdmin admin;
    private final OperatorActions actions;
    private final String workerId;
    private final String operatorRole;

    LockstepEndpoint(LockstepConfig config, RedisLockProvider provider, Scheduler scheduler, String operatorRole) {
        this.config = config;
        this.admin = RedisAdmin.of(provider);
        this.actions = new OperatorActions(admin, scheduler::definitions);
        this.workerId = scheduler.workerId();
        this.operatorRole = operatorRole == null || operatorRole.isBlank() ? OPERATOR_ROLE : operatorRole.strip();
    }

    /**
     * {@code POST /actuator/lockstep}: one action of an operator ({@link LockstepEndpoint}); 200 with
     * what was done, 400 for a wrong action, job or param, 403 without the role, 503 when Redis failed.
     */
    @WriteOperation
    public WebEndpointResponse<Map<String, Object>> act(SecurityContext security, String action, String job, @Nullable String note,
            @Nullable String duration, @Nullable String from, @Nullable String to, @Nullable String rate) {
        java.security.Principal principal = security == null ? null : security.getPrincipal();
        String user = principal == null ? "" : principal.getName();
        if (principal == null || !security.isUserInRole(operatorRole)) {
            String why = principal == null ? "an authenticated user in the role " + operatorRole + " may act (Spring Security)"
                    : "role " + operatorRole + " needed";
            OperatorActions.log(workerId, user, "", action, job, "", "refused", why);
            return answer(403, Map.of("error", action + " of " + job + " refused: " + why));
        }
        Map<String, String> params = new LinkedHashMap<>();
        putIf(params, "note", note);
        putIf(params, "for", duration);
        putIf(params, "from", from);
        putIf(params, "to", to);
        putIf(params, "rate", rate);
        try {
            String detail = actions.perform(action, job, params, user);
            OperatorActions.log(workerId, user, operatorRole, action, job, "", "done", detail);
            return answer(200, Map.of("action", action, "job", job, "by", user, "detail", detail));
        } catch (IllegalArgumentException | IllegalStateException | UnsupportedOperationException e) {
            OperatorActions.log(workerId, user, operatorRole, action, job, "", "refused", e.getMessage());
            return answer(400, Map.of("error", action + " of " + job + " refused: " + e.getMessage()));
        } catch (RuntimeException e) { // Redis down or refusing: the action may not have been done
            OperatorActions.log(workerId, user, operatorRole, action, job, "", "failed", String.valueOf(e.getMessage()));
            return answer(503, Map.of("error", action + " of " + job + " failed: " + e.getMessage()));
        }
    }

    private static void putIf(Map<String, String> params, String key, String value) {
        if (value != null) {
            params.put(key, value);
        }
    }

    private static WebEndpointResponse<Map<String, Object>> answer(int status, Map<String, Object> body) {
        return new WebEndpointResponse<>(body, status);
    }

    @ReadOperation
    public Map<String, Object> status() {
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("now", Instant.ofEpochMilli(admin.serverTimeMillis()).toString());
        List<Map<String, Object>> workers = new ArrayList<>();
        for (WorkerInfo w : admin.workers()) {
            Map<String, Object> o = new LinkedHashMap<>();
            o.put("id", w.id());
            o.put("host", w.host());
            o.put("configHash", w.configHash());
            o.put("threads", w.threads());
            o.put("busy", w.busy());
            o.put("lastSeen", w.lastSeen().toString());
            o.put("draining", w.draining());
            workers.add(o);
        }
        root.put("workers", workers);
        List<Map<String, Object>> jobs = new ArrayList<>();
        List<String> names = config.jobs().stream().map(JobDefinition::name).toList();
        Map<String, JobDefinition> byName = new LinkedHashMap<>();
        config.jobs().forEach(j -> byName.put(j.name(), j));
        for (RedisAdmin.JobState s : admin.jobs(names, 5)) {
            JobDefinition d = byName.get(s.job());
            Map<String, Object> o = new LinkedHashMap<>();
            o.put("name", s.job());
            o.put("cron", d.schedule().expression());
            o.put("zone", d.schedule().zone().getId());
            o.put("enabled", d.enabled());
            o.put("paused", s.pause().map(p -> (Object) Map.of("note", p.note(), "by", p.by(), "at", p.at().toString())).orElse(false));
            s.lastRun().ifPresent(r -> o.put("lastRun", Map.of("slot", r.slot().toString(), "worker", r.worker(), "outcome", r.outcome(),
                    "fencingToken", r.fencingToken(), "durationMs", r.durationMs())));
            o.put("running", s.running().stream().map(f -> Map.of("slot", f.slot().toString(), "worker", f.worker(),
                    "fencingToken", f.fencingToken())).toList());
            jobs.add(o);
        }
        root.put("jobs", jobs);
        return root;
    }
}
