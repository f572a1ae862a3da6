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
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.params.ScanParams;

/** The Redis redis.provider() against a real redis-server: claims, owner checks, records and failures. */
class RedisLockProviderTest {

    private static final Duration LEASE = Duration.ofSeconds(10);
    private static final Duration GRACE = Duration.ofSeconds(10);

    @RegisterExtension
    static final RedisFixture redis = RedisFixture.of(b -> b);

    private static ClaimRequest request(String job, Instant slot, String token, boolean exclusive) {
        return new ClaimRequest(new Lease(job, slot, token, LEASE, exclusive), "w-" + token, GRACE, false);
    }

    /**
     * A group's marks are a hashtable however few their fields: as a listpack (Redis's encoding for
     * a hash within hash-max-listpack-entries fields, 512 by default; a ziplist on Redis 6.2), each
     * claim's read and write of its job's fields scanned every field of the group's jobs. Fails
     * without the long {@code ~encoding} field claim.lua writes.
     */
    @Test
    void aGroupsMarksAreAHashtableHoweverFewTheirFields() {
        String job = RedisFixture.job();
        assertThat(redis.provider().claim(List.of(request(job, redis.serverNow().minusSeconds(1), "a", true))).get(0).status())
                .isEqualTo(Status.CLAIMED);
        String marks = redis.provider().keys().marks(job);
        assertThat(redis.raw().hlen(marks)).as("a few fields, far within the listpack's limit").isLessThan(64);
        assertThat(redis.raw().objectEncoding(marks)).isEqualTo("hashtable");
    }

    @Test
    void exactlyOneOfTwoClaimsOfTheSameSlotWins() {
        String job = RedisFixture.job();
        Instant slot = redis.serverNow().minusMillis(5);
        List<ClaimResult> results = redis.provider().claim(List.of(request(job, slot, "a", false), request(job, slot, "b", false)));
        assertThat(results).extracting(ClaimResult::status).containsExactly(Status.CLAIMED, Status.TAKEN);
        assertThat(results.get(0).fencingToken()).isPositive();
    }

    /**
     * Claims answered by several script calls of one pipeline all carry the latest time Redis read in
     * it: their replies arrive only after the last call ran, so that time bounds Redis's clock at
     * their arrival, and a run claimed ahead starts by it (a call's own, earlier time would start its
     * run up to the pipeline's length late). 600 jobs in 32 groups: more than one call.
     */
    @Test
    void claimsOfOnePipelineCarryTheLatestTimeRedisReadInIt() {
        Instant slot = redis.serverNow().plusSeconds(2);
        List<ClaimRequest> claims = new java.util.ArrayList<>();
        for (int i = 0; i < 600; i++) {
            claims.add(new ClaimRequest(new Lease(RedisFixture.job(), slot, "t" + i, LEASE, true), "w", GRACE, ClaimRequest.Mode.CLAIM,
                    false, false, Duration.ofSeconds(10)));
        }
        long before = redis.provider().serverTimeMillis();
        List<ClaimResult> results = redis.provider().claim(claims);
        long after = redis.provider().serverTimeMillis();
        assertThat(results).extracting(ClaimResult::status).containsOnly(Status.CLAIMED);
        assertThat(results).extracting(ClaimResult::serverTimeMillis).as("one time for the batch").containsOnly(results.get(0).serverTimeMillis());
        assertThat(results.get(0).serverTimeMillis()).isBetween(before, after);
    }

    @Test
    void fencingTokensStrictlyIncreasePerJob() {
        String job = RedisFixture.job();
        Instant now = redis.serverNow();
        long first = redis.provider().claim(List.of(request(job, now.minusMillis(20), "a", false))).get(0).fencingToken();
        long second = redis.provider().claim(List.of(request(job, now.minusMillis(10), "b", false))).get(0).fencingToken();
        assertThat(second).isGreaterThan(first);
    }

    @Test
    void aSlotTheServerClockHasNotReachedIsNotClaimed() {
        String job = RedisFixture.job();
        Instant slot = redis.serverNow().plusSeconds(5);
        ClaimResult result = redis.provider().claim(List.of(request(job, slot, "a", false))).get(0);
        assertThat(result.status()).isEqualTo(Status.EARLY);
        assertThat(redis.raw().exists(redis.provider().keys().slot(job, slot.toEpochMilli()))).isFalse();
        assertThat(redis.raw().hexists(redis.provider().keys().marks(job), RedisKeys.markField(job) + "fence")).isFalse();
    }

