package io.lockstep.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lockstep.scheduler.CapturedEvents;
import io.lockstep.scheduler.Job;
import io.lockstep.scheduler.JobDefinition;
import io.lockstep.scheduler.Overlap;
import io.lockstep.scheduler.Scheduler;
import io.lockstep.scheduler.cron.CronSchedule;
import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.ClaimResult;
import io.lockstep.scheduler.lock.Completion;
import io.lockstep.scheduler.lock.Heartbeat;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.LockProvider;
import io.lockstep.scheduler.lock.RunsInFlight;
import io.lockstep.scheduler.lock.WorkerInfo;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.Optional;
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
            String job = RedisFixture.job();
            JobDefinition def = new JobDefinition(job, CronSchedule.of("* * * * * *", ZoneOffset.UTC), Job.class.getName(),
                    Map.of(), Duration.ofSeconds(1), Duration.ofSeconds(2), Overlap.SKIP, Duration.ZERO, true);
            try (Scheduler scheduler = Scheduler.builder(provider).workerId("w").job(def).jobFactory(d -> longRun)
                    .shutdownTimeout(Duration.ofSeconds(1)).build()) {
                scheduler.start();
                await().atMost(Duration.ofSeconds(5)).until(() -> !started.isEmpty());
                Lease lease = new Lease(job, started.get(0), "any", Duration.ofSeconds(1), true);
                RedisFixture.giveLease(raw, provider.keys(), lease, "someone-else", 60_000); // another owner took the lease
                await().atMost(Duration.ofSeconds(3)).until(() -> !sawLost.isEmpty());
                assertThat(sawLost.get(0)).isTrue();
                String record = provider.keys().slot(job, started.get(0).toEpochMilli());
                await().until(() -> "done".equals(raw.hget(record, "state")));
                assertThat(raw.hget(record, "outcome")).isEqualTo("lease_lost");
                assertThat(RedisFixture.leaseOwner(raw, provider.keys(), lease)).isEqualTo("someone-else");
            }
        }
    }

    /**
     * Guarantee 3 with claims made ahead: the run starts at its slot by the server's clock, never
     * before. Requests reach Redis 60 ms late while replies come back at once, so the worker's
     * estimate of the server's clock (half the round trip) is 30 ms ahead of it: a run started by
     * that estimate, or as soon as its claim is won, would start early. (A claim sent 50 ms ahead by
     * that estimate reaches Redis some 20 ms before the slot: decided ahead, inside the start window,
     * so the claim is the run's start.) Redis runs on this machine, so its TIME and this JVM's clock
     * are the same clock.
     */
    @Test
    void aSlotClaimedAheadStartsAtItsSlotByTheServersClockNeverBefore() {
        try (LocalRedisServer server = LocalRedisServer.start();
             TcpProxy proxy = TcpProxy.to(server.host(), server.port()).delayRequests(60);
             RedisLockProvider provider = RedisLockProvider.builder().uri(proxy.uri()).timeout(Duration.ofSeconds(5)).build();
             RedisClient raw = RedisClient.create(server.host(), server.port())) {
            Map<Instant, Instant> startedAt = new java.util.concurrent.ConcurrentHashMap<>();
            Job probe = ctx -> startedAt.put(ctx.scheduledTime(), Instant.now());
            String job = RedisFixture.job();
            JobDefinition def = new JobDefinition(job, CronSchedule.of("* * * * * *", ZoneOffset.UTC), Job.class.getName(),
                    Map.of(), Duration.ofSeconds(5), Duration.ofSeconds(2), Overlap.SKIP, Duration.ZERO, true);
            try (Scheduler scheduler = Scheduler.builder(provider).workerId("w").job(def).jobFactory(d -> probe)
                    .shutdownTimeout(Duration.ofSeconds(1)).build()) {
                scheduler.start();
                await().atMost(Duration.ofSeconds(15)).until(() -> startedAt.size() >= 6);
            }
            assertThat(startedAt).allSatisfy((slot, started) ->
                    assertThat(started).as("the run of %s started at or after it", slot).isAfterOrEqualTo(slot));
            // The first slots after the start may come too soon to be claimed ahead (every request waits 60 ms); most are.
            long decidedAhead = startedAt.keySet().stream()
                    .filter(slot -> Long.parseLong(raw.hget(provider.keys().slot(job, slot.toEpochMilli()), "at")) < slot.toEpochMilli())
                    .count();
            assertThat(decidedAhead).as("slots whose claim was decided ahead of them").isGreaterThanOrEqualTo(3);
        }
    }

    // ------------------------------------------------------------ answers only the Lua scripts give

    /** A per-second job whose runs are counted; lease 1 s, grace 2 s, overlap skip. */
    private static JobDefinition perSecond(String job) {
        return perSecond(job, Overlap.SKIP);
    }

    /**
     * Every second. With {@code overlap: allow} each slot holds a lease of its own: a manual run then
     * never meets a scheduled slot's lease (with {@code skip} it is skipped when it lands while the
     * next slot's claim, made ahead, holds the job's lease).
     */
    private static JobDefinition perSecond(String job, Overlap overlap) {
        return new JobDefinition(job, CronSchedule.of("* * * * * *", ZoneOffset.UTC), Job.class.getName(), Map.of(),
                Duration.ofSeconds(1), Duration.ofSeconds(2), overlap, Duration.ZERO, true);
    }

    /**
     * Gap G10-a: a slot older than one that already started is reported, never run. Redis is seeded
     * as if another worker had started a slot of the job an hour from now (its 'started' mark), so
     * the claim script answers every slot of this worker SUPERSEDED.
     */
    @Test
    void slotsOlderThanOneThatAlreadyStartedAreReportedMissedAndNeverRun() {
        try (LocalRedisServer server = LocalRedisServer.start();
             RedisLockProvider provider = RedisLockProvider.builder().uri(server.uri()).build();
             RedisClient raw = RedisClient.create(server.host(), server.port());
             CapturedEvents events = new CapturedEvents()) {
            String job = RedisFixture.job();
            raw.hset(provider.keys().marks(job), RedisKeys.markField(job) + "started", Long.toString(provider.serverTimeMillis() + 3_600_000));
            List<Instant> ran = new CopyOnWriteArrayList<>();
            try (Scheduler scheduler = Scheduler.builder(provider).workerId("w").job(perSecond(job))
                    .jobFactory(d -> ctx -> ran.add(ctx.scheduledTime())).shutdownTimeout(Duration.ofSeconds(1)).build()) {
                scheduler.start();
                await().atMost(Duration.ofSeconds(15)).until(() -> events.named("slot_missed", job).size() >= 3);
            }
            List<Map<String, Object>> missed = events.named("slot_missed", job);
            assertThat(missed).allSatisfy(e -> assertThat(e.get("reason"))
                    .isEqualTo("a later slot of the job already started; slots start in order"));
            assertThat(ran).as("runs of the job").isEmpty();
            assertThat(events.named("job_started", job)).isEmpty();
            for (Map<String, Object> e : missed) {
                String record = provider.keys().slot(job, Instant.parse((String) e.get("slot")).toEpochMilli());
                assertThat(raw.hmget(record, "state", "why")).as("the record of %s", e.get("slot")).containsExactly("missed", "order");
            }
        }
    }

    /**
     * Gap G1-a: a slot whose record may have expired is left alone: neither run nor recorded, one
     * {@code slot_stale} event. The worker here reads the store's clock three minutes behind (it
     * stands in for a worker that comes back to its slots after a pause longer than records live:
     * a real 3-minute stall is too slow for a unit test); the decision is the claim script's, by
     * Redis's own TIME, so every slot the worker asks for is older than its record could live.
     */
    @Test
    void slotsOlderThanTheirRecordsCanLiveAreReportedStaleAndLeftAlone() {
        try (LocalRedisServer server = LocalRedisServer.start();
             RedisLockProvider provider = RedisLockProvider.builder().uri(server.uri()).build();
             RedisClient raw = RedisClient.create(server.host(), server.port());
             CapturedEvents events = new CapturedEvents()) {
            String job = RedisFixture.job();
            // The cluster decided a slot as late as now (the case the script names: a slot as late was decided).
            raw.hset(provider.keys().marks(job), RedisKeys.markField(job) + "decided", Long.toString(provider.serverTimeMillis()));
            List<Instant> ran = new CopyOnWriteArrayList<>();
            LockProvider behind = new ClockBehind(provider, Duration.ofMinutes(3));
            try (Scheduler scheduler = Scheduler.builder(behind).workerId("w").job(perSecond(job))
                    .jobFactory(d -> ctx -> ran.add(ctx.scheduledTime())).shutdownTimeout(Duration.ofSeconds(1)).build()) {
                scheduler.start();
                await().atMost(Duration.ofSeconds(15)).until(() -> events.named("slot_stale", job).size() >= 3);
            }
            assertThat(ran).as("runs of the job").isEmpty();
            assertThat(events.named("job_started", job)).isEmpty();
            List<Map<String, Object>> stale = events.named("slot_stale", job);
            assertThat(stale).extracting(e -> e.get("slot")).doesNotHaveDuplicates();
            for (Map<String, Object> e : stale) {
                assertThat(raw.exists(provider.keys().slot(job, Instant.parse((String) e.get("slot")).toEpochMilli())))
                        .as("a record for %s", e.get("slot")).isFalse();
                assertThat(events.named("slot_missed", job)).noneMatch(m -> m.get("slot").equals(e.get("slot")));
            }
        }
    }

    /**
     * Gap G3-b on the scheduler: the worker claims its slots ahead (it is the preferred claimer), but
     * a claim ahead that finds the job paused is decided only at the slot: each slot is reported
     * skipped (reason paused), none runs, and every record was written at or after its slot by
     * Redis's clock.
     */
    @Test
    void aPausedJobsSlotsClaimedAheadAreDecidedAtTheSlotAndReportedPaused() {
        try (LocalRedisServer server = LocalRedisServer.start();
             RedisLockProvider provider = RedisLockProvider.builder().uri(server.uri()).build();
             RedisClient raw = RedisClient.create(server.host(), server.port());
             CapturedEvents events = new CapturedEvents()) {
            String job = RedisFixture.job();
            RedisAdmin.of(provider).pause(job, "", Optional.empty(), "test");
            List<Instant> ran = new CopyOnWriteArrayList<>();
            try (Scheduler scheduler = Scheduler.builder(provider).workerId("w").job(perSecond(job))
                    .jobFactory(d -> ctx -> ran.add(ctx.scheduledTime())).shutdownTimeout(Duration.ofSeconds(1)).build()) {
                scheduler.start();
                await().atMost(Duration.ofSeconds(15)).until(() -> events.named("slot_skipped", job).size() >= 4);
                assertThat(ran).as("runs of the paused job").isEmpty();
                // The control: once resumed, this worker does claim the job's slots ahead of them.
                RedisAdmin.of(provider).resume(job);
                await().atMost(Duration.ofSeconds(15)).until(() -> ran.stream().anyMatch(slot -> decidedAhead(raw, provider, job, slot)));
            }
            List<Map<String, Object>> skipped = events.named("slot_skipped", job);
            assertThat(skipped).allSatisfy(e -> assertThat(e.get("reason")).isEqualTo("paused"));
            assertDecidedAtOrAfterTheSlot(raw, provider, job, skipped, "skipped");
        }
    }

    /**
     * Gap G3-b, the held lease: a run of the job holds its exclusive lease for 3 s; the next slots,
     * claimed ahead, are not skipped ahead of time but decided at the slot (overlap: skip).
     */
    @Test
    void slotsClaimedAheadWhileTheLeaseIsHeldAreSkippedAtTheSlotNotBefore() {
        try (LocalRedisServer server = LocalRedisServer.start();
             RedisLockProvider provider = RedisLockProvider.builder().uri(server.uri()).build();
             RedisClient raw = RedisClient.create(server.host(), server.port());
             CapturedEvents events = new CapturedEvents()) {
            String job = RedisFixture.job();
            List<Instant> ran = new CopyOnWriteArrayList<>();
            Job slow = ctx -> {
                ran.add(ctx.scheduledTime());
                if (ran.size() == 1) {
                    TimeUnit.SECONDS.sleep(3); // the job's own work: holds the lease over the next slots
                }
            };
            try (Scheduler scheduler = Scheduler.builder(provider).workerId("w").job(perSecond(job)).jobFactory(d -> slow)
                    .shutdownTimeout(Duration.ofSeconds(5)).build()) {
                scheduler.start();
                await().atMost(Duration.ofSeconds(15)).until(() -> events.named("slot_skipped", job).size() >= 2);
                // The control: this worker does claim the job's slots ahead of them when the lease is free.
                await().atMost(Duration.ofSeconds(15)).until(() -> ran.stream().anyMatch(slot -> decidedAhead(raw, provider, job, slot)));
            }
            List<Map<String, Object>> skipped = events.named("slot_skipped", job);
            assertThat(skipped).allSatisfy(e -> assertThat((String) e.get("reason")).startsWith("overlap"));
            assertThat(ran).doesNotContainAnyElementsOf(skipped.stream().map(e -> Instant.parse((String) e.get("slot"))).toList());
            assertDecidedAtOrAfterTheSlot(raw, provider, job, skipped, "skipped");
        }
    }

    /**
     * A trigger runs the job once, outside its schedule, and leaves the schedule as it was: before
     * the fix, the manual slot queued "the next slot" after it as well, a second copy of the job's
     * schedule, so that the lone worker claimed each later slot twice and lost one race to itself
     * ({@code slot_contended}) every second from then on.
     */
    @Test
    void aTriggerRunsTheJobOnceAndLeavesItsScheduleAsItWas() {
        try (LocalRedisServer server = LocalRedisServer.start();
             RedisLockProvider provider = RedisLockProvider.builder().uri(server.uri()).build();
             CapturedEvents events = new CapturedEvents()) {
            String job = RedisFixture.job();
            List<Instant> ran = new CopyOnWriteArrayList<>();
            try (Scheduler scheduler = Scheduler.builder(provider).workerId("w").job(perSecond(job, Overlap.ALLOW))
                    .jobFactory(d -> ctx -> ran.add(ctx.scheduledTime())).shutdownTimeout(Duration.ofSeconds(1)).build()) {
                scheduler.start();
                await().atMost(Duration.ofSeconds(15)).until(() -> ran.size() >= 2);
                Instant manual = RedisAdmin.of(provider).trigger(job);
                await().atMost(Duration.ofSeconds(15)).until(() -> ran.contains(manual));
                int after = ran.size();
                await().atMost(Duration.ofSeconds(15)).until(() -> ran.size() >= after + 4);
            }
            assertThat(ran).as("each slot, and the manual run, once").doesNotHaveDuplicates();
            assertThat(events.named("slot_contended", job)).as("races the lone worker lost to itself").isEmpty();
        }
    }

    /** Whether Redis decided the slot's record before the slot (a claim made ahead). */
    private static boolean decidedAhead(RedisClient raw, RedisLockProvider provider, String job, Instant slot) {
        String at = raw.hget(provider.keys().slot(job, slot.toEpochMilli()), "at");
        return at != null && Long.parseLong(at) < slot.toEpochMilli();
    }

    private static void assertDecidedAtOrAfterTheSlot(RedisClient raw, RedisLockProvider provider, String job,
            List<Map<String, Object>> reported, String state) {
        assertThat(reported).isNotEmpty();
        for (Map<String, Object> e : reported) {
            long slot = Instant.parse((String) e.get("slot")).toEpochMilli();
            List<String> record = raw.hmget(provider.keys().slot(job, slot), "state", "at");
            assertThat(record.get(0)).as("the record of %s", e.get("slot")).isEqualTo(state);
            assertThat(Long.parseLong(record.get(1))).as("when Redis decided %s", e.get("slot")).isGreaterThanOrEqualTo(slot);
        }
    }

    /** The real store, whose clock this worker reads {@code behind} late; every decision is still Redis's. */
    private record ClockBehind(LockProvider store, Duration behind) implements LockProvider {
        @Override
        public List<io.lockstep.scheduler.lock.StartReply> start(List<io.lockstep.scheduler.lock.StartRequest> requests) {
            return store.start(requests);
        }

        @Override
        public List<ClaimResult> claim(List<ClaimRequest> requests) {
            return store.claim(requests);
        }

        @Override
        public List<RunsInFlight> runsInFlight(List<String> jobs) {
            return store.runsInFlight(jobs);
        }

        @Override
        public void stampInForce(java.util.Collection<String> enabled, java.util.Collection<String> disabled, boolean fresh) {
            store.stampInForce(enabled, disabled, fresh);
        }

        @Override
        public Map<String, io.lockstep.scheduler.lock.InForce> inForce(List<String> jobs) {
            return store.inForce(jobs);
        }

        @Override
        public Map<String, Instant> lastSlots(List<String> jobs) {
            return store.lastSlots(jobs);
        }

        @Override
        public List<Boolean> renew(List<Lease> leases) {
            return store.renew(leases);
        }

        @Override
        public List<Boolean> complete(List<Completion> completions) {
            return store.complete(completions);
        }

        @Override
        public long serverTimeMillis() {
            return store.serverTimeMillis() - behind.toMillis();
        }

        @Override
        public String lockName(Lease lease) {
            return store.lockName(lease);
        }

        @Override
        public String describe() {
            return store.describe();
        }

        @Override
        public Heartbeat heartbeat(WorkerInfo self, Duration ttl) {
            Heartbeat h = store.heartbeat(self, ttl);
            return new Heartbeat(h.workers(), h.triggers(), h.serverTimeMillis() == 0 ? 0 : h.serverTimeMillis() - behind.toMillis(),
                    h.configPublished());
        }

        @Override
        public void publishConfig(String configHash, Map<String, String> jobs) {
            store.publishConfig(configHash, jobs);
        }

        @Override
        public Map<String, String> config(String configHash) {
            return store.config(configHash);
        }

        @Override
        public List<io.lockstep.scheduler.lock.SlotState> slotStates(List<io.lockstep.scheduler.lock.SlotState.Ref> slots) {
            return store.slotStates(slots);
        }

        @Override
        public void leave(String workerId) {
            store.leave(workerId);
        }
    }

    /**
     * A trigger given for a job a reload is about to add (an operator using the new file before the
     * workers reloaded) runs once the worker has the job: a worker hands on only the triggers it
     * could queue (review of issue 22: it used to mark it handed and drop it).
     */
    @Test
    void aTriggerForAJobAReloadAddsLaterRunsOnceTheWorkerHasIt() {
        try (LocalRedisServer server = LocalRedisServer.start();
             RedisLockProvider provider = RedisLockProvider.builder().uri(server.uri()).build()) {
            List<String> ran = new CopyOnWriteArrayList<>();
            JobDefinition yearly = new JobDefinition("yearly", CronSchedule.of("0 0 0 1 1 ?", ZoneOffset.UTC), Job.class.getName(),
                    Map.of(), Duration.ofSeconds(5), Duration.ofSeconds(2), Overlap.SKIP, Duration.ZERO, true);
            JobDefinition later = new JobDefinition("later", yearly.schedule(), Job.class.getName(), Map.of(), Duration.ofSeconds(5),
                    Duration.ofSeconds(2), Overlap.SKIP, Duration.ZERO, true);
            try (Scheduler scheduler = Scheduler.builder(provider).workerId("w").job(yearly)
                    .jobFactory(d -> ctx -> ran.add(ctx.jobName())).build()) {
                scheduler.start();
                RedisAdmin admin = RedisAdmin.of(provider);
                Instant triggered = admin.trigger("later");
                // Heartbeats (every 3 s) that answered the trigger go by with no such job here: nothing runs.
                await().atMost(Duration.ofSeconds(10)).until(() -> admin.workers().stream()
                        .anyMatch(w -> w.lastSeen().isAfter(triggered.plusSeconds(4))));
                assertThat(ran).isEmpty();
                scheduler.update(List.of(yearly, later));
                await().atMost(Duration.ofSeconds(10)).until(() -> ran.contains("later"));
                assertThat(ran).containsExactly("later");
            }
        }
    }
}
