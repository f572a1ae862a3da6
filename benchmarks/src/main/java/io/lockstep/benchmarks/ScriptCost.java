package io.lockstep.benchmarks;

import io.lockstep.redis.LocalRedisServer;
import io.lockstep.redis.RedisLockProvider;
import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.ClaimResult;
import io.lockstep.scheduler.lock.Completion;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.Outcome;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import redis.clients.jedis.Jedis;

/**
 * What a slot's two script calls cost Redis, apart from everything else a cluster does: rounds of
 * {@code jobs} claims at one instant (each a win, as the preferred claimer's are) then their
 * outcomes, sent through {@link RedisLockProvider} in its own batches, one worker, on an idle
 * redis-server. Redis's own accounting ({@code INFO commandstats}: the microseconds spent in
 * {@code EVALSHA}, the commands the scripts ran) gives the cost per slot of {@code claim.lua} and of
 * {@code complete.lua}. No worker JVMs, no timing of the client: a change to a script is measured
 * A/B in a minute, with the spread of several runs ({@code --only scripts}).
 */
final class ScriptCost {

    /** One run: Redis microseconds per slot of the claims and of the outcomes, and commands executed per slot. */
    record Result(double claimMicros, double completeMicros, double commandsPerSlot, double cpuMicros) {}

    private ScriptCost() {}

    static Result run(LocalRedisServer redis, int jobs, int rounds) {
        try (RedisLockProvider provider = RedisLockProvider.builder().uri(redis.uri()).keyPrefix("cost-" + UUID.randomUUID()).build();
                Jedis raw = new Jedis(redis.host(), redis.port())) {
            Instant first = Instant.ofEpochSecond(Long.parseLong(raw.time().get(0))).truncatedTo(ChronoUnit.SECONDS).minusSeconds(rounds + 5);
            long claimUs = 0;
            long completeUs = 0;
            long commands = 0;
            double cpu = 0;
            int counted = 0;
            for (int r = 0; r < rounds; r++) {
                boolean warm = r >= 2; // the first rounds load the scripts and create the keys
                Instant slot = first.plusSeconds(r);
                List<ClaimRequest> claims = new ArrayList<>(jobs);
                for (int i = 0; i < jobs; i++) {
                    claims.add(new ClaimRequest(new Lease("job-" + i, slot, UUID.randomUUID().toString(), Duration.ofSeconds(30), true), "w1",
                            Duration.ofSeconds(60), ClaimRequest.Mode.CLAIM, false));
                }
                double cpuBefore = usedCpu(raw);
                long[] before = evalsha(raw);
                List<ClaimResult> answers = provider.claim(claims);
                long[] claimed = evalsha(raw);
                List<Completion> outcomes = new ArrayList<>(jobs);
                for (int i = 0; i < jobs; i++) {
                    if (answers.get(i).status() != ClaimResult.Status.CLAIMED) {
                        throw new IllegalStateException("a claim of the cost run was not won: " + answers.get(i));
                    }
                    outcomes.add(new Completion(claims.get(i).lease(), Outcome.SUCCEEDED, 1, 3, ""));
                }
                provider.complete(outcomes);
                long[] after = evalsha(raw);
                double cpuAfter = usedCpu(raw);
                if (warm) {
                    claimUs += claimed[0] - before[0];
                    completeUs += after[0] - claimed[0];
                    commands += after[1] - before[1] - 2; // the accounting's own INFO calls between the two snapshots
                    cpu += cpuAfter - cpuBefore;
                    counted += jobs;
                }
            }
            return new Result((double) claimUs / counted, (double) completeUs / counted, (double) commands / counted, cpu * 1e6 / counted);
        }
    }

    /**
     * The server's CPU time so far (used_cpu_sys + used_cpu_user, seconds): the scripts, and also
     * what {@code commandstats} leaves out, reading and parsing each call's arguments and writing its reply.
     */
    private static double usedCpu(Jedis raw) {
        double cpu = 0;
        for (String line : raw.info("cpu").split("\r\n")) {
            if (line.startsWith("used_cpu_sys:") || line.startsWith("used_cpu_user:")) {
                cpu += Double.parseDouble(line.substring(line.indexOf(':') + 1));
            }
        }
        return cpu;
    }

    /** {microseconds spent in EVALSHA, commands executed in all} so far. */
    private static long[] evalsha(Jedis raw) {
        long micros = 0;
        long calls = 0;
        for (String line : raw.info("commandstats").split("\r\n")) {
            if (!line.startsWith("cmdstat_")) {
                continue;
            }
            calls += Long.parseLong(line.replaceAll("^[^:]*:calls=([0-9]+),.*", "$1"));
            if (line.startsWith("cmdstat_evalsha:")) {
                micros = Long.parseLong(line.replaceAll(".*,usec=([0-9]+),.*", "$1"));
            }
        }
        return new long[] {micros, calls};
    }
}