    @Test
    void aSlotPastItsGraceIsRecordedMissedExactlyOnce() {
        String job = RedisFixture.job();
        Instant slot = redis.serverNow().minus(GRACE).minusSeconds(1);
        List<ClaimResult> results = redis.provider().claim(List.of(request(job, slot, "a", false), request(job, slot, "b", false)));
        assertThat(results).extracting(ClaimResult::status).containsExactly(Status.MISSED, Status.TAKEN);
        assertThat(redis.raw().hget(redis.provider().keys().slot(job, slot.toEpochMilli()), "state")).isEqualTo("missed");
    }

    @Test
    void aFinishedSlotStaysDoneAndCannotBeClaimedAgain() {
        String job = RedisFixture.job();
        Instant slot = redis.serverNow().minusMillis(5);
        ClaimRequest first = request(job, slot, "a", false);
        assertThat(redis.provider().claim(List.of(first)).get(0).status()).isEqualTo(Status.CLAIMED);
        assertThat(redis.provider().complete(first.lease(), Outcome.SUCCEEDED)).isTrue();

        String record = redis.provider().keys().slot(job, slot.toEpochMilli());
        assertThat(redis.raw().hget(record, "state")).isEqualTo("done");
        assertThat(redis.raw().hget(record, "outcome")).isEqualTo("succeeded");
        assertThat(redis.raw().pttl(record)).isPositive();
        assertThat(RedisFixture.leaseOwner(redis.raw(), redis.provider().keys(), first.lease())).isNull();
        assertThat(redis.provider().claim(List.of(request(job, slot, "late", false))).get(0).status()).isEqualTo(Status.TAKEN);
    }

    @Test
    void repeatingALostClaimReplyWinsAgainWithTheSameFence() {
        String job = RedisFixture.job();
        Instant slot = redis.serverNow().minusMillis(5);
        ClaimResult first = redis.provider().claim(List.of(request(job, slot, "a", false))).get(0);
        ClaimResult again = redis.provider().claim(List.of(request(job, slot, "a", false))).get(0);
        assertThat(again.status()).isEqualTo(Status.CLAIMED);
        assertThat(again.fencingToken()).isEqualTo(first.fencingToken());
    }

    @Test
    void anExclusiveLeaseHeldByARunningSlotSkipsTheNextSlot() {
        String job = RedisFixture.job();
        Instant now = redis.serverNow();
        assertThat(redis.provider().claim(List.of(request(job, now.minusSeconds(2), "a", true))).get(0).status())
                .isEqualTo(Status.CLAIMED);
        ClaimResult next = redis.provider().claim(List.of(request(job, now.minusSeconds(1), "b", true))).get(0);
        assertThat(next.status()).isEqualTo(Status.SKIPPED);
        assertThat(redis.raw().hget(redis.provider().keys().slot(job, now.minusSeconds(1).toEpochMilli()), "state")).isEqualTo("skipped");
    }

    @Test
    void aForeignTokenCanNeitherRenewNorReleaseAndLeavesTheLeaseUntouched() {
        for (boolean exclusive : List.of(true, false)) { // an exclusive job's lease in its marks, an allow run's own key
            String job = RedisFixture.job();
            Instant slot = redis.serverNow().minusMillis(5);
            ClaimRequest mine = request(job, slot, "owner-token", exclusive);
            redis.provider().claim(List.of(mine));
            RedisKeys keys = redis.provider().keys();
            // Shortened to 5 s, so that a foreign renewal to LEASE (10 s) would be visible.
            RedisFixture.giveLease(redis.raw(), keys, mine.lease(), "owner-token", 5_000);
            long before = RedisFixture.leaseEnd(redis.raw(), keys, mine.lease());

            Lease foreign = new Lease(job, slot, "foreign-token", LEASE, exclusive);
            assertThat(redis.provider().renew(List.of(foreign))).containsExactly(false);
            assertThat(redis.provider().complete(foreign, Outcome.SUCCEEDED)).isFalse();

            assertThat(RedisFixture.leaseOwner(redis.raw(), keys, mine.lease())).as("exclusive: %s", exclusive).isEqualTo("owner-token");
            assertThat(RedisFixture.leaseEnd(redis.raw(), keys, mine.lease())).as("exclusive: %s", exclusive)
                    .isCloseTo(before, org.assertj.core.data.Offset.offset(2L));
            assertThat(redis.raw().hget(keys.slot(job, slot.toEpochMilli()), "state")).isEqualTo("running");

            assertThat(redis.provider().renew(List.of(mine.lease()))).containsExactly(true);
            assertThat(RedisFixture.leaseEnd(redis.raw(), keys, mine.lease())).as("exclusive: %s", exclusive).isGreaterThan(before + 1_000);
        }
    }

