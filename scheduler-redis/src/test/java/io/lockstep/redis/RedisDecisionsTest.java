package io.lockstep.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.ClaimRequest.Mode;
import io.lockstep.scheduler.lock.ClaimResult;
import io.lockstep.scheduler.lock.ClaimResult.Status;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.Outcome;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.RedisClient;

/**
 * The store's decisions on the failure paths, against a real redis-server: every answer is
 * retry-safe (a request repeated after its reply was lost gets the same decision), a claim given
 * up on is disowned, a slot whose record may have expired is never decided again, and a job's
 * slots start in order.
 */
class RedisDecisionsTest {

    private static final Duration LEASE = Duration.ofSeconds(10);
    private static final Duration GRACE = Duration.ofSeconds(10);

    @RegisterExtension
    static final RedisFixture redis = RedisFixture.of(b -> b);

    private static ClaimRequest request(String job, Instant slot, String token, boolean exclusive, Mode mode) {
        return new ClaimRequest(new Lease(job, slot, token, LEASE, exclusive), "w-" + token, GRACE, mode, false);
    }

    private static Status claim(ClaimRequest request) {
        return redis.provider().claim(List.of(request)).get(0).status();
    }

    /**
     * Two workers back after an outage: one catches up the slots the cluster missed, one after the
     * other under the job's exclusive lease; the other claims the current slot in the gap between
     * two catch-up runs. Started, that slot would cost every older catch-up slot its run (slots start
     * in order); a catch-up slot refused busy holds the job's next turn, so it is skipped instead.
     */
    @Test
    void aLaterSlotYieldsToACatchUpSlotWaitingForTheLease() {
        String job = RedisFixture.job();
        Instant now = redis.serverNow();
        ClaimRequest first = request(job, now.minusSeconds(5), "c1", true, Mode.CATCH_UP);
        assertThat(claim(first)).isEqualTo(Status.CLAIMED);
        ClaimRequest second = request(job, now.minusSeconds(4), "c2", true, Mode.CATCH_UP);
        assertThat(claim(second)).as("behind the first catch-up run").isEqualTo(Status.BUSY);
        assertThat(redis.provider().complete(first.lease(), io.lockstep.scheduler.lock.Outcome.SUCCEEDED)).isTrue();

        assertThat(claim(request(job, now, "peer", true, Mode.CLAIM))).as("the peer's current slot, in the gap").isEqualTo(Status.SKIPPED);
        assertThat(claim(second)).as("the catch-up slot, asked again").isEqualTo(Status.CLAIMED);
    }

    @Test
    void aRepeatedMissSkipOrAbandonGetsTheSameAnswer() {
        String job = RedisFixture.job();
        Instant now = redis.serverNow();
        ClaimRequest missed = request(job, now.minus(GRACE).minusSeconds(5), "m", true, Mode.CLAIM);
        assertThat(claim(missed)).isEqualTo(Status.MISSED);
        assertThat(claim(missed)).as("repeated after a lost reply").isEqualTo(Status.MISSED);

        ClaimRequest running = request(job, now.minusSeconds(2), "r", true, Mode.CLAIM);
        assertThat(claim(running)).isEqualTo(Status.CLAIMED);
        ClaimRequest skipped = request(job, now.minusSeconds(1), "s", true, Mode.CLAIM);
        assertThat(claim(skipped)).isEqualTo(Status.SKIPPED);
        assertThat(claim(skipped)).as("repeated after a lost reply").isEqualTo(Status.SKIPPED);

        RedisFixture.dropLease(redis.raw(), redis.provider().keys(), running.lease()); // the run's worker died: its lease ran out
        redis.raw().zadd(redis.provider().keys().running(job), 1, Long.toString(running.lease().slot().toEpochMilli()));
        ClaimRequest abandon = request(job, running.lease().slot(), "a", true, Mode.ABANDON);
        ClaimResult first = redis.provider().claim(List.of(abandon)).get(0);
        assertThat(first.status()).isEqualTo(Status.ABANDONED);
        assertThat(redis.provider().claim(List.of(abandon)).get(0)).as("repeated after a lost reply")
                .extracting(ClaimResult::status, ClaimResult::fencingToken).containsExactly(Status.ABANDONED, first.fencingToken());
        assertThat(claim(request(job, running.lease().slot(), "other", true, Mode.ABANDON))).isEqualTo(Status.TAKEN);
    }

