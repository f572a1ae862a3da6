package io.lockstep.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.ClaimResult;
import io.lockstep.scheduler.lock.ClaimResult.Status;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.Outcome;
import io.lockstep.scheduler.lock.RunsInFlight;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.params.ScanParams;

/** The Redis provider against a real redis-server: claims, owner checks, records and failures. */
class RedisLockProviderTest {

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

    private static ClaimRequest request(String job, Instant slot, String token, boolean exclusive) {
        return new ClaimRequest(new Lease(job, slot, token, LEASE, exclusive), "w-" + token, GRACE, false);
    }

    @Test
    void exactlyOneOfTwoClaimsOfTheSameSlotWins() {
        String job = job();
        Instant slot = serverNow().minusMillis(5);
        List<ClaimResult> results = provider.claim(List.of(request(job, slot, "a", false), request(job, slot, "b", false)));
        assertThat(results).extracting(ClaimResult::status).containsExactly(Status.CLAIMED, Status.TAKEN);
        assertThat(results.get(0).fencingToken()).isPositive();
    }

    @Test
    void fencingTokensStrictlyIncreasePerJob() {
        String job = job();
        Instant now = serverNow();
        long first = provider.claim(List.of(request(job, now.minusMillis(20), "a", false))).get(0).fencingToken();
        long second = provider.claim(List.of(request(job, now.minusMillis(10), "b", false))).get(0).fencingToken();
        assertThat(second).isGreaterThan(first);
    }

    @Test
    void aSlotTheServerClockHasNotReachedIsNotClaimed() {
        String job = job();
        Instant slot = serverNow().plusSeconds(5);
        ClaimResult result = provider.claim(List.of(request(job, slot, "a", false))).get(0);
        assertThat(result.status()).isEqualTo(Status.EARLY);
        assertThat(raw.exists(provider.keys().slot(job, slot.toEpochMilli()))).isFalse();
        assertThat(raw.exists(provider.keys().fence(job))).isFalse();
    }

    @Test
    void aSlotPastItsGraceIsRecordedMissedExactlyOnce() {
        String job = job();
        Instant slot = serverNow().minus(GRACE).minusSeconds(1);
        List<ClaimResult> results = provider.claim(List.of(request(job, slot, "a", false), request(job, slot, "b", false)));
        assertThat(results).extracting(ClaimResult::status).containsExactly(Status.MISSED, Status.TAKEN);
        assertThat(raw.hget(provider.keys().slot(job, slot.toEpochMilli()), "state")).isEqualTo("missed");
    }

    @Test
    void aFinishedSlotStaysDoneAndCannotBeClaimedAgain() {
        String job = job();
        Instant slot = serverNow().minusMillis(5);
        ClaimRequest first = request(job, slot, "a", false);
        assertThat(provider.claim(List.of(first)).get(0).status()).isEqualTo(Status.CLAIMED);
        assertThat(provider.complete(first.lease(), Outcome.SUCCEEDED)).isTrue();

        String record = provider.keys().slot(job, slot.toEpochMilli());
        assertThat(raw.hget(record, "state")).isEqualTo("done");
        assertThat(raw.hget(record, "outcome")).isEqualTo("succeeded");
        assertThat(raw.pttl(record)).isPositive();
        assertThat(raw.exists(provider.keys().lease(first.lease()))).isFalse();
        assertThat(provider.claim(List.of(request(job, slot, "late", false))).get(0).status()).isEqualTo(Status.TAKEN);
    }

    @Test
    void repeatingALostClaimReplyWinsAgainWithTheSameFence() {
        String job = job();
        Instant slot = serverNow().minusMillis(5);
        ClaimResult first = provider.claim(List.of(request(job, slot, "a", false))).get(0);
        ClaimResult again = provider.claim(List.of(request(job, slot, "a", false))).get(0);
        assertThat(again.status()).isEqualTo(Status.CLAIMED);
        assertThat(again.fencingToken()).isEqualTo(first.fencingToken());
    }

