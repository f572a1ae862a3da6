package io.lockstep.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.ClaimRequest.Mode;
import io.lockstep.scheduler.lock.ClaimResult;
import io.lockstep.scheduler.lock.ClaimResult.Status;
import io.lockstep.scheduler.lock.Completion;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.LockProvider;
import io.lockstep.scheduler.lock.Outcome;
import io.lockstep.scheduler.lock.RunsInFlight;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The lock store's contract, run unchanged against every store: the same request sequences must
 * get the same answers from the in-memory store the scheduler's own tests run on and from the Lua
 * scripts on a real redis-server. A subclass names the store, its clock, and how to pause a job.
 * Both clocks are this machine's wall clock (Redis runs here), so "now" means the same for both.
 */
abstract class LockProviderContractTest {

    static final Duration LEASE = Duration.ofSeconds(10);
    static final Duration GRACE = Duration.ofSeconds(10);

    /** The store under test. */
    abstract LockProvider store();

    /** Pauses {@code job} as the operators' {@code pause} does. */
    abstract void pause(String job);

    abstract void resume(String job);

    Instant now() {
        return Instant.ofEpochMilli(store().serverTimeMillis());
    }

    static ClaimRequest claim(String job, Instant slot, String token) {
        return request(job, slot, token, LEASE, Mode.CLAIM, false, Duration.ZERO);
    }

    static ClaimRequest request(String job, Instant slot, String token, Duration lease, Mode mode, boolean replace, Duration ahead) {
        return new ClaimRequest(new Lease(job, slot, token, lease, true), "w-" + token, GRACE, mode, replace, false, ahead);
    }

    ClaimResult decide(ClaimRequest request) {
        return store().claim(List.of(request)).get(0);
    }

    Status status(ClaimRequest request) {
        return decide(request).status();
    }

    boolean complete(ClaimRequest request) {
        return store().complete(List.of(new Completion(request.lease(), Outcome.SUCCEEDED))).get(0);
    }

    boolean renew(ClaimRequest request) {
        return store().renew(List.of(request.lease())).get(0);
    }

    @Test
    void oneClaimWinsARepeatOfItGetsTheSameTokenAndTheOthersAreTaken() {
        String job = RedisFixture.job();
        Instant slot = now().minusMillis(5);
        ClaimResult won = decide(claim(job, slot, "a"));
        assertThat(won.status()).isEqualTo(Status.CLAIMED);
        assertThat(won.fencingToken()).isPositive();
        assertThat(status(claim(job, slot, "b"))).isEqualTo(Status.TAKEN);
        ClaimResult again = decide(claim(job, slot, "a"));
        assertThat(again.status()).isEqualTo(Status.CLAIMED);
        assertThat(again.fencingToken()).isEqualTo(won.fencingToken());
    }

    @Test
    void renewAndCompleteAreOwnerCheckedAndAFinishedSlotStaysTaken() {
        String job = RedisFixture.job();
        Instant slot = now().minusMillis(5);
        ClaimRequest mine = claim(job, slot, "a");
        ClaimRequest foreign = claim(job, slot, "b");
        assertThat(status(mine)).isEqualTo(Status.CLAIMED);
        assertThat(renew(mine)).isTrue();
        assertThat(renew(foreign)).isFalse();
        assertThat(complete(foreign)).isFalse();
        assertThat(complete(mine)).isTrue();
        assertThat(complete(mine)).as("a repeated completion (its reply was lost)").isTrue();
        assertThat(renew(mine)).as("a renewal that crossed its own completion").isTrue();
        assertThat(status(claim(job, slot, "c"))).isEqualTo(Status.TAKEN);
        assertThat(status(claim(job, slot.plusMillis(1), "d"))).as("the lease was given back").isEqualTo(Status.CLAIMED);
    }

    @Test
    void fencingTokensIncreaseSlotAfterSlot() {
        String job = RedisFixture.job();
        Instant now = now();
        ClaimRequest first = claim(job, now.minusMillis(20), "a");
        long one = decide(first).fencingToken();
        complete(first);
        long two = decide(claim(job, now.minusMillis(10), "b")).fencingToken();
        assertThat(two).isGreaterThan(one);
    }

