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
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
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

    private static RedisFixture fixture;
    private static RedisLockProvider provider;
    private static RedisClient raw;

    @BeforeAll
    static void startRedis() {
        fixture = RedisFixture.start();
        provider = fixture.provider;
        raw = fixture.raw;
    }

    @AfterAll
    static void stopRedis() {
        fixture.close();
    }

    private static String job() {
        return RedisFixture.job();
    }

    private static Instant serverNow() {
        return fixture.serverNow();
    }

    private static ClaimRequest request(String job, Instant slot, String token, boolean exclusive, Mode mode) {
        return new ClaimRequest(new Lease(job, slot, token, LEASE, exclusive), "w-" + token, GRACE, mode, false);
    }

    private static Status claim(ClaimRequest request) {
        return provider.claim(List.of(request)).get(0).status();
    }

    @Test
    void aRepeatedMissSkipOrAbandonGetsTheSameAnswer() {
        String job = job();
        Instant now = serverNow();
        ClaimRequest missed = request(job, now.minus(GRACE).minusSeconds(5), "m", true, Mode.CLAIM);
        assertThat(claim(missed)).isEqualTo(Status.MISSED);
        assertThat(claim(missed)).as("repeated after a lost reply").isEqualTo(Status.MISSED);

        ClaimRequest running = request(job, now.minusSeconds(2), "r", true, Mode.CLAIM);
        assertThat(claim(running)).isEqualTo(Status.CLAIMED);
        ClaimRequest skipped = request(job, now.minusSeconds(1), "s", true, Mode.CLAIM);
        assertThat(claim(skipped)).isEqualTo(Status.SKIPPED);
        assertThat(claim(skipped)).as("repeated after a lost reply").isEqualTo(Status.SKIPPED);

        raw.del(provider.keys().lease(running.lease())); // the run's worker died: its lease ran out
        raw.zadd(provider.keys().running(job), 1, Long.toString(running.lease().slot().toEpochMilli()));
        ClaimRequest abandon = request(job, running.lease().slot(), "a", true, Mode.ABANDON);
        ClaimResult first = provider.claim(List.of(abandon)).get(0);
        assertThat(first.status()).isEqualTo(Status.ABANDONED);
        assertThat(provider.claim(List.of(abandon)).get(0)).as("repeated after a lost reply")
                .extracting(ClaimResult::status, ClaimResult::fencingToken).containsExactly(Status.ABANDONED, first.fencingToken());
        assertThat(claim(request(job, running.lease().slot(), "other", true, Mode.ABANDON))).isEqualTo(Status.TAKEN);
    }

    @Test
    void aRepeatedRecoveryWinsAgainWithTheSameFence() {
        String job = job();
        Instant slot = serverNow().minusSeconds(1);
        ClaimRequest dead = request(job, slot, "dead", true, Mode.CLAIM);
        claim(dead);
        raw.del(provider.keys().lease(dead.lease()));
        raw.zadd(provider.keys().running(job), 1, Long.toString(slot.toEpochMilli()));
        ClaimRequest recover = request(job, slot, "rescuer", true, Mode.RECOVER);
        ClaimResult first = provider.claim(List.of(recover)).get(0);
        ClaimResult again = provider.claim(List.of(recover)).get(0);
        assertThat(first.status()).isEqualTo(Status.CLAIMED);
        assertThat(again).extracting(ClaimResult::status, ClaimResult::fencingToken)
                .containsExactly(Status.CLAIMED, first.fencingToken());
        assertThat(raw.hget(provider.keys().slot(job, slot.toEpochMilli()), "recoveries")).isEqualTo("1");
    }

    @Test
    void aRepeatedRenewalOrCompletionAnswersOursAgain() {
        String job = job();
        ClaimRequest r = request(job, serverNow().minusMillis(5), "a", true, Mode.CLAIM);
        claim(r);
        assertThat(provider.renew(List.of(r.lease()))).containsExactly(true);
        assertThat(provider.renew(List.of(r.lease()))).as("a renewal repeated after a lost reply").containsExactly(true);
        assertThat(provider.complete(r.lease(), Outcome.SUCCEEDED)).isTrue();
        assertThat(provider.complete(r.lease(), Outcome.SUCCEEDED)).as("repeated after a lost reply").isTrue();
        assertThat(provider.complete(new Lease(job, r.lease().slot(), "b", LEASE, true), Outcome.SUCCEEDED)).isFalse();
    }

    @Test
    void givingUpOnAClaimWhoseReplyNeverCameDisownsItInTheStore() {
        String job = job();
        Instant slot = serverNow().minusMillis(5);
        ClaimRequest claimed = request(job, slot, "lost-reply", true, Mode.CLAIM);
        assertThat(claim(claimed)).isEqualTo(Status.CLAIMED); // ran in Redis; the worker never heard
        ClaimRequest giveUp = request(job, slot, "lost-reply", true, Mode.MISS_ONLY);
        assertThat(claim(giveUp)).isEqualTo(Status.MISSED);
        String record = provider.keys().slot(job, slot.toEpochMilli());
        assertThat(raw.hget(record, "state")).isEqualTo("missed");
        assertThat(raw.exists(provider.keys().lease(claimed.lease()))).isFalse();
        assertThat(raw.zcard(provider.keys().running(job))).isZero();
        assertThat(claim(giveUp)).as("repeated").isEqualTo(Status.MISSED);
        assertThat(claim(claimed)).as("the old claim, repeated late, does not come back").isEqualTo(Status.MISSED);
    }

    @Test
    void aSlotWhoseRecordMayHaveExpiredIsNeitherRunNorRecordedAgain() {
        String job = job();
        Instant now = serverNow();
        Instant slot = now.minus(ClaimRequest.recordTtl(LEASE, GRACE)).minusSeconds(10);
        // The cluster was down before this slot: it is caught up (it is later than the last decided slot).
        raw.hset(provider.keys().marks(job), "decided", Long.toString(slot.minusSeconds(60).toEpochMilli()));
        ClaimRequest caughtUp = request(job, slot, "a", true, Mode.CATCH_UP);
        assertThat(claim(caughtUp)).isEqualTo(Status.CLAIMED);
        String fenceAfterRun = raw.get(provider.keys().fence(job));
        assertThat(provider.complete(caughtUp.lease(), Outcome.SUCCEEDED)).isTrue();
        // Its record's ttl runs out; a worker that was busy or paused all along comes back to it.
        String record = provider.keys().slot(job, slot.toEpochMilli());
        raw.pexpire(record, 1);
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(2)).until(() -> !raw.exists(record));

        assertThat(claim(request(job, slot, "late", true, Mode.CATCH_UP))).isEqualTo(Status.STALE);
        assertThat(claim(request(job, slot, "later", true, Mode.MISS_ONLY))).isEqualTo(Status.STALE);
        assertThat(claim(request(job, slot, "latest", true, Mode.CLAIM))).isEqualTo(Status.STALE);
        assertThat(raw.exists(record)).as("nothing written").isFalse();
        assertThat(raw.get(provider.keys().fence(job))).as("no fencing token taken").isEqualTo(fenceAfterRun);
    }

    @Test
    void anOlderSlotNeverStartsAfterANewerOneStartedAndIsReportedOnce() {
        String job = job();
        Instant now = serverNow();
        Instant s13 = now.minusSeconds(2);
        Instant s14 = now.minusSeconds(1);
        long newer = provider.claim(List.of(request(job, s14, "a", false, Mode.CLAIM))).get(0).fencingToken();
        ClaimRequest older = request(job, s13, "b", false, Mode.CLAIM);
        assertThat(claim(older)).isEqualTo(Status.SUPERSEDED);
        assertThat(claim(older)).as("repeated after a lost reply").isEqualTo(Status.SUPERSEDED);
        assertThat(claim(request(job, s13, "c", false, Mode.CLAIM))).isEqualTo(Status.TAKEN);
        assertThat(raw.hget(provider.keys().slot(job, s13.toEpochMilli()), "state")).isEqualTo("missed");
        assertThat(Long.parseLong(raw.get(provider.keys().fence(job)))).as("no fencing token taken out of order").isEqualTo(newer);
    }

    @Test
    void afterARestartOnlyTheCallsTheServerDidNotKnowAreSentAgain() {
        try (LocalRedisServer own = LocalRedisServer.start();
             RedisLockProvider p = RedisLockProvider.builder().uri(own.uri()).build();
             RedisClient admin = RedisClient.create(own.host(), own.port())) {
            String job = job();
            Instant slot = Instant.ofEpochMilli(p.serverTimeMillis()).minusMillis(5);
            ClaimRequest dead = request(job, slot, "dead", true, Mode.CLAIM);
            p.claim(List.of(dead));
            admin.del(p.keys().lease(dead.lease()));
            admin.zadd(p.keys().running(job), 1, Long.toString(slot.toEpochMilli()));
            // The claim script is known, the recovery script is not (as after a restart and one claim).
            admin.scriptFlush();
            admin.scriptLoad(new String(RedisDecisionsTest.class.getResourceAsStream("/io/lockstep/redis/claim.lua")
                    .readAllBytes(), java.nio.charset.StandardCharsets.UTF_8));
            ClaimRequest fresh = request(job(), Instant.ofEpochMilli(p.serverTimeMillis()).minusMillis(5), "fresh", true, Mode.CLAIM);
            admin.sendCommand(redis.clients.jedis.Protocol.Command.CONFIG, "RESETSTAT");
            List<ClaimResult> results = p.claim(List.of(fresh,
                    request(job, slot, "rescuer", true, Mode.RECOVER)));
            assertThat(results).extracting(ClaimResult::status).containsExactly(Status.CLAIMED, Status.CLAIMED);
            var stats = own.commandStats();
            assertThat(stats.get("evalsha").calls()).isEqualTo(2);
            assertThat(stats.get("eval").calls()).as("only the unknown script is sent again").isEqualTo(1);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @Test
    void fencingTokensNeverGoBackAfterARestartWithoutPersistence() {
        try (LocalRedisServer own = LocalRedisServer.start();
             RedisLockProvider p = RedisLockProvider.builder().uri(own.uri()).build()) {
            String job = job();
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
        String job = job();
        long first = provider.claim(List.of(request(job, serverNow().minusMillis(5), "a", true, Mode.CLAIM))).get(0).fencingToken();
        long second = provider.claim(List.of(request(job(), serverNow().minusMillis(5), "b", true, Mode.CLAIM))).get(0).fencingToken();
        assertThat(second).as("a later claim of another job, from another counter").isGreaterThan(first);
        assertThat(first).as("microseconds of Redis time").isGreaterThan(serverNow().minusSeconds(10).toEpochMilli() * 1_000);
        assertThat(raw.pttl(provider.keys().fence(job))).as("the counter has a ttl, refreshed by every claim")
                .isGreaterThan(Duration.ofDays(6).toMillis());
    }

    @Test
    void aShortLeaseOfOneRunNeverShortensTheRunningIndexOfALongerOne() {
        String job = job();
        Instant now = serverNow();
        ClaimRequest longRun = new ClaimRequest(new Lease(job, now.minusSeconds(2), "long", Duration.ofMinutes(10), false),
                "w-long", GRACE, Mode.CLAIM, false);
        ClaimRequest shortRun = new ClaimRequest(new Lease(job, now.minusSeconds(1), "short", Duration.ofSeconds(1), false),
                "w-short", GRACE, Mode.CLAIM, false);
        provider.claim(List.of(longRun));
        provider.claim(List.of(shortRun)); // a worker with a shorter lease, during a rolling change of the config
        provider.renew(List.of(shortRun.lease()));
        assertThat(raw.pttl(provider.keys().running(job))).as("the index outlives the long run").isGreaterThan(Duration.ofMinutes(10).toMillis());
        assertThat(raw.zscore(provider.keys().running(job), Long.toString(now.minusSeconds(2).toEpochMilli()))).isNotNull();
    }

    @Test
    void aServerThatMayEvictKeysIsNamedAtStart() {
        assertThat(provider.evictionWarning()).as("noeviction, the default").isEmpty();
        try (LocalRedisServer lru = LocalRedisServer.start("--maxmemory-policy", "volatile-lru");
             RedisLockProvider p = RedisLockProvider.builder().uri(lru.uri()).build()) {
            assertThat(p.evictionWarning()).hasValueSatisfying(w -> assertThat(w)
                    .startsWith("maxmemory-policy is volatile-lru: ").contains("set maxmemory-policy noeviction on redis 127.0.0.1:" + lru.port()));
        }
    }
}