    @Test
    void anExclusiveLeaseHeldByARunningSlotSkipsTheNextSlot() {
        String job = job();
        Instant now = serverNow();
        assertThat(provider.claim(List.of(request(job, now.minusSeconds(2), "a", true))).get(0).status())
                .isEqualTo(Status.CLAIMED);
        ClaimResult next = provider.claim(List.of(request(job, now.minusSeconds(1), "b", true))).get(0);
        assertThat(next.status()).isEqualTo(Status.SKIPPED);
        assertThat(raw.hget(provider.keys().slot(job, now.minusSeconds(1).toEpochMilli()), "state")).isEqualTo("skipped");
    }

    @Test
    void aForeignTokenCanNeitherRenewNorReleaseAndLeavesKeyAndTtlUntouched() {
        String job = job();
        Instant slot = serverNow().minusMillis(5);
        ClaimRequest mine = request(job, slot, "owner-token", false);
        provider.claim(List.of(mine));
        String leaseKey = provider.keys().lease(mine.lease());
        raw.pexpire(leaseKey, 5_000); // so that a foreign renewal to LEASE (10 s) would be visible
        long ttlBefore = raw.pttl(leaseKey);

        Lease foreign = new Lease(job, slot, "foreign-token", LEASE, false);
        assertThat(provider.renew(List.of(foreign))).containsExactly(false);
        assertThat(provider.complete(foreign, Outcome.SUCCEEDED)).isFalse();

        assertThat(raw.get(leaseKey)).isEqualTo("owner-token");
        assertThat(raw.pttl(leaseKey)).isBetween(1L, ttlBefore);
        assertThat(raw.hget(provider.keys().slot(job, slot.toEpochMilli()), "state")).isEqualTo("running");

        assertThat(provider.renew(List.of(mine.lease()))).containsExactly(true);
        assertThat(raw.pttl(leaseKey)).isGreaterThan(ttlBefore);
    }

    @Test
    void aRenewalKeepsTheSlotRecordAliveAtLeastTwoLeases() {
        String job = job();
        Instant slot = serverNow().minusMillis(5);
        ClaimRequest r = request(job, slot, "a", false);
        provider.claim(List.of(r));
        String record = provider.keys().slot(job, slot.toEpochMilli());
        raw.pexpire(record, 100); // as if the run had outlived the record's own ttl
        assertThat(provider.renew(List.of(r.lease()))).containsExactly(true);
        assertThat(raw.pttl(record)).isGreaterThan(LEASE.toMillis());
    }

    @Test
    void renewalsOfABatchAnswerPerLease() {
        String job = job();
        Instant now = serverNow();
        ClaimRequest a = request(job, now.minusMillis(30), "a", false);
        ClaimRequest b = request(job, now.minusMillis(20), "b", false);
        provider.claim(List.of(a, b));
        raw.del(provider.keys().lease(b.lease())); // b's lease expired
        assertThat(provider.renew(List.of(a.lease(), b.lease()))).containsExactly(true, false);
    }

    @Test
    void everyKeyHasATtl() {
        String job = job();
        Instant slot = serverNow().minusMillis(5);
        ClaimRequest r = request(job, slot, "a", true);
        provider.claim(List.of(r));
        List<String> keys = raw.scan("0", new ScanParams().match("lockstep:{" + job + "}:*").count(1000)).getResult();
        assertThat(keys).containsExactlyInAnyOrder(provider.keys().slot(job, slot.toEpochMilli()), provider.keys().fence(job),
                provider.keys().lease(r.lease()), provider.keys().running(job), provider.keys().marks(job));
        for (String key : keys) {
            assertThat(raw.pttl(key)).as(key).isPositive();
        }
    }

