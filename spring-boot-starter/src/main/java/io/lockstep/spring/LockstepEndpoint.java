package io.lockstep.spring;

import io.lockstep.redis.RedisAdmin;
import io.lockstep.redis.RedisLockProvider;
import io.lockstep.scheduler.JobDefinition;
import io.lockstep.scheduler.config.LockstepConfig;
import io.lockstep.scheduler.lock.WorkerInfo;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;

/**
 * {@code /actuator/lockstep}: the cluster as {@code lockstep status} shows it, read-only (live
 * workers with their config hash, every job with its pause, last run and runs in flight), read
 * from Redis at each request. Plain maps of strings and numbers, so that Boot 3's Jackson 2 and
 * Boot 4's Jackson 3 write the same JSON.
 */
@Endpoint(id = "lockstep")
public class LockstepEndpoint {

    private final LockstepConfig config;
    private final RedisAdmin admin;

    LockstepEndpoint(LockstepConfig config, RedisLockProvider provider) {
        this.config = config;
        this.admin = RedisAdmin.of(provider);
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