    /**
     * A slot decided without a run is in the job's history beside the runs (what {@code history}
     * and the status page show), once, with why: missed late, missed as reported, skipped for an
     * overlap, paused, abandoned, and a recovery naming the run it replaced.
     */
    /**
     * F15 of the 2026-12-04 trial: after an outage {@code history} said only "its worker reported it
     * missed (its slot_missed event says why)". The report's code is now the entry's reason.
     */
    @Test
    void aSlotItsWorkerReportedMissedKeepsTheReportsCodeInTheHistory() {
        String job = RedisFixture.job();
        Instant now = redis.serverNow();
        for (String code : List.of("outage", "no_thread")) {
            Instant slot = now.minusSeconds(code.equals("outage") ? 4 : 3);
            ClaimRequest report = new ClaimRequest(new Lease(job, slot, code, LEASE, true), "w-" + code, GRACE, Mode.MISS_ONLY, false,
                    false, java.time.Duration.ZERO, null, code);
            assertThat(claim(report)).isEqualTo(Status.MISSED);
            assertThat(claim(report)).as("repeated").isEqualTo(Status.MISSED);
        }
        assertThat(RedisAdmin.of(redis.provider()).history(job, 10)).extracting(RedisAdmin.Run::slot, RedisAdmin.Run::outcome, RedisAdmin.Run::reason)
                .containsExactly(org.assertj.core.groups.Tuple.tuple(now.minusSeconds(3), "missed", "no_thread"),
                        org.assertj.core.groups.Tuple.tuple(now.minusSeconds(4), "missed", "outage"));
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> new ClaimRequest(new Lease(job, now, "x", LEASE, true), "w", GRACE,
                Mode.MISS_ONLY, false, false, java.time.Duration.ZERO, null, "two words")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void everyDecisionWithoutARunIsInTheHistoryOnceWithItsReason() {
        String job = RedisFixture.job();
        RedisAdmin admin = RedisAdmin.of(redis.provider());
        Instant now = redis.serverNow();
        ClaimRequest late = request(job, now.minus(GRACE).minusSeconds(9), "late", true, Mode.CLAIM);
        assertThat(claim(late)).isEqualTo(Status.MISSED);
        assertThat(claim(late)).as("repeated after a lost reply: no second entry").isEqualTo(Status.MISSED);
        ClaimRequest gaveUp = request(job, now.minusSeconds(8), "gave-up", true, Mode.MISS_ONLY);
        assertThat(claim(gaveUp)).isEqualTo(Status.MISSED);
        assertThat(claim(gaveUp)).as("repeated").isEqualTo(Status.MISSED);
        ClaimRequest running = request(job, now.minusSeconds(7), "r", true, Mode.CLAIM);
        assertThat(claim(running)).isEqualTo(Status.CLAIMED);
        assertThat(claim(request(job, now.minusSeconds(6), "s", true, Mode.CLAIM))).isEqualTo(Status.SKIPPED);
        RedisFixture.dropLease(redis.raw(), redis.provider().keys(), running.lease()); // its worker died
        redis.raw().zadd(redis.provider().keys().running(job), 1, Long.toString(running.lease().slot().toEpochMilli()));
        ClaimRequest rescue = request(job, running.lease().slot(), "rescuer", true, Mode.RECOVER);
        ClaimResult recovered = redis.provider().claim(List.of(rescue)).get(0);
        assertThat(recovered.status()).isEqualTo(Status.CLAIMED);
        assertThat(redis.provider().claim(List.of(rescue)).get(0).status()).as("repeated after a lost reply").isEqualTo(Status.CLAIMED);
        admin.pause(job, "deploy", java.util.Optional.empty(), "test");
        RedisFixture.dropLease(redis.raw(), redis.provider().keys(), new Lease(job, running.lease().slot(), "rescuer", LEASE, true));
        assertThat(claim(request(job, now.minusSeconds(5), "p", true, Mode.CLAIM))).isEqualTo(Status.PAUSED);

        List<RedisAdmin.Run> history = admin.history(job, 50);
        assertThat(history).extracting(RedisAdmin.Run::slot, RedisAdmin.Run::outcome, RedisAdmin.Run::reason).containsExactly(
                org.assertj.core.groups.Tuple.tuple(now.minusSeconds(5), "paused", "paused"),
                org.assertj.core.groups.Tuple.tuple(now.minusSeconds(6), "skipped", "overlap"),
                org.assertj.core.groups.Tuple.tuple(now.minusSeconds(7), "recovered", "lease_lost"),
                org.assertj.core.groups.Tuple.tuple(now.minusSeconds(8), "missed", "reported"),
                org.assertj.core.groups.Tuple.tuple(now.minus(GRACE).minusSeconds(9), "missed", "late"));
        RedisAdmin.Run rerun = history.get(2);
        assertThat(rerun.worker()).isEqualTo("w-rescuer");
        assertThat(rerun.fencingToken()).isEqualTo(recovered.fencingToken());
        assertThat(rerun.error()).as("the run it replaced").startsWith("run of w-r (token ");
        assertThat(history).noneMatch(RedisAdmin.Run::isRun);

        String other = RedisFixture.job();
        ClaimRequest dead = request(other, now.minusSeconds(3), "dead", true, Mode.CLAIM);
        ClaimResult deadClaim = redis.provider().claim(List.of(dead)).get(0);
        RedisFixture.dropLease(redis.raw(), redis.provider().keys(), dead.lease());
        redis.raw().zadd(redis.provider().keys().running(other), 1, Long.toString(dead.lease().slot().toEpochMilli()));
        ClaimRequest abandon = request(other, dead.lease().slot(), "a", true, Mode.ABANDON);
        assertThat(claim(abandon)).isEqualTo(Status.ABANDONED);
        assertThat(claim(abandon)).as("repeated after a lost reply").isEqualTo(Status.ABANDONED);
        ClaimRequest lostReply = request(other, now.minusSeconds(2), "lost-reply", true, Mode.CLAIM);
        assertThat(claim(lostReply)).isEqualTo(Status.CLAIMED);
        ClaimRequest disown = request(other, now.minusSeconds(2), "lost-reply", true, Mode.MISS_ONLY);
        assertThat(claim(disown)).isEqualTo(Status.MISSED);
        assertThat(claim(disown)).as("repeated").isEqualTo(Status.MISSED);
        assertThat(admin.history(other, 10)).extracting(RedisAdmin.Run::outcome, RedisAdmin.Run::reason)
                .containsExactly(org.assertj.core.groups.Tuple.tuple("missed", "disowned"), org.assertj.core.groups.Tuple.tuple("abandoned", "lease_lost"));
        assertThat(admin.history(other, 10).stream().filter(r -> r.outcome().equals("abandoned"))).singleElement().satisfies(r -> {
            assertThat(r.outcome()).isEqualTo("abandoned");
            assertThat(r.reason()).isEqualTo("lease_lost");
            assertThat(r.worker()).as("the dead run's worker").isEqualTo("w-dead");
            assertThat(r.fencingToken()).isEqualTo(deadClaim.fencingToken());
        });
    }

    /** A long pause cannot push a job's runs out of its history: decisions are kept beside them, each capped on its own. */
    @Test
    void aLongPauseKeepsTheLastRunInTheHistory() {
        String job = RedisFixture.job();
        Instant now = redis.serverNow();
        ClaimRequest ran = request(job, now.minusSeconds(300), "ran", true, Mode.CLAIM);
        ClaimRequest ranLate = new ClaimRequest(ran.lease(), ran.workerId(), Duration.ofMinutes(10), Mode.CLAIM, false);
        assertThat(claim(ranLate)).isEqualTo(Status.CLAIMED);
        assertThat(redis.provider().complete(ranLate.lease(), Outcome.SUCCEEDED)).isTrue();
        RedisAdmin admin = RedisAdmin.of(redis.provider());
        admin.pause(job, "long", java.util.Optional.empty(), "test");
        for (int i = 250; i > 0; i--) { // more than history.keep (100) paused slots
            ClaimRequest paused = new ClaimRequest(new Lease(job, now.minusSeconds(i), "p" + i, LEASE, true), "w", Duration.ofMinutes(10),
                    Mode.CLAIM, false);
            assertThat(claim(paused)).isEqualTo(Status.PAUSED);
        }
        RedisAdmin.JobState state = admin.job(job, 30);
        assertThat(state.recent()).hasSize(30).allMatch(r -> r.outcome().equals("paused"));
        assertThat(state.last()).hasValueSatisfying(r -> {
            assertThat(r.outcome()).isEqualTo("succeeded");
            assertThat(r.slot()).isEqualTo(ran.lease().slot());
        });
        assertThat(admin.history(job, 500).stream().filter(RedisAdmin.Run::isRun)).as("the run is still in the history").hasSize(1);
    }

    /** A start refused at the slot (the job was paused since the claim made ahead) is in the history once, however often asked. */
    @Test
    void aStartRefusedBecauseOfAPauseIsInTheHistoryOnce() {
        String job = RedisFixture.job();
        // Claimed well ahead and started at once: start.lua judges the pause whenever it is asked.
        Instant slot = redis.serverNow().plusSeconds(2);
        ClaimRequest ahead = new ClaimRequest(new Lease(job, slot, "ahead", LEASE, true), "w-ahead", GRACE, Mode.CLAIM, false, false,
                Duration.ofSeconds(5));
        assertThat(claim(ahead)).isEqualTo(Status.CLAIMED);
        RedisAdmin admin = RedisAdmin.of(redis.provider());
        admin.pause(job, "deploy", java.util.Optional.empty(), "test");
        io.lockstep.scheduler.lock.StartRequest start = new io.lockstep.scheduler.lock.StartRequest(ahead.lease(), GRACE);
        assertThat(redis.provider().start(List.of(start)).get(0).answer()).isEqualTo(io.lockstep.scheduler.lock.StartAnswer.PAUSED);
        assertThat(redis.provider().start(List.of(start)).get(0).answer()).as("repeated after a lost reply")
                .isEqualTo(io.lockstep.scheduler.lock.StartAnswer.PAUSED);
        assertThat(admin.history(job, 10)).singleElement().satisfies(r -> {
            assertThat(r.outcome()).isEqualTo("paused");
            assertThat(r.worker()).isEqualTo("w-ahead");
        });
    }

    @Test
    void aRepeatedRecoveryWinsAgainWithTheSameFence() {
        String job = RedisFixture.job();
        Instant slot = redis.serverNow().minusSeconds(1);
        ClaimRequest dead = request(job, slot, "dead", true, Mode.CLAIM);
        claim(dead);
        RedisFixture.dropLease(redis.raw(), redis.provider().keys(), dead.lease());
        redis.raw().zadd(redis.provider().keys().running(job), 1, Long.toString(slot.toEpochMilli()));
        ClaimRequest recover = request(job, slot, "rescuer", true, Mode.RECOVER);
        ClaimResult first = redis.provider().claim(List.of(recover)).get(0);
        ClaimResult again = redis.provider().claim(List.of(recover)).get(0);
        assertThat(first.status()).isEqualTo(Status.CLAIMED);
        assertThat(again).extracting(ClaimResult::status, ClaimResult::fencingToken)
                .containsExactly(Status.CLAIMED, first.fencingToken());
        assertThat(redis.raw().hget(redis.provider().keys().slot(job, slot.toEpochMilli()), "recoveries")).isEqualTo("1");
    }

    /**
     * A run that finished after its slot was recovered by a peer (its worker was cut off for longer
     * than the lease): its outcome is refused as a decision, but it is added to the slot's history,
     * marked late, once, under its own worker and token, beside the rerun's; before, it was dropped
     * and the history said only that the run was lost.
     */
    @Test
    void aRunThatFinishesAfterItsSlotWasRecoveredIsInTheHistoryMarkedLate() {
        String job = RedisFixture.job();
        Instant slot = redis.serverNow().minusSeconds(1);
        ClaimRequest cutOff = request(job, slot, "cut-off", true, Mode.CLAIM);
        ClaimResult ran = redis.provider().claim(List.of(cutOff)).get(0);
        RedisFixture.dropLease(redis.raw(), redis.provider().keys(), cutOff.lease()); // its lease ran out while it was cut off
        redis.raw().zadd(redis.provider().keys().running(job), 1, Long.toString(slot.toEpochMilli()));
        ClaimResult rerun = redis.provider().claim(List.of(request(job, slot, "rescuer", true, Mode.RECOVER))).get(0);
        assertThat(rerun.status()).isEqualTo(Status.CLAIMED);

        io.lockstep.scheduler.lock.Completion late = new io.lockstep.scheduler.lock.Completion(cutOff.lease(), Outcome.SUCCEEDED, 1, 1200, "",
                false, ran.fencingToken());
        assertThat(redis.provider().complete(List.of(late))).as("no longer its slot").containsExactly(false);
        assertThat(redis.provider().recordLate("w-cut-off", List.of(late))).containsExactly(true);
        assertThat(redis.provider().recordLate("w-cut-off", List.of(late))).as("repeated after a lost reply").containsExactly(true);
        RedisAdmin admin = RedisAdmin.of(redis.provider());
        assertThat(admin.history(job, 10)).as("the rerun's recovery, and the late outcome once").satisfiesExactlyInAnyOrder(
                r -> assertThat(r.outcome()).isEqualTo("recovered"),
                r -> {
                    assertThat(r.outcome()).isEqualTo("succeeded");
                    assertThat(r.reason()).isEqualTo("late");
                    assertThat(r.worker()).isEqualTo("w-cut-off");
                    assertThat(r.fencingToken()).isEqualTo(ran.fencingToken());
                    assertThat(r.durationMs()).isEqualTo(1200);
                });
        assertThat(redis.raw().hget(redis.provider().keys().slot(job, slot.toEpochMilli()), "state")).as("the rerun's decision stands")
                .isEqualTo("running");
    }

    /**
     * m7 of the 2026-12-01 review: our claim won but its reply was lost, and a later slot replaced
     * it ({@code overlap: replace}) before we asked again. The repeat is not answered {@code taken}
     * with our own token as the holder (the worker would log {@code slot_contended} for a slot its
     * claim won): the slot was superseded, and its record says so instead of staying
     * {@code running} outside the running index until its ttl.
     */
    @Test
    void aRepeatedClaimThatALaterSlotReplacedMeanwhileIsSupersededNotTakenByUs() {
        String job = RedisFixture.job();
        Instant now = redis.serverNow();
        ClaimRequest ours = request(job, now.minusSeconds(2), "ours", true, Mode.CLAIM);
        assertThat(claim(ours)).isEqualTo(Status.CLAIMED); // its reply is lost
        ClaimRequest replacing = new ClaimRequest(new Lease(job, now.minusSeconds(1), "next", LEASE, true), "w-next", GRACE, Mode.CLAIM, true);
        assertThat(claim(replacing)).isEqualTo(Status.CLAIMED);
        assertThat(claim(ours)).as("our claim asked again").isEqualTo(Status.SUPERSEDED);
        assertThat(redis.raw().hget(redis.provider().keys().slot(job, ours.lease().slot().toEpochMilli()), "state")).isEqualTo("missed");
        assertThat(claim(ours)).as("and again").isEqualTo(Status.SUPERSEDED);
    }

    @Test
    void aRepeatedRenewalOrCompletionAnswersOursAgain() {
        String job = RedisFixture.job();
        ClaimRequest r = request(job, redis.serverNow().minusMillis(5), "a", true, Mode.CLAIM);
        claim(r);
        assertThat(redis.provider().renew(List.of(r.lease()))).containsExactly(true);
        assertThat(redis.provider().renew(List.of(r.lease()))).as("a renewal repeated after a lost reply").containsExactly(true);
        assertThat(redis.provider().complete(r.lease(), Outcome.SUCCEEDED)).isTrue();
        assertThat(redis.provider().complete(r.lease(), Outcome.SUCCEEDED)).as("repeated after a lost reply").isTrue();
        assertThat(redis.provider().complete(new Lease(job, r.lease().slot(), "b", LEASE, true), Outcome.SUCCEEDED)).isFalse();
    }

    @Test
    void givingUpOnAClaimWhoseReplyNeverCameDisownsItInTheStore() {
        String job = RedisFixture.job();
        Instant slot = redis.serverNow().minusMillis(5);
        ClaimRequest claimed = request(job, slot, "lost-reply", true, Mode.CLAIM);
        assertThat(claim(claimed)).isEqualTo(Status.CLAIMED); // ran in Redis; the worker never heard
        ClaimRequest giveUp = request(job, slot, "lost-reply", true, Mode.MISS_ONLY);
        assertThat(claim(giveUp)).isEqualTo(Status.MISSED);
        String record = redis.provider().keys().slot(job, slot.toEpochMilli());
        assertThat(redis.raw().hget(record, "state")).isEqualTo("missed");
        assertThat(RedisFixture.leaseOwner(redis.raw(), redis.provider().keys(), claimed.lease())).isNull();
        assertThat(redis.raw().zcard(redis.provider().keys().running(job))).isZero();
        assertThat(claim(giveUp)).as("repeated").isEqualTo(Status.MISSED);
        assertThat(claim(claimed)).as("the old claim, repeated late, does not come back").isEqualTo(Status.MISSED);
    }

    @Test
    void aSlotWhoseRecordMayHaveExpiredIsNeitherRunNorRecordedAgain() {
        String job = RedisFixture.job();
        Instant now = redis.serverNow();
        Instant slot = now.minus(ClaimRequest.recordTtl(LEASE, GRACE)).minusSeconds(10);
        // The cluster was down before this slot: it is caught up (it is later than the last decided slot).
        redis.raw().hset(redis.provider().keys().marks(job), RedisKeys.markField(job) + "decided", Long.toString(slot.minusSeconds(60).toEpochMilli()));
        ClaimRequest caughtUp = request(job, slot, "a", true, Mode.CATCH_UP);
        assertThat(claim(caughtUp)).isEqualTo(Status.CLAIMED);
        String fenceAfterRun = redis.raw().hget(redis.provider().keys().marks(job), RedisKeys.markField(job) + "fence");
        assertThat(redis.provider().complete(caughtUp.lease(), Outcome.SUCCEEDED)).isTrue();
        // Its record's ttl runs out; a worker that was busy or paused all along comes back to it.
        String record = redis.provider().keys().slot(job, slot.toEpochMilli());
        redis.raw().pexpire(record, 1);
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(2)).until(() -> !redis.raw().exists(record));

        assertThat(claim(request(job, slot, "late", true, Mode.CATCH_UP))).isEqualTo(Status.STALE);
        assertThat(claim(request(job, slot, "later", true, Mode.MISS_ONLY))).isEqualTo(Status.STALE);
        assertThat(claim(request(job, slot, "latest", true, Mode.CLAIM))).isEqualTo(Status.STALE);
        assertThat(redis.raw().exists(record)).as("nothing written").isFalse();
        assertThat(redis.raw().hget(redis.provider().keys().marks(job), RedisKeys.markField(job) + "fence")).as("no fencing token taken").isEqualTo(fenceAfterRun);
    }

