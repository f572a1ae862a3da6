package io.lockstep.benchmarks;

import io.lockstep.redis.LocalRedisServer;
import io.lockstep.redis.RedisLockProvider;
import io.lockstep.redis.RedisLocks;
import io.lockstep.redis.RedisSemaphore;
import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.Expectations;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.Outcome;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.RedisClient;

/**
 * What the limits and the expectations cost Redis, by its own accounting ({@code INFO commandstats}:
 * microseconds in {@code EVALSHA} per call), against the floor of the same run: a lock's acquire
 * and release ({@code lock_acquire.lua}, {@code lock_release.lua}). A permit cycle is a
 * semaphore's try and release; a look is one {@code expect.lua} call for one job, quiet (nothing new
 * in its history) or reading one new run. One worker, an idle redis-server ({@code --only extras}).
 */
final class ExtrasCost {

    /** Redis µs per lock cycle (the floor), per permit cycle (n = 2 and n = 20), per quiet look, per look with a new run. */
    record Result(double lockCycle, double permitCycle2, double permitCycle20, double quietLook, double lookWithARun) {}

    private ExtrasCost() {}

    static Result run(LocalRedisServer redis, int n) {
        String prefix = "extras-" + UUID.randomUUID();
        try (RedisClient client = RedisClient.create(redis.host(), redis.port());
                RedisLocks locks = RedisLocks.builder(client).keyPrefix(prefix).circuitBreaker(null).build();
                RedisLockProvider provider = RedisLockProvider.builder().uri(redis.uri()).keyPrefix(prefix).build();
                Jedis raw = new Jedis(redis.host(), redis.port())) {
            Duration lease = Duration.ofSeconds(30);
            double lock = per(raw, n, () -> locks.tryAcquire("floor", lease).orElseThrow().release());
            RedisSemaphore two = locks.semaphore("two", 2);
            double permit2 = per(raw, n, () -> two.tryAcquire(lease).orElseThrow().release());
            RedisSemaphore twenty = locks.semaphore("twenty", 20);
            double permit20 = per(raw, n, () -> twenty.tryAcquire(lease).orElseThrow().release());
            Expectations e = provider.expectations().orElseThrow();
            String job = "judged";
            e.judge(job, "w=60000;e=86400000", 60_000, 86_400_000, List.of(), "w1", lease);
            double quiet = per(raw, n, () -> e.judge(job, "w=60000;e=86400000", 60_000, 86_400_000, List.of(), "w1", lease));
            // one run of the job between two looks: a claim and its outcome (their own script time left out)
            long slot = Long.parseLong(raw.time().get(0)) * 1000 - 3_600_000;
            long looks = 0;
            for (int i = 0; i < n; i++) {
                slot += 1_000;
                Lease l = new Lease(job, Instant.ofEpochMilli(slot), UUID.randomUUID().toString(), lease, false);
                provider.claim(List.of(new ClaimRequest(l, "w1", Duration.ofDays(1), ClaimRequest.Mode.CATCH_UP, false)));
                provider.complete(l, Outcome.SUCCEEDED);
                long before = usec(raw); // INFO is not EVALSHA: the reading adds nothing to what it reads
                e.judge(job, "w=60000;e=86400000", 60_000, 86_400_000, List.of(), "w1", lease);
                looks += usec(raw) - before;
            }
            return new Result(lock, permit2, permit20, quiet, (double) looks / n);
        }
    }

    /**
     * One worker's round of looks, wall time (median of the rounds, ms): {@code jobs} looks one call
     * each (as before issue 36's batching) and in one {@link Expectations#judge(List, String, Duration)}
     * call, against the floor of the same run: as many PINGs one by one, and pipelined (raw Jedis).
     */
    record Round(int jobs, double oneByOne, double batched, double pings, double pipelinedPings) {}

    static Round round(LocalRedisServer redis, int jobs, int rounds) {
        String prefix = "round-" + UUID.randomUUID();
        try (RedisLockProvider provider = RedisLockProvider.builder().uri(redis.uri()).keyPrefix(prefix).build();
                Jedis raw = new Jedis(redis.host(), redis.port())) {
            Duration lease = Duration.ofSeconds(30);
            Expectations e = provider.expectations().orElseThrow();
            List<Expectations.Look> looks = new java.util.ArrayList<>();
            for (int i = 0; i < jobs; i++) {
                looks.add(new Expectations.Look("job-" + i, "w=60000;e=86400000", 60_000, 86_400_000, List.of()));
            }
            Runnable oneByOne = () -> looks.forEach(l -> e.judge(l.job(), l.spec(), l.withinMillis(), l.everyMillis(), l.due(), "w1", lease));
            Runnable batched = () -> e.judge(looks, "w1", lease);
            Runnable pings = () -> {
                for (int i = 0; i < jobs; i++) {
                    raw.ping();
                }
            };
            Runnable pipelined = () -> {
                Pipeline p = raw.pipelined();
                for (int i = 0; i < jobs; i++) {
                    p.sendCommand(Protocol.Command.PING, new String[0]);
                }
                p.sync();
            };
            return new Round(jobs, median(oneByOne, rounds), median(batched, rounds), median(pings, rounds), median(pipelined, rounds));
        }
    }

    private static double median(Runnable round, int rounds) {
        for (int i = 0; i < 20; i++) {
            round.run();
        }
        double[] ms = new double[rounds];
        for (int i = 0; i < rounds; i++) {
            long t = System.nanoTime();
            round.run();
            ms[i] = (System.nanoTime() - t) / 1e6;
        }
        java.util.Arrays.sort(ms);
        return ms[rounds / 2];
    }

    private static double per(Jedis raw, int n, Runnable call) {
        for (int i = 0; i < 200; i++) {
            call.run(); // scripts loaded, keys made
        }
        long before = usec(raw);
        for (int i = 0; i < n; i++) {
            call.run();
        }
        return (double) (usec(raw) - before) / n;
    }

    /** Microseconds spent in EVALSHA so far. */
    private static long usec(Jedis raw) {
        for (String line : raw.info("commandstats").split("\r\n")) {
            if (line.startsWith("cmdstat_evalsha:")) {
                return Long.parseLong(line.replaceAll(".*,usec=([0-9]+),.*", "$1"));
            }
        }
        return 0;
    }
}
