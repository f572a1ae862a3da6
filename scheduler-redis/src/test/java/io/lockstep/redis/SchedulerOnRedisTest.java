package io.lockstep.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lockstep.scheduler.Job;
import io.lockstep.scheduler.JobDefinition;
import io.lockstep.scheduler.Overlap;
import io.lockstep.scheduler.Scheduler;
import io.lockstep.scheduler.cron.CronSchedule;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.RedisClient;

/** The scheduler on a real Redis, in this JVM: what a job sees when its lease is taken from it. */
class SchedulerOnRedisTest {

    @Test
    void aLeaseTakenOverInRedisInterruptsTheJobAndItsCompletionTouchesNothingOfTheNewOwner() {
        try (LocalRedisServer server = LocalRedisServer.start();
             RedisLockProvider provider = RedisLockProvider.builder().uri(server.uri()).build();
             RedisClient raw = RedisClient.create(server.host(), server.port())) {
            List<Instant> started = new CopyOnWriteArrayList<>();
            List<Boolean> sawLost = new CopyOnWriteArrayList<>();
            Job longRun = ctx -> {
                started.add(ctx.scheduledTime());
                try {
                    TimeUnit.SECONDS.sleep(30);
                } finally {
                    sawLost.add(ctx.isLeaseLost());
                }
            };
            JobDefinition def = new JobDefinition("long", CronSchedule.of("* * * * * *", ZoneOffset.UTC), Job.class.getName(),
                    Map.of(), Duration.ofSeconds(1), Duration.ofSeconds(2), Overlap.SKIP, Duration.ZERO, true);
            try (Scheduler scheduler = Scheduler.builder(provider).workerId("w").job(def).jobFactory(d -> longRun)
                    .shutdownTimeout(Duration.ofSeconds(1)).build()) {
                scheduler.start();
                await().atMost(Duration.ofSeconds(5)).until(() -> !started.isEmpty());
                String leaseKey = "lockstep:{long}:lease";
                raw.psetex(leaseKey, 60_000, "someone-else"); // another owner took the lease
                await().atMost(Duration.ofSeconds(3)).until(() -> !sawLost.isEmpty());
                assertThat(sawLost.get(0)).isTrue();
                String record = "lockstep:{long}:slot:" + started.get(0).toEpochMilli();
                await().until(() -> "done".equals(raw.hget(record, "state")));
                assertThat(raw.hget(record, "outcome")).isEqualTo("lease_lost");
                assertThat(raw.get(leaseKey)).isEqualTo("someone-else");
            }
        }
    }

    /**
     * Guarantee 3 with claims made ahead: the run starts at its slot by the server's clock, never
     * before. Requests reach Redis 150 ms late while replies come back at once, so the worker's
     * estimate of the server's clock (half the round trip) is 75 ms ahead of it: a run started by
     * that estimate, or as soon as its claim is won, would start early. Redis runs on this machine,
     * so its TIME and this JVM's clock are the same clock.
     */
    @Test
    void aSlotClaimedAheadStartsAtItsSlotByTheServersClockNeverBefore() {
        try (LocalRedisServer server = LocalRedisServer.start();
             TcpProxy proxy = TcpProxy.to(server.host(), server.port()).delayRequests(150);
             RedisLockProvider provider = RedisLockProvider.builder().uri(proxy.uri()).timeout(Duration.ofSeconds(5)).build();
             RedisClient raw = RedisClient.create(server.host(), server.port())) {
            Map<Instant, Instant> startedAt = new java.util.concurrent.ConcurrentHashMap<>();
            Job probe = ctx -> startedAt.put(ctx.scheduledTime(), Instant.now());
            JobDefinition def = new JobDefinition("ahead", CronSchedule.of("* * * * * *", ZoneOffset.UTC), Job.class.getName(),
                    Map.of(), Duration.ofSeconds(5), Duration.ofSeconds(2), Overlap.SKIP, Duration.ZERO, true);
            try (Scheduler scheduler = Scheduler.builder(provider).workerId("w").job(def).jobFactory(d -> probe)
                    .shutdownTimeout(Duration.ofSeconds(1)).build()) {
                scheduler.start();
                await().atMost(Duration.ofSeconds(15)).until(() -> startedAt.size() >= 6);
            }
            assertThat(startedAt).allSatisfy((slot, started) ->
                    assertThat(started).as("the run of %s started at or after it", slot).isAfterOrEqualTo(slot));
            // The first slots after the start may come too soon to be claimed ahead (every request waits 150 ms); most are.
            long decidedAhead = startedAt.keySet().stream()
                    .filter(slot -> Long.parseLong(raw.hget("lockstep:{ahead}:slot:" + slot.toEpochMilli(), "at")) < slot.toEpochMilli())
                    .count();
            assertThat(decidedAhead).as("slots whose claim was decided ahead of them").isGreaterThanOrEqualTo(3);
        }
    }
}