    @Test
    void anOlderSlotNeverStartsAfterANewerOneStartedAndIsReportedOnce() {
        String job = RedisFixture.job();
        Instant now = redis.serverNow();
        Instant s13 = now.minusSeconds(2);
        Instant s14 = now.minusSeconds(1);
        long newer = redis.provider().claim(List.of(request(job, s14, "a", false, Mode.CLAIM))).get(0).fencingToken();
        ClaimRequest older = request(job, s13, "b", false, Mode.CLAIM);
        assertThat(claim(older)).isEqualTo(Status.SUPERSEDED);
        assertThat(claim(older)).as("repeated after a lost reply").isEqualTo(Status.SUPERSEDED);
        assertThat(claim(request(job, s13, "c", false, Mode.CLAIM))).isEqualTo(Status.TAKEN);
        assertThat(redis.raw().hget(redis.provider().keys().slot(job, s13.toEpochMilli()), "state")).isEqualTo("missed");
        assertThat(Long.parseLong(redis.raw().hget(redis.provider().keys().marks(job), RedisKeys.markField(job) + "fence"))).as("no fencing token taken out of order").isEqualTo(newer);
    }

    @Test
    void afterARestartOnlyTheCallsTheServerDidNotKnowAreSentAgain() {
        try (LocalRedisServer own = LocalRedisServer.start();
             RedisLockProvider p = RedisLockProvider.builder().uri(own.uri()).build();
             RedisClient admin = RedisClient.create(own.host(), own.port())) {
            String job = RedisFixture.job();
            Instant slot = Instant.ofEpochMilli(p.serverTimeMillis()).minusMillis(5);
            ClaimRequest dead = request(job, slot, "dead", true, Mode.CLAIM);
            p.claim(List.of(dead));
            RedisFixture.dropLease(admin, p.keys(), dead.lease());
            admin.zadd(p.keys().running(job), 1, Long.toString(slot.toEpochMilli()));
            // The claim script is known, the recovery script is not (as after a restart and one claim).
            admin.scriptFlush();
            admin.scriptLoad(LuaScript.load("claim.lua").source());
            ClaimRequest fresh = request(RedisFixture.job(), Instant.ofEpochMilli(p.serverTimeMillis()).minusMillis(5), "fresh", true, Mode.CLAIM);
            admin.sendCommand(Protocol.Command.CONFIG, "RESETSTAT");
            List<ClaimResult> results = p.claim(List.of(fresh,
                    request(job, slot, "rescuer", true, Mode.RECOVER)));
            assertThat(results).extracting(ClaimResult::status).containsExactly(Status.CLAIMED, Status.CLAIMED);
            var stats = own.commandStats();
            assertThat(stats.get("evalsha").calls()).isEqualTo(2);
            assertThat(stats.get("eval").calls()).as("only the unknown script is sent again").isEqualTo(1);
        }
    }