    @Test
    void aSlotNotYetReachedIsEarlyAndNothingIsWritten() {
        String job = RedisFixture.job();
        Instant slot = now().plusSeconds(5);
        assertThat(status(claim(job, slot, "a"))).isEqualTo(Status.EARLY);
        assertThat(store().lastSlots(List.of(job))).isEmpty();
    }

    @Test
    void aSlotPastItsGraceIsMissedOnceAndAMissOnlyRequestRecordsAMiss() {
        String job = RedisFixture.job();
        Instant late = now().minus(GRACE).minusSeconds(1);
        assertThat(status(claim(job, late, "a"))).isEqualTo(Status.MISSED);
        assertThat(status(claim(job, late, "a"))).as("repeated").isEqualTo(Status.MISSED);
        assertThat(status(claim(job, late, "b"))).isEqualTo(Status.TAKEN);
        Instant due = now().minusMillis(5);
        assertThat(status(request(job, due, "c", LEASE, Mode.MISS_ONLY, false, Duration.ZERO))).isEqualTo(Status.MISSED);
        assertThat(status(claim(job, due, "d"))).isEqualTo(Status.TAKEN);
    }

    @Test
    void aSlotWhileTheJobsLeaseIsHeldIsSkippedOrWithReplaceRevokesTheRun() {
        String job = RedisFixture.job();
        Instant now = now();
        ClaimRequest running = claim(job, now.minusMillis(30), "a");
        assertThat(status(running)).isEqualTo(Status.CLAIMED);
        assertThat(status(claim(job, now.minusMillis(20), "b"))).isEqualTo(Status.SKIPPED);
        assertThat(status(claim(job, now.minusMillis(20), "b"))).as("repeated").isEqualTo(Status.SKIPPED);
        assertThat(status(request(job, now.minusMillis(15), "c", LEASE, Mode.CATCH_UP, false, Duration.ZERO))).isEqualTo(Status.BUSY);
        ClaimRequest replacing = request(job, now.minusMillis(10), "d", LEASE, Mode.CLAIM, true, Duration.ZERO);
        assertThat(status(replacing)).isEqualTo(Status.CLAIMED);
        assertThat(renew(running)).as("the replaced run's renewal").isFalse();
        assertThat(complete(running)).as("the replaced run's outcome").isFalse();
        assertThat(complete(replacing)).isTrue();
    }

    @Test
    void anOlderSlotAfterANewerOneStartedIsSupersededOnce() {
        String job = RedisFixture.job();
        Instant now = now();
        ClaimRequest newer = claim(job, now.minusMillis(10), "a");
        assertThat(status(newer)).isEqualTo(Status.CLAIMED);
        complete(newer);
        assertThat(status(claim(job, now.minusMillis(500), "b"))).isEqualTo(Status.SUPERSEDED);
        assertThat(status(claim(job, now.minusMillis(500), "b"))).as("repeated").isEqualTo(Status.SUPERSEDED);
        assertThat(status(claim(job, now.minusMillis(500), "c"))).isEqualTo(Status.TAKEN);
    }

    @Test
    void aSlotOlderThanItsRecordCanLiveIsStaleAndNeverDecided() {
        String job = RedisFixture.job();
        Instant now = now();
        Instant old = now.minus(ClaimRequest.recordTtl(LEASE, GRACE)).minusSeconds(5);
        ClaimRequest recent = claim(job, now.minusMillis(5), "a");
        assertThat(status(recent)).isEqualTo(Status.CLAIMED);
        assertThat(status(claim(job, old, "b"))).isEqualTo(Status.STALE);
        assertThat(status(claim(job, old, "b"))).as("nothing was written: stale again").isEqualTo(Status.STALE);

        assertThat(status(claim(job, old.plusMillis(1), "c"))).as("beside it, no record either").isEqualTo(Status.STALE);
        assertThat(status(request(job, old, "d", LEASE, Mode.CATCH_UP, false, Duration.ZERO))).as("not even caught up").isEqualTo(Status.STALE);
        String fresh = RedisFixture.job();
        assertThat(status(claim(fresh, old, "e"))).as("a job nothing is known of (its marks may have expired too)").isEqualTo(Status.STALE);
    }

