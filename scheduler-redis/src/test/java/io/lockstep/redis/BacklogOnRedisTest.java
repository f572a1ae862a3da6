package io.lockstep.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lockstep.scheduler.CapturedEvents;
import io.lockstep.scheduler.Job;
import io.lockstep.scheduler.JobDefinition;
import io.lockstep.scheduler.Overlap;
import io.lockstep.scheduler.Scheduler;
import io.lockstep.scheduler.cron.CronSchedule;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.RedisClient;

/**
 * Claims ahead beyond the job threads on a real Redis (the backlog, {@code JobThreads.canQueue}):
 * runs claimed within the start window are recorded started at their instant, so one that then
 * waits in the pool past its grace must not start late: it is handed back unstarted, and Redis
 * records the slot missed, reported once, never run.
 */
class BacklogOnRedisTest {

    @Test
    void aQueuedRunThatGetsNoThreadWithinItsGraceIsRecordedMissedInRedisNeverRun() {
        try (LocalRedisServer server = LocalRedisServer.start();
             RedisLockProvider provider = RedisLockProvider.builder().uri(server.uri()).build();
             RedisClient raw = RedisClient.create(server.host(), server.port());
             CapturedEvents events = new CapturedEvents()) {
            String prefix = RedisFixture.job();
            List<JobDefinition> jobs = IntStream.range(0, 4).mapToObj(i -> new JobDefinition(prefix + "-" + i,
                    CronSchedule.of("* * * * * *", ZoneOffset.UTC), Job.class.getName(), Map.of(), Duration.ofSeconds(5),
                    Duration.ofSeconds(1), Overlap.SKIP, Duration.ZERO, true)).toList();
            // Short runs until this slot, where the first run to get the one thread holds it past the others' grace.
            Instant slow = Instant.ofEpochMilli(provider.serverTimeMillis()).truncatedTo(ChronoUnit.SECONDS).plusSeconds(4);
            try (Scheduler scheduler = Scheduler.builder(provider).workerId("w").threads(1).jobs(jobs).jobFactory(d -> ctx -> {
                if (ctx.scheduledTime().equals(slow)) {
                    TimeUnit.MILLISECONDS.sleep(1_500);
                }
            }).shutdownTimeout(Duration.ofSeconds(5)).build()) {
                scheduler.start();
                await().atMost(Duration.ofSeconds(20)).until(() -> jobs.stream().allMatch(j -> handled(events, j.name(), slow)));
            }
            long started = jobs.stream().filter(j -> count(events, "job_started", j.name(), slow) == 1).count();
            assertThat(started).as("the one run that got the thread").isEqualTo(1);
            for (JobDefinition j : jobs) {
                String record = provider.keys().slot(j.name(), slow.toEpochMilli());
                if (count(events, "job_started", j.name(), slow) == 1) {
                    assertThat(raw.hget(record, "state")).as(j.name()).isEqualTo("done");
                } else {
                    assertThat(count(events, "slot_missed", j.name(), slow)).as("%s reported", j.name()).isEqualTo(1);
                    assertThat(raw.hget(record, "state")).as("%s's record in Redis", j.name()).isEqualTo("missed");
                }
            }
        }
    }

    private static boolean handled(CapturedEvents events, String job, Instant slot) {
        return count(events, "job_succeeded", job, slot) + count(events, "slot_missed", job, slot) > 0;
    }

    private static long count(CapturedEvents events, String type, String job, Instant slot) {
        return events.named(type, job).stream().filter(e -> slot.toString().equals(e.get("slot"))).count();
    }
}