    @Test
    void fencingTokensNeverGoBackAfterARestartWithoutPersistence() {
        try (LocalRedisServer own = LocalRedisServer.start();
             RedisLockProvider p = RedisLockProvider.builder().uri(own.uri()).build()) {
            String job = RedisFixture.job();
            long before = p.claim(List.of(request(job, Instant.ofEpochMilli(p.serverTimeMillis()).minusMillis(5), "a", true, Mode.CLAIM)))
                    .get(0).fencingToken();
            own.restart(); // empty: the counter is gone
            org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).ignoreExceptions().until(() -> p.serverTimeMillis() > 0);
            ClaimResult after = p.claim(List.of(request(job, Instant.ofEpochMilli(p.serverTimeMillis()).minusMillis(5), "b", true,
                    Mode.CLAIM))).get(0);
            assertThat(after.status()).isEqualTo(Status.CLAIMED);
            assertThat(after.fencingToken()).isGreaterThan(before);
        }
    }

    @Test
    void tokensOfOneServerAreComparableAcrossCountersBecauseTheyFollowItsClock() {
        String job = RedisFixture.job();
        long first = redis.provider().claim(List.of(request(job, redis.serverNow().minusMillis(5), "a", true, Mode.CLAIM))).get(0).fencingToken();
        long second = redis.provider().claim(List.of(request(RedisFixture.job(), redis.serverNow().minusMillis(5), "b", true, Mode.CLAIM))).get(0).fencingToken();
        assertThat(second).as("a later claim of another job, from another counter").isGreaterThan(first);
        assertThat(first).as("microseconds of Redis time").isGreaterThan(redis.serverNow().minusSeconds(10).toEpochMilli() * 1_000);
        assertThat(redis.raw().pttl(redis.provider().keys().marks(job))).as("the counter has a ttl, refreshed by every claim")
                .isGreaterThan(Duration.ofDays(6).toMillis());
    }

    @Test
    void aShortLeaseOfOneRunNeverShortensTheRunningIndexOfALongerOne() {
        String job = RedisFixture.job();
        Instant now = redis.serverNow();
        ClaimRequest longRun = new ClaimRequest(new Lease(job, now.minusSeconds(2), "long", Duration.ofMinutes(10), false),
                "w-long", GRACE, Mode.CLAIM, false);
        ClaimRequest shortRun = new ClaimRequest(new Lease(job, now.minusSeconds(1), "short", Duration.ofSeconds(1), false),
                "w-short", GRACE, Mode.CLAIM, false);
        redis.provider().claim(List.of(longRun));
        redis.provider().claim(List.of(shortRun)); // a worker with a shorter lease, during a rolling change of the config
        redis.provider().renew(List.of(shortRun.lease()));
        assertThat(redis.raw().pttl(redis.provider().keys().running(job))).as("the index outlives the long run").isGreaterThan(Duration.ofMinutes(10).toMillis());
        assertThat(redis.raw().zscore(redis.provider().keys().running(job), Long.toString(now.minusSeconds(2).toEpochMilli()))).isNotNull();
    }

    @Test
    void aServerThatMayEvictKeysIsNamedAtStart() {
        assertThat(redis.provider().evictionWarning()).as("noeviction, the default").isEmpty();
        try (LocalRedisServer lru = LocalRedisServer.start("--maxmemory-policy", "volatile-lru");
             RedisLockProvider p = RedisLockProvider.builder().uri(lru.uri()).build()) {
            assertThat(p.evictionWarning()).hasValueSatisfying(w -> assertThat(w)
                    .startsWith("maxmemory-policy is volatile-lru: ").contains("set maxmemory-policy noeviction on redis 127.0.0.1:" + lru.port()));
        }
    }
}