    @Test
    void scriptsAreSentAgainWhenARestartedServerForgotThem() {
        try (LocalRedisServer own = LocalRedisServer.start();
             RedisLockProvider p = RedisLockProvider.builder().uri(own.uri()).build()) {
            String job = job();
            assertThat(p.claim(List.of(request(job, Instant.ofEpochMilli(p.serverTimeMillis()).minusMillis(5), "a", false))))
                    .extracting(ClaimResult::status).containsExactly(Status.CLAIMED);
            own.restart();
            // Pooled connections to the old process fail once each (fail closed); after that the
            // claim must go through although the new process has never seen the script.
            await().atMost(Duration.ofSeconds(10)).ignoreException(LockException.class).untilAsserted(() ->
                    assertThat(p.claim(List.of(request(job, Instant.ofEpochMilli(p.serverTimeMillis()).minusMillis(5), "b", false))))
                            .extracting(ClaimResult::status).containsExactly(Status.CLAIMED));
        }
    }

    @Test
    void anUnreachableServerFailsWithTheHostInOneLine() {
        try (LocalRedisServer own = LocalRedisServer.start()) {
            own.kill();
            try (RedisLockProvider p = RedisLockProvider.builder().uri(own.uri()).timeout(Duration.ofMillis(500)).build()) {
                assertThatThrownBy(() -> p.claim(List.of(request(job(), Instant.now(), "a", false))))
                        .isInstanceOf(LockException.class)
                        .hasMessageContaining("127.0.0.1:" + own.port())
                        .hasMessageContaining("cannot reach the server")
                        .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
            }
        }
    }

    @Test
    void aWrongPasswordFailsAsAuthenticationWithoutShowingThePassword() {
        try (LocalRedisServer own = LocalRedisServer.start("--requirepass", "right-one");
             RedisLockProvider p = RedisLockProvider.builder().uri("redis://:wrong-one@127.0.0.1:" + own.port()).build()) {
            assertThatThrownBy(p::ping)
                    .isInstanceOf(LockException.class)
                    .hasMessageContaining("authentication failed")
                    .satisfies(e -> assertThat(e.getMessage()).doesNotContain("wrong-one"));
        }
        try (LocalRedisServer own = LocalRedisServer.start("--requirepass", "right-one");
             RedisLockProvider p = RedisLockProvider.builder().uri("redis://127.0.0.1:" + own.port()).password("right-one").build()) {
            p.ping();
        }
    }

    // ---------------------------------------------------------------- policies

    private static ClaimRequest request(String job, Instant slot, String token, Duration lease, ClaimRequest.Mode mode,
            boolean replace) {
        return new ClaimRequest(new Lease(job, slot, token, lease, true), "w-" + token, GRACE, mode, replace);
    }

    @Test
    void replaceRevokesTheRunningLeaseSoItsRenewalAndOutcomeAreRefused() {
        String job = job();
        Instant now = serverNow();
        ClaimRequest old = request(job, now.minusSeconds(2), "old", LEASE, ClaimRequest.Mode.CLAIM, true);
        ClaimResult first = provider.claim(List.of(old)).get(0);
        ClaimRequest next = request(job, now.minusSeconds(1), "new", LEASE, ClaimRequest.Mode.CLAIM, true);
        ClaimResult second = provider.claim(List.of(next)).get(0);

        assertThat(second.status()).isEqualTo(Status.CLAIMED);
        assertThat(second.fencingToken()).isGreaterThan(first.fencingToken());
        assertThat(raw.get(provider.keys().lease(next.lease()))).isEqualTo("new");
        // The replaced run left the running index at once: no peer will ever recover it.
        assertThat(raw.zscore(provider.keys().running(job), Long.toString(now.minusSeconds(2).toEpochMilli()))).isNull();
        assertThat(raw.zscore(provider.keys().running(job), Long.toString(now.minusSeconds(1).toEpochMilli()))).isNotNull();
        assertThat(provider.renew(List.of(old.lease()))).containsExactly(false);
        assertThat(provider.complete(old.lease(), Outcome.SUCCEEDED)).isFalse();
        assertThat(raw.hget(provider.keys().slot(job, now.minusSeconds(2).toEpochMilli()), "state")).isEqualTo("replaced");
        assertThat(provider.renew(List.of(next.lease()))).containsExactly(true);
    }

