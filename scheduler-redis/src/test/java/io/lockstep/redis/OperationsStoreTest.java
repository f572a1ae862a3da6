package io.lockstep.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.ClaimRequest.Mode;
import io.lockstep.scheduler.lock.ClaimResult;
import io.lockstep.scheduler.lock.ClaimResult.Status;
import io.lockstep.scheduler.lock.Completion;
import io.lockstep.scheduler.lock.Heartbeat;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.Outcome;
import io.lockstep.scheduler.lock.WorkerInfo;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What operating a cluster keeps in Redis, against a real redis-server: membership (heartbeats
 * that age out), published configs, run history written with the outcome, pauses decided inside
 * the claim, and manual runs outside the job's order of slots.
 */
class OperationsStoreTest {

    private static final Duration LEASE = Duration.ofSeconds(10);
    private static final Duration GRACE = Duration.ofSeconds(10);

    @RegisterExtension
    static final RedisFixture redis = RedisFixture.of(b -> b.historyKeep(3));

    private static RedisAdmin admin() {
        return RedisAdmin.of(redis.provider());
    }

    private static WorkerInfo worker(String id, String configHash) {
        Instant now = redis.serverNow();
        return new WorkerInfo(id, "host-" + id, 42, "test", now, 8, 1, configHash, now);
    }

    private static ClaimRequest claim(String job, Instant slot, String token, boolean manual) {
        return new ClaimRequest(new Lease(job, slot, token, LEASE, true), "w-" + token, GRACE, Mode.CLAIM, false, manual);
    }

    @Test
    void heartbeatsListTheLiveWorkersUntilTheyStopOrLeave() {
        String a = "a-" + RedisFixture.job(), b = "b-" + RedisFixture.job();
        redis.provider().heartbeat(worker(a, "h1"), Duration.ofSeconds(30));
        Heartbeat reply = redis.provider().heartbeat(worker(b, "h2"), Duration.ofMillis(500));
        assertThat(reply.workers()).extracting(WorkerInfo::id).contains(a, b);
        WorkerInfo seenB = reply.workers().stream().filter(w -> w.id().equals(b)).findFirst().orElseThrow();
        assertThat(seenB.host()).isEqualTo("host-" + b);
        assertThat(seenB.configHash()).isEqualTo("h2");
        assertThat(seenB.busy()).isEqualTo(1);

        // b stops beating: once its ttl has passed, the next heartbeat of anyone forgets it.
        await().atMost(Duration.ofSeconds(5)).until(() -> redis.provider().heartbeat(worker(a, "h1"), Duration.ofMillis(500)).workers()
                .stream().noneMatch(w -> w.id().equals(b)));
        assertThat(redis.raw().hget(redis.provider().keys().workers(), b)).isNull();
        // a leaves (a clean stop): gone at once.
        redis.provider().leave(a);
        assertThat(admin().workers()).extracting(WorkerInfo::id).doesNotContain(a, b);
    }

    @Test
    void aDrainRequestIsAnsweredOnceByTheWorkersNextHeartbeat() {
        String a = "a-" + RedisFixture.job(), b = "b-" + RedisFixture.job();
        redis.provider().heartbeat(worker(a, "h1"), Duration.ofSeconds(30));
        admin().drain(a, Duration.ofMinutes(5));
        assertThat(redis.provider().heartbeat(worker(b, "h1"), Duration.ofSeconds(30)).drainWithin()).as("asked of a, not b").isNull();
        assertThat(redis.provider().heartbeat(worker(a, "h1"), Duration.ofSeconds(30)).drainWithin()).isEqualTo(Duration.ofMinutes(5));
        assertThat(redis.provider().heartbeat(worker(a, "h1"), Duration.ofSeconds(30)).drainWithin())
                .as("answered once: a worker restarted under the same id is not drained again").isNull();
    }

    @Test
    void aPublishedConfigIsReadBackAndTheHeartbeatSaysWhenRedisLostIt() {
        String hash = "cfg-" + RedisFixture.job();
        redis.provider().publishConfig(hash, Map.of("report", "{\"cron\":\"0 0 6 * * *\"}"));
        assertThat(redis.provider().config(hash)).containsEntry("report", "{\"cron\":\"0 0 6 * * *\"}");
        assertThat(redis.provider().heartbeat(worker("w-" + hash, hash), Duration.ofSeconds(5)).configPublished()).isTrue();
        assertThat(redis.raw().pttl(redis.provider().keys().config(hash))).isPositive(); // kept alive by the heartbeats
        redis.raw().del(redis.provider().keys().config(hash)); // a restart without persistence, say
        assertThat(redis.provider().heartbeat(worker("w-" + hash, hash), Duration.ofSeconds(5)).configPublished()).isFalse();
    }