    @Test
    void aRunThatLostItsLeaseIsRecoveredOnceUnderAHigherToken() {
        String job = RedisFixture.job();
        Instant slot = now().minusMillis(5);
        ClaimRequest dying = request(job, slot, "a", Duration.ofMillis(300), Mode.CLAIM, false, Duration.ZERO);
        ClaimResult first = decide(dying);
        assertThat(first.status()).isEqualTo(Status.CLAIMED);
        assertThat(status(request(job, slot, "b", LEASE, Mode.RECOVER, false, Duration.ZERO)))
                .as("while its lease lives").isEqualTo(Status.TAKEN);
        awaitExpired(job, slot);
        ClaimRequest rerun = request(job, slot, "b", LEASE, Mode.RECOVER, false, Duration.ZERO);
        ClaimResult recovered = decide(rerun);
        assertThat(recovered.status()).isEqualTo(Status.CLAIMED);
        assertThat(recovered.fencingToken()).isGreaterThan(first.fencingToken());
        assertThat(decide(rerun).fencingToken()).as("repeated").isEqualTo(recovered.fencingToken());
        assertThat(status(request(job, slot, "c", LEASE, Mode.RECOVER, false, Duration.ZERO))).isEqualTo(Status.TAKEN);
        assertThat(complete(dying)).as("the lost run's late outcome").isFalse();
        assertThat(complete(rerun)).isTrue();
    }

    @Test
    void aRunThatLostItsLeaseIsAbandonedByExactlyOneRequest() {
        String job = RedisFixture.job();
        Instant slot = now().minusMillis(5);
        ClaimRequest dying = request(job, slot, "a", Duration.ofMillis(300), Mode.CLAIM, false, Duration.ZERO);
        ClaimResult first = decide(dying);
        awaitExpired(job, slot);
        ClaimRequest abandon = request(job, slot, "b", LEASE, Mode.ABANDON, false, Duration.ZERO);
        ClaimResult abandoned = decide(abandon);
        assertThat(abandoned.status()).isEqualTo(Status.ABANDONED);
        assertThat(abandoned.fencingToken()).as("the abandoned run's token").isEqualTo(first.fencingToken());
        assertThat(status(abandon)).as("repeated").isEqualTo(Status.ABANDONED);
        assertThat(status(request(job, slot, "c", LEASE, Mode.ABANDON, false, Duration.ZERO))).isEqualTo(Status.TAKEN);
        assertThat(status(request(job, slot, "d", LEASE, Mode.RECOVER, false, Duration.ZERO))).isEqualTo(Status.TAKEN);
        assertThat(store().runsInFlight(List.of(job)).get(0).expired()).isEmpty();
    }

    @Test
    void aPausedJobsSlotIsReportedPausedOnceAndRunsAgainAfterTheResume() {
        String job = RedisFixture.job();
        Instant now = now();
        pause(job);
        assertThat(status(claim(job, now.minusMillis(20), "a"))).isEqualTo(Status.PAUSED);
        assertThat(status(claim(job, now.minusMillis(20), "a"))).as("repeated").isEqualTo(Status.PAUSED);
        assertThat(status(claim(job, now.minusMillis(20), "b"))).isEqualTo(Status.TAKEN);
        resume(job);
        assertThat(status(claim(job, now.minusMillis(10), "c"))).isEqualTo(Status.CLAIMED);
    }