    @Test
    void aRenewalKeepsTheSlotRecordAliveAtLeastTwoLeases() {
        // The documented record ttl (GUARANTEES 3, PRODUCTION-REDIS): misfireGrace + max(2 min, 2 x lease),
        // written out here rather than read from ClaimRequest.recordTtl, for both sides of the max.
        for (Duration lease : List.of(LEASE, Duration.ofSeconds(90))) {
            long documented = GRACE.toMillis() + Math.max(Duration.ofMinutes(2).toMillis(), 2 * lease.toMillis());
            String job = RedisFixture.job();
            Instant slot = redis.serverNow().minusMillis(5);
            ClaimRequest r = new ClaimRequest(new Lease(job, slot, "a", lease, false), "w-a", GRACE, false);
            assertThat(redis.provider().claim(List.of(r)).get(0).status()).isEqualTo(Status.CLAIMED);
            String record = redis.provider().keys().slot(job, slot.toEpochMilli());
            assertThat(redis.raw().pttl(record)).as("the claimed record, lease %s", lease).isBetween(documented - 5_000, documented);

            // A renewal never shortens a record that has longer to live ...
            assertThat(redis.provider().renew(List.of(r.lease()))).containsExactly(true);
            assertThat(redis.raw().pttl(record)).as("after a renewal, lease %s", lease).isBetween(documented - 5_000, documented);
            // ... and keeps one whose own ttl ran down (a long run) alive two leases from the renewal.
            redis.raw().pexpire(record, 100);
            assertThat(redis.provider().renew(List.of(r.lease()))).containsExactly(true);
            long twoLeases = 2 * lease.toMillis();
            assertThat(redis.raw().pttl(record)).as("renewed near its end, lease %s", lease).isBetween(twoLeases - 5_000, twoLeases);

            // The done marker keeps the record's ttl: it is turned into the marker, not written anew.
            assertThat(redis.provider().complete(r.lease(), Outcome.SUCCEEDED)).isTrue();
            assertThat(redis.raw().hget(record, "state")).isEqualTo("done");
            assertThat(redis.raw().pttl(record)).as("the done marker, lease %s", lease).isBetween(twoLeases - 5_000, twoLeases);

            // A run that finishes without a renewal leaves its done marker for the documented ttl.
            Instant next = slot.plusMillis(1);
            ClaimRequest quick = new ClaimRequest(new Lease(job, next, "b", lease, false), "w-b", GRACE, false);
            assertThat(redis.provider().claim(List.of(quick)).get(0).status()).isEqualTo(Status.CLAIMED);
            assertThat(redis.provider().complete(quick.lease(), Outcome.SUCCEEDED)).isTrue();
            assertThat(redis.raw().pttl(redis.provider().keys().slot(job, next.toEpochMilli())))
                    .as("the done marker of a run never renewed, lease %s", lease).isBetween(documented - 5_000, documented);
        }
    }

    @Test
    void renewalsOfABatchAnswerPerLease() {
        String job = RedisFixture.job();
        Instant now = redis.serverNow();
        ClaimRequest a = request(job, now.minusMillis(30), "a", false);
        ClaimRequest b = request(job, now.minusMillis(20), "b", false);
        redis.provider().claim(List.of(a, b));
        RedisFixture.dropLease(redis.raw(), redis.provider().keys(), b.lease()); // b's lease expired
        assertThat(redis.provider().renew(List.of(a.lease(), b.lease()))).containsExactly(true, false);
    }

