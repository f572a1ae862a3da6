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
}