    /**
     * Gap G3-b at the store: a claim made ahead decides only what it can win outright. Paused or
     * with the lease held, it answers EARLY and writes nothing, so the same slot is decided at its
     * time (after a resume, or once the lease is free); free, it is claimed ahead and starts at its slot.
     */
    @Test
    void aClaimAheadThatFindsTheJobPausedOrItsLeaseHeldIsEarlyAndTheSlotIsDecidedAtItsTime() {
        Duration ahead = Duration.ofSeconds(5);
        String job = RedisFixture.job();
        Instant slot = now().plusSeconds(2);
        pause(job);
        assertThat(status(request(job, slot, "a", LEASE, Mode.CLAIM, false, ahead))).isEqualTo(Status.EARLY);
        resume(job);
        ClaimResult won = decide(request(job, slot, "b", LEASE, Mode.CLAIM, false, ahead));
        assertThat(won.status()).as("nothing was written by the paused attempt").isEqualTo(Status.CLAIMED);
        assertThat(won.startDelayMillis(slot)).as("claimed ahead: the run waits for its slot").isPositive();

        String held = RedisFixture.job();
        Instant now = now();
        ClaimRequest running = claim(held, now.minusMillis(5), "c");
        assertThat(status(running)).isEqualTo(Status.CLAIMED);
        Instant next = now.plusSeconds(2);
        assertThat(status(request(held, next, "d", LEASE, Mode.CLAIM, false, ahead))).isEqualTo(Status.EARLY);
        assertThat(status(request(held, next, "d", LEASE, Mode.CLAIM, false, ahead))).as("asked again, still ahead").isEqualTo(Status.EARLY);
        complete(running);
        assertThat(status(request(held, next, "e", LEASE, Mode.CLAIM, false, ahead))).isEqualTo(Status.CLAIMED);
    }

    /**
     * A manual run ({@code trigger}) is decided like a slot but outside the job's schedule: neither
     * refused by the job's order of slots nor by a pause, and it moves neither the job's decided nor
     * its started slot.
     */
    @Test
    void aManualRunIsDecidedOutsideTheJobsOrderAndPauseAndMovesNoMarks() {
        String job = RedisFixture.job();
        Instant now = now();
        ClaimRequest scheduled = claim(job, now.minusMillis(10), "a");
        assertThat(status(scheduled)).isEqualTo(Status.CLAIMED);
        complete(scheduled);
        Instant lastDecided = store().lastSlots(List.of(job)).get(job);

        ClaimRequest older = manual(job, now.minusMillis(500), "b");
        assertThat(status(older)).as("a manual run older than the started slot").isEqualTo(Status.CLAIMED);
        complete(older);
        pause(job);
        ClaimRequest whilePaused = manual(job, now.minusMillis(300), "c");
        assertThat(status(whilePaused)).as("a manual run of a paused job").isEqualTo(Status.CLAIMED);
        complete(whilePaused);
        resume(job);
        ClaimRequest newer = manual(job, now.plusMillis(1).minusMillis(2), "d");
        assertThat(status(newer)).isEqualTo(Status.CLAIMED);
        complete(newer);
        assertThat(store().lastSlots(List.of(job))).containsEntry(job, lastDecided);
        assertThat(status(claim(job, now.minusMillis(5), "e"))).as("the next scheduled slot, after the manual runs")
                .isEqualTo(Status.CLAIMED);
    }

    @Test
    void aCatchUpClaimsAnUndecidedSlotPastItsGrace() {
        String job = RedisFixture.job();
        Instant past = now().minus(GRACE).minusSeconds(20);
        ClaimResult caught = decide(request(job, past, "a", LEASE, Mode.CATCH_UP, false, Duration.ZERO));
        assertThat(caught.status()).isEqualTo(Status.CLAIMED);
        assertThat(status(claim(job, past, "b"))).isEqualTo(Status.TAKEN);
        assertThat(store().lastSlots(List.of(job))).containsEntry(job, past);
    }

    static ClaimRequest manual(String job, Instant slot, String token) {
        return new ClaimRequest(new Lease(job, slot, token, LEASE, true), "w-" + token, GRACE, Mode.CLAIM, false, true, Duration.ZERO);
    }

    private void awaitExpired(String job, Instant slot) {
        await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(20))
                .until(() -> store().runsInFlight(List.of(job)).get(0), (RunsInFlight r) -> r.expired().contains(slot));
    }
}