    @Test
    void everyKeyHasATtl() {
        String job = RedisFixture.job();
        Instant slot = redis.serverNow().minusMillis(5);
        ClaimRequest r = request(job, slot, "a", true);
        redis.provider().claim(List.of(r));
        List<String> keys = new java.util.ArrayList<>();
        ScanParams match = new ScanParams().match(redis.provider().keys().slotPattern(job).replace(":slot:*", ":*")).count(1000);
        String cursor = "0";
        do { // every page: other tests' keys share the server
            var page = redis.raw().scan(cursor, match);
            keys.addAll(page.getResult());
            cursor = page.getCursor();
        } while (!cursor.equals("0"));
        // (The job's lease is in its group's marks: layout 3 has no lease key for an exclusive job.)
        assertThat(keys).containsExactlyInAnyOrder(redis.provider().keys().slot(job, slot.toEpochMilli()),
                redis.provider().keys().running(job));
        keys.add(redis.provider().keys().marks(job)); // the group's marks: the job's fields in a hash of its group
        for (String key : keys) {
            assertThat(redis.raw().pttl(key)).as(key).isPositive();
        }
    }

    @Test
    void scriptsAreSentAgainWhenARestartedServerForgotThem() {
        try (LocalRedisServer own = LocalRedisServer.start();
             RedisLockProvider p = RedisLockProvider.builder().uri(own.uri()).build()) {
            String job = RedisFixture.job();
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
                assertThatThrownBy(() -> p.claim(List.of(request(RedisFixture.job(), Instant.now(), "a", false))))
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

    /**
     * A rollout that changes a job's overlap runs exclusive and allow claims of it side by side. An
     * exclusive job's lease is its marks' owner and until (lease.lua), which an allow run's claim
     * also writes for peers: it must neither move a lease another token holds (cutting it short, or
     * stretching it) nor revive one that is over.
     */
    @Test
    void anAllowRunsClaimNeitherMovesNorRevivesAnExclusiveLease() {
        String job = RedisFixture.job();
        RedisKeys keys = redis.provider().keys();
        Instant now = redis.serverNow();
        ClaimRequest skip = request(job, now.minusSeconds(3), "skip-run", true);
        assertThat(redis.provider().claim(List.of(skip)).get(0).status()).isEqualTo(Status.CLAIMED);
        long held = RedisFixture.leaseEnd(redis.raw(), keys, skip.lease());

        ClaimRequest allow = new ClaimRequest(new Lease(job, now.minusSeconds(2), "allow-run", Duration.ofSeconds(1), false),
                "w-allow", GRACE, false);
        assertThat(redis.provider().claim(List.of(allow)).get(0).status()).isEqualTo(Status.CLAIMED);
        assertThat(RedisFixture.leaseOwner(redis.raw(), keys, skip.lease())).isEqualTo("skip-run");
        assertThat(RedisFixture.leaseEnd(redis.raw(), keys, skip.lease())).as("not cut short to the allow run's 1 s").isEqualTo(held);

        // The exclusive run's worker died: its lease runs out. An allow claim after that must not bring it back.
        RedisFixture.giveLease(redis.raw(), keys, skip.lease(), "skip-run", 1);
        await().until(() -> RedisFixture.leaseOwner(redis.raw(), keys, skip.lease()) == null);
        ClaimRequest later = new ClaimRequest(new Lease(job, now.minusSeconds(1), "allow-later", LEASE, false), "w-allow", GRACE, false);
        assertThat(redis.provider().claim(List.of(later)).get(0).status()).isEqualTo(Status.CLAIMED);
        assertThat(RedisFixture.leaseOwner(redis.raw(), keys, skip.lease())).as("the dead run's lease, revived").isNull();
        assertThat(redis.provider().renew(List.of(skip.lease()))).as("the dead run's renewal").containsExactly(false);
    }

    /** An exclusive run outliving a week in a group that decides nothing keeps its lease: its renewals keep the marks. */
    @Test
    void anExclusiveRunsRenewalKeepsItsGroupsMarksAlive() {
        String job = RedisFixture.job();
        ClaimRequest run = request(job, redis.serverNow().minusMillis(5), "long-run", true);
        assertThat(redis.provider().claim(List.of(run)).get(0).status()).isEqualTo(Status.CLAIMED);
        String marks = redis.provider().keys().marks(job);
        redis.raw().pexpire(marks, 1_000); // the marks' 7 days nearly over, nothing else decided in the group
        assertThat(redis.provider().renew(List.of(run.lease()))).containsExactly(true);
        assertThat(redis.raw().pttl(marks)).isGreaterThanOrEqualTo(LEASE.toMillis());
    }

    @Test
    void aRenewalThatCrossesItsOwnRunsCompletionIsNotALoss() {
        String job = RedisFixture.job();
        ClaimRequest mine = request(job, redis.serverNow().minusMillis(5), "done-token", LEASE, ClaimRequest.Mode.CLAIM, false);
        assertThat(redis.provider().claim(List.of(mine)).get(0).status()).isEqualTo(Status.CLAIMED);
        assertThat(redis.provider().complete(mine.lease(), Outcome.SUCCEEDED)).isTrue();
        // The watchdog sent this before the outcome landed; Redis ran it after.
        assertThat(redis.provider().renew(List.of(mine.lease()))).containsExactly(true);
        assertThat(RedisFixture.leaseOwner(redis.raw(), redis.provider().keys(), mine.lease())).isNull(); // and it extended nothing
        // Another token is still refused.
        assertThat(redis.provider().renew(List.of(new Lease(job, mine.lease().slot(), "other", LEASE, true)))).containsExactly(false);
    }

    @Test
    void replaceRevokesTheRunningLeaseSoItsRenewalAndOutcomeAreRefused() {
        String job = RedisFixture.job();
        Instant now = redis.serverNow();
        ClaimRequest old = request(job, now.minusSeconds(2), "old", LEASE, ClaimRequest.Mode.CLAIM, true);
        ClaimResult first = redis.provider().claim(List.of(old)).get(0);
        ClaimRequest next = request(job, now.minusSeconds(1), "new", LEASE, ClaimRequest.Mode.CLAIM, true);
        ClaimResult second = redis.provider().claim(List.of(next)).get(0);

        assertThat(second.status()).isEqualTo(Status.CLAIMED);
        assertThat(second.fencingToken()).isGreaterThan(first.fencingToken());
        assertThat(RedisFixture.leaseOwner(redis.raw(), redis.provider().keys(), next.lease())).isEqualTo("new");
        // The replaced run left the running index at once: no peer will ever recover it.
        assertThat(redis.raw().zscore(redis.provider().keys().running(job), Long.toString(now.minusSeconds(2).toEpochMilli()))).isNull();
        assertThat(redis.raw().zscore(redis.provider().keys().running(job), Long.toString(now.minusSeconds(1).toEpochMilli()))).isNotNull();
        assertThat(redis.provider().renew(List.of(old.lease()))).containsExactly(false);
        assertThat(redis.provider().complete(old.lease(), Outcome.SUCCEEDED)).isFalse();
        assertThat(redis.raw().hget(redis.provider().keys().slot(job, now.minusSeconds(2).toEpochMilli()), "state")).isEqualTo("replaced");
        assertThat(redis.provider().renew(List.of(next.lease()))).containsExactly(true);
    }

    @Test
    void aRunWhoseLeaseRanOutIsRecoveredOnceUnderAHigherFence() {
        String job = RedisFixture.job();
        Instant slot = redis.serverNow().minusMillis(5);
        Duration shortLease = Duration.ofMillis(300);
        ClaimRequest dead = request(job, slot, "dead", shortLease, ClaimRequest.Mode.CLAIM, false);
        ClaimResult claimed = redis.provider().claim(List.of(dead)).get(0);
        long deadFence = claimed.fencingToken();
        // Every answer tells when the earliest run in flight loses its lease unless renewed.
        assertThat(claimed.runningUntilMillis()).isBetween(claimed.serverTimeMillis(), claimed.serverTimeMillis() + 300);
        RunsInFlight alive = redis.provider().runsInFlight(List.of(job)).get(0);
        assertThat(alive.expired()).isEmpty(); // its lease is still alive
        assertThat(alive.nextLeaseEndMillis()).isEqualTo(claimed.runningUntilMillis());

        await().atMost(Duration.ofSeconds(5)).until(() -> !expired(job).isEmpty());
        assertThat(redis.provider().runsInFlight(List.of(job))).containsExactly(new RunsInFlight(job, List.of(slot), 0));
        List<ClaimResult> races = redis.provider().claim(List.of(
                request(job, slot, "r1", LEASE, ClaimRequest.Mode.RECOVER, false),
                request(job, slot, "r2", LEASE, ClaimRequest.Mode.RECOVER, false)));

        assertThat(races).extracting(ClaimResult::status).containsExactly(Status.CLAIMED, Status.TAKEN);
        assertThat(races.get(0).fencingToken()).isGreaterThan(deadFence);
        assertThat(races.get(0).runningUntilMillis()).isGreaterThan(races.get(0).serverTimeMillis() + LEASE.toMillis() - 100);
        assertThat(expired(job)).isEmpty();
        // The dead run, should it come back, can neither renew nor write its outcome over the new one.
        assertThat(redis.provider().renew(List.of(dead.lease()))).containsExactly(false);
        assertThat(redis.provider().complete(dead.lease(), Outcome.SUCCEEDED)).isFalse();
        Lease recovered = new Lease(job, slot, "r1", LEASE, true);
        assertThat(redis.provider().complete(recovered, Outcome.SUCCEEDED)).isTrue();
        assertThat(redis.raw().hget(redis.provider().keys().slot(job, slot.toEpochMilli()), "outcome")).isEqualTo("succeeded");
        assertThat(redis.raw().hget(redis.provider().keys().slot(job, slot.toEpochMilli()), "recoveries")).isEqualTo("1");
    }

    @Test
    void aRunWhoseLeaseRanOutIsAbandonedByExactlyOneRequest() {
        String job = RedisFixture.job();
        Instant slot = redis.serverNow().minusMillis(5);
        ClaimRequest dead = request(job, slot, "dead", Duration.ofMillis(200), ClaimRequest.Mode.CLAIM, false);
        redis.provider().claim(List.of(dead));
        await().atMost(Duration.ofSeconds(5)).until(() -> !expired(job).isEmpty());

        List<ClaimResult> races = redis.provider().claim(List.of(
                request(job, slot, "a1", LEASE, ClaimRequest.Mode.ABANDON, false),
                request(job, slot, "a2", LEASE, ClaimRequest.Mode.ABANDON, false)));

        assertThat(races).extracting(ClaimResult::status).containsExactly(Status.ABANDONED, Status.TAKEN);
        assertThat(redis.raw().hget(redis.provider().keys().slot(job, slot.toEpochMilli()), "state")).isEqualTo("abandoned");
        assertThat(redis.provider().complete(dead.lease(), Outcome.SUCCEEDED)).isFalse();
        assertThat(redis.provider().runsInFlight(List.of(job))).containsExactly(new RunsInFlight(job, List.of(), 0));
        assertThat(races.get(1).runningUntilMillis()).isZero();
    }

    private static List<Instant> expired(String job) {
        return redis.provider().runsInFlight(List.of(job)).get(0).expired();
    }

    @Test
    void aLiveRunIsNeitherStaleNorRecoverable() {
        String job = RedisFixture.job();
        Instant slot = redis.serverNow().minusMillis(5);
        redis.provider().claim(List.of(request(job, slot, "alive", LEASE, ClaimRequest.Mode.CLAIM, false)));
        assertThat(redis.provider().claim(List.of(request(job, slot, "thief", LEASE, ClaimRequest.Mode.RECOVER, false))))
                .extracting(ClaimResult::status).containsExactly(Status.TAKEN);
        assertThat(redis.raw().hget(redis.provider().keys().slot(job, slot.toEpochMilli()), "token")).isEqualTo("alive");
    }

    @Test
    void catchUpClaimsAPastSlotWaitsForTheExclusiveLeaseAndMovesTheLastSlot() {
        String job = RedisFixture.job();
        Instant now = redis.serverNow();
        Instant old = now.minus(GRACE).minusSeconds(30);
        Instant older = old.minusSeconds(30);
        Instant oldest = older.minusSeconds(30);
        assertThat(redis.provider().lastSlots(List.of(job))).isEmpty();

        ClaimRequest catchUp = request(job, older, "c", LEASE, ClaimRequest.Mode.CATCH_UP, false);
        assertThat(redis.provider().claim(List.of(catchUp)).get(0).status()).isEqualTo(Status.CLAIMED);
        assertThat(redis.provider().claim(List.of(request(job, old, "d", LEASE, ClaimRequest.Mode.CATCH_UP, false))))
                .extracting(ClaimResult::status).containsExactly(Status.BUSY);
        assertThat(redis.provider().claim(List.of(request(job, old, "e", LEASE, ClaimRequest.Mode.MISS_ONLY, false))))
                .extracting(ClaimResult::status).containsExactly(Status.MISSED);
        assertThat(redis.provider().lastSlots(List.of(job, RedisFixture.job() + "-unknown"))).containsExactly(java.util.Map.entry(job, old));
        assertThat(redis.raw().pttl(redis.provider().keys().marks(job))).isGreaterThan(Duration.ofDays(6).toMillis());
        // A slot older than one that started never starts: slots start in order.
        assertThat(redis.provider().claim(List.of(request(job, oldest, "f", LEASE, ClaimRequest.Mode.CATCH_UP, false))))
                .extracting(ClaimResult::status).containsExactly(Status.SUPERSEDED);
    }

    @Test
    void aBatchLargerThanOneScriptCallAnswersEveryRequestInOrder() {
        Instant slot = redis.serverNow().minusMillis(5);
        List<String> jobs = new java.util.ArrayList<>();
        for (int i = 0; i < 3 * RedisLockProvider.PER_CALL + 7; i++) {
            jobs.add(RedisFixture.job());
        }
        // Every third slot is already taken by someone else; the rest are ours to win.
        List<ClaimRequest> foreign = new java.util.ArrayList<>();
        for (int i = 0; i < jobs.size(); i += 3) {
            foreign.add(request(jobs.get(i), slot, "other-" + i, false));
        }
        redis.provider().claim(foreign);
        List<ClaimRequest> mine = new java.util.ArrayList<>();
        for (int i = 0; i < jobs.size(); i++) {
            mine.add(request(jobs.get(i), slot, "mine-" + i, false));
        }
        List<ClaimResult> results = redis.provider().claim(mine);
        assertThat(results).hasSize(jobs.size());
        for (int i = 0; i < jobs.size(); i++) {
            assertThat(results.get(i).status()).as("request %d", i).isEqualTo(i % 3 == 0 ? Status.TAKEN : Status.CLAIMED);
            assertThat(redis.raw().hget(redis.provider().keys().slot(jobs.get(i), slot.toEpochMilli()), "token"))
                    .isEqualTo(i % 3 == 0 ? "other-" + i : "mine-" + i);
        }
        List<io.lockstep.scheduler.lock.Completion> completions = new java.util.ArrayList<>();
        for (int i = 0; i < jobs.size(); i++) {
            completions.add(new io.lockstep.scheduler.lock.Completion(mine.get(i).lease(), Outcome.SUCCEEDED));
        }
        List<Boolean> owned = redis.provider().complete(completions);
        for (int i = 0; i < jobs.size(); i++) {
            assertThat(owned.get(i)).as("completion %d", i).isEqualTo(i % 3 != 0);
            assertThat(redis.raw().hget(redis.provider().keys().slot(jobs.get(i), slot.toEpochMilli()), "state")).isEqualTo(i % 3 == 0 ? "running" : "done");
        }
    }

    /**
     * Review m6, in Redis ({@code inforce.lua}, with its periods shortened): a run of disabled
     * stamps is a period out of force once the job is enabled again; one with an enabled stamp in it
     * (a rollout) is not; a job stamped by nobody past the keep is forgotten, its marks dropped only
     * where it also decided nothing for as long.
     */
    @Test
    void disabledStampsMakeAPeriodOutOfForceAndAJobForgottenLosesItsMarksOnlyWhenIdle() {
        String job = RedisFixture.job();
        String mixed = RedisFixture.job();
        RedisInForce members = redis.provider().inForceStamps();
        // Disabled stamps more than the gap apart start a new run (from that stamp): the gap is long
        // enough, and the stamps close enough (every 20 ms), that a busy machine does not break the run.
        Duration gap = Duration.ofMillis(1_000);
        Duration keep = Duration.ofSeconds(60);
        long before = redis.serverNow().toEpochMilli();
        members.stampInForce(List.of(job, mixed), List.of(), false, gap, keep, false);
        long on = redis.serverNow().toEpochMilli(); // the stamp's time is between the two reads
        await().atMost(Duration.ofSeconds(5)).until(() -> redis.serverNow().toEpochMilli() > on + 2); // a disabled stamp in the same ms would be a rollout's
        // Disabled on every worker ('job'), disabled on some and enabled on others ('mixed'), until well past the gap.
        await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20)).until(() -> {
            members.stampInForce(List.of(mixed), List.of(job, mixed), false, gap, keep, false);
            return redis.serverNow().toEpochMilli() > on + 2 * gap.toMillis();
        });
        io.lockstep.scheduler.lock.InForce.Period current = redis.provider().inForce(List.of(job)).get(job).off().get(0);
        members.stampInForce(List.of(job, mixed), List.of(), false, gap, keep, false); // enabled again
        io.lockstep.scheduler.lock.InForce read = redis.provider().inForce(List.of(job)).get(job);
        assertThat(read.off()).as("the closed period: from the gap after its last enabled stamp").singleElement().satisfies(p -> {
            assertThat(p.from().toEpochMilli()).isBetween(before + gap.toMillis(), on + gap.toMillis());
            assertThat(p).isEqualTo(new io.lockstep.scheduler.lock.InForce.Period(p.from(), current.to()));
        });
        assertThat(redis.provider().inForce(List.of(mixed)).get(mixed).off()).as("enabled somewhere all along: owed").isEmpty();
        assertThat(redis.provider().inForce(List.of("never-stamped"))).isEmpty();

        // Stamped, then left unstamped past a short keep; it decides a slot just before the prune.
        members.stampInForce(List.of(job), List.of(), false, gap, keep, false);
        Instant stamped = redis.serverNow();
        Duration shortKeep = Duration.ofMillis(300);
        await().atMost(Duration.ofSeconds(5)).until(() -> redis.serverNow().isAfter(stamped.plus(shortKeep).plusMillis(20)));
        Instant slot = redis.serverNow().minusMillis(5);
        redis.provider().claim(List.of(new ClaimRequest(new Lease(job, slot, "a", LEASE, false), "w-a", GRACE, true))); // decided: missed
        assertThat(members.stampInForce(List.of(), List.of(), false, gap, shortKeep, true)).contains(job);
        assertThat(redis.raw().hexists(redis.provider().keys().marks(job), RedisKeys.markField(job) + "decided"))
                .as("forgotten, but it decided a slot within the keep: its marks stay (they guard its slots)").isTrue();
        // Stamped once more, then left alone past the keep, its decision too: forgotten with its marks.
        members.stampInForce(List.of(job), List.of(), false, gap, keep, false);
        Instant again = redis.serverNow();
        await().atMost(Duration.ofSeconds(10)).until(() -> members.stampInForce(List.of(), List.of(), false, gap, shortKeep, true).contains(job));
        assertThat(redis.serverNow()).isAfter(again.plus(shortKeep));
        assertThat(redis.provider().inForce(List.of(job))).as("forgotten").isEmpty();
        assertThat(redis.raw().hkeys(redis.provider().keys().marks(job))).as("its marks dropped")
                .noneMatch(f -> f.startsWith(RedisKeys.markField(job)));
    }