    @Test
    void aRunWhoseLeaseRanOutIsRecoveredOnceUnderAHigherFence() {
        String job = job();
        Instant slot = serverNow().minusMillis(5);
        Duration shortLease = Duration.ofMillis(300);
        ClaimRequest dead = request(job, slot, "dead", shortLease, ClaimRequest.Mode.CLAIM, false);
        ClaimResult claimed = provider.claim(List.of(dead)).get(0);
        long deadFence = claimed.fencingToken();
        // Every answer tells when the earliest run in flight loses its lease unless renewed.
        assertThat(claimed.runningUntilMillis()).isBetween(claimed.serverTimeMillis(), claimed.serverTimeMillis() + 300);
        RunsInFlight alive = provider.runsInFlight(List.of(job)).get(0);
        assertThat(alive.expired()).isEmpty(); // its lease is still alive
        assertThat(alive.nextLeaseEndMillis()).isEqualTo(claimed.runningUntilMillis());

        await().atMost(Duration.ofSeconds(5)).until(() -> !expired(job).isEmpty());
        assertThat(provider.runsInFlight(List.of(job))).containsExactly(new RunsInFlight(job, List.of(slot), 0));
        List<ClaimResult> races = provider.claim(List.of(
                request(job, slot, "r1", LEASE, ClaimRequest.Mode.RECOVER, false),
                request(job, slot, "r2", LEASE, ClaimRequest.Mode.RECOVER, false)));

        assertThat(races).extracting(ClaimResult::status).containsExactly(Status.CLAIMED, Status.TAKEN);
        assertThat(races.get(0).fencingToken()).isGreaterThan(deadFence);
        assertThat(races.get(0).runningUntilMillis()).isGreaterThan(races.get(0).serverTimeMillis() + LEASE.toMillis() - 100);
        assertThat(expired(job)).isEmpty();
        // The dead run, should it come back, can neither renew nor write its outcome over the new one.
        assertThat(provider.renew(List.of(dead.lease()))).containsExactly(false);
        assertThat(provider.complete(dead.lease(), Outcome.SUCCEEDED)).isFalse();
        Lease recovered = new Lease(job, slot, "r1", LEASE, true);
        assertThat(provider.complete(recovered, Outcome.SUCCEEDED)).isTrue();
        assertThat(raw.hget(provider.keys().slot(job, slot.toEpochMilli()), "outcome")).isEqualTo("succeeded");
        assertThat(raw.hget(provider.keys().slot(job, slot.toEpochMilli()), "recoveries")).isEqualTo("1");
    }

    @Test
    void aRunWhoseLeaseRanOutIsAbandonedByExactlyOneRequest() {
        String job = job();
        Instant slot = serverNow().minusMillis(5);
        ClaimRequest dead = request(job, slot, "dead", Duration.ofMillis(200), ClaimRequest.Mode.CLAIM, false);
        provider.claim(List.of(dead));
        await().atMost(Duration.ofSeconds(5)).until(() -> !expired(job).isEmpty());

        List<ClaimResult> races = provider.claim(List.of(
                request(job, slot, "a1", LEASE, ClaimRequest.Mode.ABANDON, false),
                request(job, slot, "a2", LEASE, ClaimRequest.Mode.ABANDON, false)));

        assertThat(races).extracting(ClaimResult::status).containsExactly(Status.ABANDONED, Status.TAKEN);
        assertThat(raw.hget(provider.keys().slot(job, slot.toEpochMilli()), "state")).isEqualTo("abandoned");
        assertThat(provider.complete(dead.lease(), Outcome.SUCCEEDED)).isFalse();
        assertThat(provider.runsInFlight(List.of(job))).containsExactly(new RunsInFlight(job, List.of(), 0));
        assertThat(races.get(1).runningUntilMillis()).isZero();
    }

    private static List<Instant> expired(String job) {
        return provider.runsInFlight(List.of(job)).get(0).expired();
    }