    @Test
    void eachOutcomeIsAppendedOnceToTheJobsHistoryKeepingTheLatest() {
        String job = RedisFixture.job();
        Instant first = redis.serverNow().truncatedTo(java.time.temporal.ChronoUnit.SECONDS).minusSeconds(5);
        for (int i = 0; i < 5; i++) {
            ClaimRequest r = claim(job, first.plusSeconds(i), "t" + i, false);
            ClaimResult won = redis.provider().claim(List.of(r)).get(0);
            assertThat(won.status()).isEqualTo(Status.CLAIMED);
            Completion done = new Completion(r.lease(), i == 4 ? Outcome.FAILED : Outcome.SUCCEEDED, 2, 120 + i,
                    i == 4 ? "java.lang.IllegalStateException: boom" : "");
            assertThat(redis.provider().complete(List.of(done))).containsExactly(true);
            assertThat(redis.provider().complete(List.of(done))).containsExactly(true); // a repeat (its reply lost) adds nothing
        }
        List<RedisAdmin.Run> runs = admin().history(job, 10);
        assertThat(runs).hasSize(5); // each once, though each completion was sent twice
        RedisAdmin.Run latest = runs.get(0);
        assertThat(latest.slot()).isEqualTo(first.plusSeconds(4));
        assertThat(latest.outcome()).isEqualTo("failed");
        assertThat(latest.worker()).isEqualTo("w-t4");
        assertThat(latest.attempt()).isEqualTo(2);
        assertThat(latest.durationMs()).isEqualTo(124);
        assertThat(latest.error()).isEqualTo("java.lang.IllegalStateException: boom");
        assertThat(latest.fencingToken()).isPositive();
        assertThat(latest.manual()).isFalse();
        assertThat(runs).extracting(RedisAdmin.Run::slot).startsWith(first.plusSeconds(4), first.plusSeconds(3), first.plusSeconds(2));

        // The stream is capped: Redis trims it a node (about 100 entries) at a time, keeping at least history.keep.
        List<ClaimRequest> more = new java.util.ArrayList<>();
        for (int i = 0; i < 300; i++) {
            // manual runs (outside the order of slots) of an overlap: allow job, so that each one runs
            more.add(new ClaimRequest(new Lease(job, first.minusSeconds(1).plusMillis(i + 1), "m" + i, LEASE, false), "w-m", GRACE,
                    Mode.CLAIM, false, true));
        }
        assertThat(redis.provider().claim(more)).extracting(ClaimResult::status).containsOnly(Status.CLAIMED);
        redis.provider().complete(more.stream().map(r -> new Completion(r.lease(), Outcome.SUCCEEDED)).toList());
        assertThat(redis.raw().xlen(redis.provider().keys().history(job))).isBetween(3L, 250L); // 305 were written
    }

    @Test
    void aPausedJobsSlotIsRecordedSkippedByExactlyOneWorkerAndAManualRunStillRuns() {
        String job = RedisFixture.job();
        admin().pause(job, "maintenance", Optional.empty(), "ops@host");
        assertThat(admin().job(job, 1).pause()).hasValueSatisfying(p -> assertThat(p.note()).isEqualTo("maintenance"));
        Instant slot = redis.serverNow().minusMillis(5);
        List<ClaimResult> answers = redis.provider().claim(List.of(claim(job, slot, "a", false)));
        List<ClaimResult> second = redis.provider().claim(List.of(claim(job, slot, "b", false)));
        assertThat(answers.get(0).status()).isEqualTo(Status.PAUSED);
        assertThat(second.get(0).status()).isEqualTo(Status.TAKEN); // reported once, by whoever decided it
        assertThat(redis.provider().claim(List.of(claim(job, slot, "a", false))).get(0).status()).isEqualTo(Status.PAUSED); // retry-safe
        assertThat(redis.raw().hget(redis.provider().keys().slot(job, slot.toEpochMilli()), "why")).isEqualTo("paused");

        // A manual run goes through the pause, outside the job's order of slots: the marks do not move.
        Instant manual = redis.serverNow().minusMillis(1);
        Map<String, Instant> marksBefore = redis.provider().lastSlots(List.of(job));
        ClaimResult ran = redis.provider().claim(List.of(claim(job, manual, "m", true))).get(0);
        assertThat(ran.status()).isEqualTo(Status.CLAIMED);
        assertThat(redis.provider().lastSlots(List.of(job))).isEqualTo(marksBefore);
        assertThat(redis.raw().hget(redis.provider().keys().slot(job, manual.toEpochMilli()), "manual")).isEqualTo("1");
        redis.provider().complete(List.of(new Completion(new Lease(job, manual, "m", LEASE, true), Outcome.SUCCEEDED)));
        assertThat(admin().history(job, 1)).singleElement().satisfies(r -> assertThat(r.manual()).isTrue());

        assertThat(admin().resume(job)).isTrue();
        assertThat(admin().resume(job)).isFalse();
        // The next slot, a millisecond after the manual run's (a fast machine gets here within the same millisecond).
        Instant next = manual.plusMillis(1);
        org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(2)).until(() -> !redis.serverNow().isBefore(next));
        assertThat(redis.provider().claim(List.of(claim(job, next, "c", false))).get(0).status()).isEqualTo(Status.CLAIMED);
    }

    @Test
    void aPauseForADurationEndsByItself() {
        String job = RedisFixture.job();
        admin().pause(job, "", Optional.of(Duration.ofMillis(300)), "ops");
        assertThat(admin().job(job, 1).pause()).hasValueSatisfying(p -> assertThat(p.until()).isPresent());
        await().atMost(Duration.ofSeconds(5)).until(() -> admin().job(job, 1).pause().isEmpty());
    }

    @Test
    void aTriggerReachesEveryHeartbeatWithASlotOffTheWholeSecond() {
        String job = RedisFixture.job();
        Instant slot = admin().trigger(job);
        assertThat(slot.toEpochMilli() % 1000).isNotZero();
        // Every worker's heartbeat sees it (it is not handed to the first one that asks), again and again.
        for (String worker : List.of("t1-" + job, "t2-" + job, "t1-" + job)) {
            Heartbeat reply = redis.provider().heartbeat(worker(worker, "h"), Duration.ofSeconds(5));
            assertThat(reply.triggers()).as("the heartbeat of %s", worker).contains(new Heartbeat.Trigger(job, slot));
        }
        assertThat(admin().runOf(job, slot)).isEmpty(); // no worker decided it yet
    }
}