    /**
     * A worker's first stamp of its life starts a new run of disabled stamps, even within the gap:
     * the whole cluster may have been down just before it, and that time is owed (a re-review of m6).
     */
    @Test
    void theFirstStampOfAWorkersLifeBreaksTheRunOfDisabledStamps() {
        String job = RedisFixture.job();
        RedisInForce members = redis.provider().inForceStamps();
        Duration gap = Duration.ofMillis(500);
        Duration keep = Duration.ofSeconds(60);
        members.stampInForce(List.of(job), List.of(), false, gap, keep, false); // enabled, then disabled past the gap
        Instant on = redis.serverNow();
        await().atMost(Duration.ofSeconds(5)).until(() -> redis.serverNow().isAfter(on.plus(gap).plusMillis(20)));
        members.stampInForce(List.of(), List.of(job), false, gap, keep, false);
        Instant first = redis.provider().inForce(List.of(job)).get(job).off().get(0).from();
        members.stampInForce(List.of(), List.of(job), false, gap, keep, false); // the same run
        assertThat(redis.provider().inForce(List.of(job)).get(job).off()).singleElement()
                .satisfies(p -> assertThat(p.from()).isEqualTo(first));
        await().atMost(Duration.ofSeconds(5)).until(() -> redis.serverNow().isAfter(first.plusMillis(20)));
        members.stampInForce(List.of(), List.of(job), true, gap, keep, false); // a worker's restart, within the gap
        List<io.lockstep.scheduler.lock.InForce.Period> periods = redis.provider().inForce(List.of(job)).get(job).off();
        assertThat(periods).as("the run before closed, a new one started").hasSize(2);
        assertThat(periods.get(0).from()).isEqualTo(first);
        assertThat(periods.get(1).from()).isAfter(periods.get(0).to());
    }
}