    @Test
    void aLiveRunIsNeitherStaleNorRecoverable() {
        String job = job();
        Instant slot = serverNow().minusMillis(5);
        provider.claim(List.of(request(job, slot, "alive", LEASE, ClaimRequest.Mode.CLAIM, false)));
        assertThat(provider.claim(List.of(request(job, slot, "thief", LEASE, ClaimRequest.Mode.RECOVER, false))))
                .extracting(ClaimResult::status).containsExactly(Status.TAKEN);
        assertThat(raw.hget(provider.keys().slot(job, slot.toEpochMilli()), "token")).isEqualTo("alive");
    }

    @Test
    void catchUpClaimsAPastSlotWaitsForTheExclusiveLeaseAndMovesTheLastSlot() {
        String job = job();
        Instant now = serverNow();
        Instant old = now.minus(GRACE).minusSeconds(30);
        Instant older = old.minusSeconds(30);
        Instant oldest = older.minusSeconds(30);
        assertThat(provider.lastSlots(List.of(job))).isEmpty();

        ClaimRequest catchUp = request(job, older, "c", LEASE, ClaimRequest.Mode.CATCH_UP, false);
        assertThat(provider.claim(List.of(catchUp)).get(0).status()).isEqualTo(Status.CLAIMED);
        assertThat(provider.claim(List.of(request(job, old, "d", LEASE, ClaimRequest.Mode.CATCH_UP, false))))
                .extracting(ClaimResult::status).containsExactly(Status.BUSY);
        assertThat(provider.claim(List.of(request(job, old, "e", LEASE, ClaimRequest.Mode.MISS_ONLY, false))))
                .extracting(ClaimResult::status).containsExactly(Status.MISSED);
        assertThat(provider.lastSlots(List.of(job, job() + "-unknown"))).containsExactly(java.util.Map.entry(job, old));
        assertThat(raw.pttl(provider.keys().marks(job))).isGreaterThan(Duration.ofDays(6).toMillis());
        // A slot older than one that started never starts: slots start in order.
        assertThat(provider.claim(List.of(request(job, oldest, "f", LEASE, ClaimRequest.Mode.CATCH_UP, false))))
                .extracting(ClaimResult::status).containsExactly(Status.SUPERSEDED);
    }

    @Test
    void aBatchLargerThanOneScriptCallAnswersEveryRequestInOrder() {
        Instant slot = serverNow().minusMillis(5);
        List<String> jobs = new java.util.ArrayList<>();
        for (int i = 0; i < 3 * RedisLockProvider.PER_CALL + 7; i++) {
            jobs.add(job());
        }
        // Every third slot is already taken by someone else; the rest are ours to win.
        List<ClaimRequest> foreign = new java.util.ArrayList<>();
        for (int i = 0; i < jobs.size(); i += 3) {
            foreign.add(request(jobs.get(i), slot, "other-" + i, false));
        }
        provider.claim(foreign);
        List<ClaimRequest> mine = new java.util.ArrayList<>();
        for (int i = 0; i < jobs.size(); i++) {
            mine.add(request(jobs.get(i), slot, "mine-" + i, false));
        }
        List<ClaimResult> results = provider.claim(mine);
        assertThat(results).hasSize(jobs.size());
        for (int i = 0; i < jobs.size(); i++) {
            assertThat(results.get(i).status()).as("request %d", i).isEqualTo(i % 3 == 0 ? Status.TAKEN : Status.CLAIMED);
            assertThat(raw.hget(provider.keys().slot(jobs.get(i), slot.toEpochMilli()), "token"))
                    .isEqualTo(i % 3 == 0 ? "other-" + i : "mine-" + i);
        }
        List<io.lockstep.scheduler.lock.Completion> completions = new java.util.ArrayList<>();
        for (int i = 0; i < jobs.size(); i++) {
            completions.add(new io.lockstep.scheduler.lock.Completion(mine.get(i).lease(), Outcome.SUCCEEDED));
        }
        List<Boolean> owned = provider.complete(completions);
        for (int i = 0; i < jobs.size(); i++) {
            assertThat(owned.get(i)).as("completion %d", i).isEqualTo(i % 3 != 0);
            assertThat(raw.hget(provider.keys().slot(jobs.get(i), slot.toEpochMilli()), "state")).isEqualTo(i % 3 == 0 ? "running" : "done");
        }
    }
}
