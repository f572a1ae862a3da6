package io.lockstep.redis;

import io.lockstep.scheduler.JobDefinition;
import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.Completion;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.Outcome;
import io.lockstep.scheduler.lock.WorkerInfo;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisException;

/**
 * What a worker checks at start, before anything runs: the server answers, takes our credentials,
 * lets this user run every script the way a worker does (a probe slot of {@value #PREFLIGHT_JOB}
 * is claimed, renewed, looked at, completed and recovered; its keys have ttls like any job's), and
 * will not evict keys. Stateless.
 */
final class StartCheck {

    private StartCheck() {}

    /**
     * The job that {@link RedisLockProvider#ping()} claims, renews, looks at and completes once, to try the user's permissions;
     * reserved in the core ({@link JobDefinition#PREFLIGHT_NAME}), so that the config loader refuses a real job of this name.
     */
    static final String PREFLIGHT_JOB = JobDefinition.PREFLIGHT_NAME;

    /**
     * Checks, before anything runs, that the server answers, accepts our credentials, and lets this
     * user run what Lockstep runs: one claim, renewal, look, completion and recovery of a probe slot
     * of the job {@value #PREFLIGHT_JOB} (its keys have ttls like any job's), and one heartbeat. Fails with one clear line
     * otherwise, naming the command an ACL user may not run. Warns (event {@code redis_eviction_policy})
     * when the server may evict keys.
     */
    static void run(RedisLockProvider provider, UnifiedJedis jedis, RedisCalls calls, String target) {
        try {
            jedis.ping();
        } catch (JedisException e) {
            throw calls.wrap("ping", e);
        }
        Lease probe = new Lease(PREFLIGHT_JOB, Instant.ofEpochMilli(provider.serverTimeMillis() - 1),
                java.util.UUID.randomUUID().toString().replace("-", ""), Duration.ofSeconds(2), false);
        provider.claim(List.of(new ClaimRequest(probe, "preflight", Duration.ofSeconds(10), false)));
        provider.renew(List.of(probe));
        provider.runsInFlight(List.of(PREFLIGHT_JOB));
        provider.lastSlots(List.of(PREFLIGHT_JOB));
        provider.complete(List.of(new Completion(probe, Outcome.SUCCEEDED)));
        provider.claim(List.of(new ClaimRequest(probe, "preflight", Duration.ofSeconds(10), ClaimRequest.Mode.RECOVER, false)));
        // Membership: publish a config, heartbeat, read the config back, leave; on keys of its own
        // (under the same prefix, so the same ACL pattern), so that no worker ever sees the probe.
        RedisMembers probeMembers = new RedisMembers(jedis, calls,
                new RedisKeys(provider.keys().prefix() + ":" + PREFLIGHT_JOB, provider.keys().cluster()), false);
        Instant now = Instant.ofEpochMilli(provider.serverTimeMillis());
        probeMembers.publish(PREFLIGHT_JOB, java.util.Map.of(PREFLIGHT_JOB, "{}"));
        probeMembers.heartbeat(new WorkerInfo(PREFLIGHT_JOB, "preflight", 0, "preflight", now, 0, 0, PREFLIGHT_JOB, now),
                WorkerInfo.HEARTBEAT_TTL);
        probeMembers.config(PREFLIGHT_JOB);
        probeMembers.leave(PREFLIGHT_JOB);
        evictionWarning(jedis, target).ifPresent(warning -> org.slf4j.LoggerFactory.getLogger("io.lockstep.events").atWarn()
                .addKeyValue("event", "redis_eviction_policy").addKeyValue("target", target)
                .log(warning));
    }

    /**
     * Why the server's {@code maxmemory-policy} endangers exactly-once, or empty when it is
     * {@code noeviction} (or cannot be read, as under an ACL user without {@code INFO}). Every key
     * Lockstep writes has a ttl, so even a {@code volatile-*} policy may evict a slot record or a
     * lease under memory pressure, and an evicted record lets a late worker run the slot again.
     */
    static java.util.Optional<String> evictionWarning(UnifiedJedis jedis, String target) {
        String policy;
        try {
            policy = jedis.info("memory").lines().filter(l -> l.startsWith("maxmemory_policy:"))
                    .map(l -> l.substring("maxmemory_policy:".length()).trim()).findFirst().orElse("noeviction");
        } catch (JedisException e) {
            return java.util.Optional.empty();
        }
        if ("noeviction".equals(policy)) {
            return java.util.Optional.empty();
        }
        return java.util.Optional.of("maxmemory-policy is " + policy + ": under memory pressure Redis may evict slot records "
                + "and leases, which can let a slot run twice; set maxmemory-policy noeviction on " + target);
    }
}
