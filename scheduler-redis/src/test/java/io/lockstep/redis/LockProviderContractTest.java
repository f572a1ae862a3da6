package io.lockstep.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.lockstep.scheduler.lock.Backfill;
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
    /**
     * A lease the tests wait out (by the store's clock, never a sleep): long enough that the checks
     * made "while it lives" hold through a stall of a second on a loaded machine.
     */
    static final Duration SHORT_LEASE = Duration.ofMillis(1_500);

    /** The store under test. */
    abstract LockProvider store();

    /** Pauses {@code job} as the operators' {@code pause} does. */
    abstract void pause(String job);

    abstract void resume(String job);

    /** Begins a backfill of {@code job} over [from, to] ({@code lockstep backfill}, past its plan's checks); answers its id. */
    String beginBackfill(String job, Instant from, Instant to) {
        return store().requestBackfill(job, from, to, 10, "contract", List.of()).id();
    }

    /** Whether the store keeps backfills (Redlock does not: it refuses them). */
    boolean keepsBackfills() {
        return true;
    }

    static ClaimRequest backfillClaim(String job, Instant slot, String token, String backfill) {
        return new ClaimRequest(new Lease(job, slot, token, LEASE, true), "w-" + token, GRACE, Mode.CATCH_UP, false, false,
                Duration.ZERO, null, null, backfill);
    }

    Instant now() {
        return Instant.ofEpochMilli(store().serverTimeMillis());
    }

    static ClaimRequest claim(String job, Instant slot, String token) {
        return request(job, slot, token, LEASE, Mode.CLAIM, false, Duration.ZERO);
    }

    static ClaimRequest request(String job, Instant slot, String token, Duration lease, Mode mode, boolean replace, Duration ahead) {
        return new ClaimRequest(new Lease(job, slot, token, lease, true), "w-" + token, GRACE, mode, replace, false, ahead);
    }

    /** A claim of a slot's own lease (a job that allows overlapping runs): per slot, not per job. */
    static ClaimRequest perSlot(String job, Instant slot, String token) {
        return new ClaimRequest(new Lease(job, slot, token, LEASE, false), "w-" + token, GRACE, Mode.CLAIM, false, false, Duration.ZERO);
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
        assertRepeated(again, won); // (on Redlock at least as high: a master the first claim had not reached yet draws its own)
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

    /**
     * Stamps read back on every store. A job only ever stamped disabled is not out of force yet: with
     * no enabled stamp known, a run of disabled stamps counts from {@code InForce.GAP} after its first
     * (the longer periods are in CatchUpTest and RedisLockProviderTest, with their clocks moved).
     */
    @Test
    void stampsReadBackAndAJobJustDisabledIsNotOutOfForceYet() {
        String off = RedisFixture.job();
        String on = RedisFixture.job();
        assertThat(store().inForce(List.of(off, on))).as("never stamped").isEmpty();
        store().stampInForce(List.of(on), List.of(off), true);
        store().stampInForce(List.of(on), List.of(off), false);
        java.util.Map<String, io.lockstep.scheduler.lock.InForce> read = store().inForce(List.of(off, on));
        assertThat(read).containsKeys(off, on);
        assertThat(read.get(on).off()).as("enabled: never out of force").isEmpty();
        assertThat(read.get(off).off()).as("disabled a moment ago: owed yet").isEmpty();
        assertThat(read.get(off).outOfForce(now())).isFalse();
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

    /**
     * A backfill's claim: runs a slot that a catch-up would refuse as stale (older than its record's
     * life, before the job's last decided slot), only for the backfill the store names and only past
     * its cursor, outside the job's order (it never moves 'started', so the job's next slot is not
     * superseded), busy while the job is paused or its lease held. While it runs, every other request
     * for an undecided slot of its range is refused (the range is the backfill's); a cancel ends it at once.
     */
    @Test
    void aBackfillClaimsOnlyPastItsCursorForItsOwnBackfillAndItAloneDecidesItsRange() {
        String job = RedisFixture.job();
        Instant now = now();
        Instant old = now.minus(Duration.ofHours(1)); // far older than any record's life: a catch-up of it is stale
        Instant recent = now.minusSeconds(30); // a miss of it would still be recorded, but for the backfill
        if (!keepsBackfills()) {
            assertThatThrownBy(() -> beginBackfill(job, old, recent)).isInstanceOf(UnsupportedOperationException.class)
                    .hasMessageContaining("Redlock");
            assertThatThrownBy(() -> store().backfillView(job, null, List.of(old), LEASE)).isInstanceOf(UnsupportedOperationException.class);
            assertThat(store().backfills()).isEmpty();
            return;
        }
        ClaimRequest scheduled = claim(job, now.minusMillis(5), "s");
        assertThat(status(scheduled)).isEqualTo(Status.CLAIMED);
        complete(scheduled);
        assertThat(status(request(job, old, "c", LEASE, Mode.CATCH_UP, false, Duration.ZERO))).as("a catch-up").isEqualTo(Status.STALE);
        assertThat(status(backfillClaim(job, old, "x", "no-such-backfill"))).as("no backfill running").isEqualTo(Status.STALE);

        String id = beginBackfill(job, old, recent);
        assertThatThrownBy(() -> beginBackfill(job, old, recent)).as("one at a time").isInstanceOf(IllegalStateException.class);
        assertThat(status(request(job, recent, "m", LEASE, Mode.MISS_ONLY, false, Duration.ZERO)))
                .as("a slot of the range: the backfill's to decide").isEqualTo(Status.STALE);
        assertThat(status(backfillClaim(job, old, "y", "another"))).as("another backfill's").isEqualTo(Status.STALE);
        pause(job);
        assertThat(status(backfillClaim(job, old, "a", id))).as("paused: it waits").isEqualTo(Status.BUSY);
        resume(job);
        ClaimRequest first = backfillClaim(job, old, "a", id);
        ClaimResult won = decide(first);
        assertThat(won.status()).isEqualTo(Status.CLAIMED);
        assertThat(decide(first).fencingToken()).as("repeated (its reply was lost)").isEqualTo(won.fencingToken());
        ClaimRequest second = backfillClaim(job, old.plusSeconds(1), "b", id);
        assertThat(status(second)).as("the lease is held: it waits").isEqualTo(Status.BUSY);
        ClaimRequest due = claim(job, now.minusMillis(3), "due");
        assertThat(status(due)).as("a scheduled slot waits for a backfill's run, within its grace: never skipped for it")
                .isEqualTo(Status.BUSY);
        complete(first);
        assertThat(status(second)).as("the scheduled slot waiting for the lease goes first").isEqualTo(Status.BUSY);
        assertThat(status(due)).isEqualTo(Status.CLAIMED);
        complete(due);
        assertThat(status(second)).isEqualTo(Status.CLAIMED);
        complete(second);
        assertThat(status(backfillClaim(job, old, "c", id))).as("decided: its record").isEqualTo(Status.TAKEN);
        assertThat(status(backfillClaim(job, old.minusSeconds(1), "d", id))).as("behind its cursor").isEqualTo(Status.STALE);
        Backfill.View view = store().backfillView(job, id, List.of(old, old.plusSeconds(1), old.plusSeconds(2)), LEASE);
        assertThat(view.activeId()).isEqualTo(id);
        assertThat(view.cursor()).isEqualTo(old.plusSeconds(1));
        assertThat(view.decided()).containsExactlyInAnyOrder(old, old.plusSeconds(1));
        ClaimRequest next = claim(job, now.minusMillis(1), "n");
        assertThat(status(next)).as("the job's order is its schedule's, not the backfill's").isEqualTo(Status.CLAIMED);
        ClaimRequest late = backfillClaim(job, recent, "r", id);
        assertThat(status(late)).as("the job's next run holds the lease").isEqualTo(Status.BUSY);
        complete(next);
        assertThat(status(late)).as("a slot of the range nobody else could decide").isEqualTo(Status.CLAIMED);

        cancelBackfill(job); // its last run still holds the lease
        ClaimRequest afterCancel = claim(job, now(), "s2");
        assertThat(status(afterCancel)).as("a scheduled slot still waits for the backfill's last run").isEqualTo(Status.BUSY);
        complete(late);
        assertThat(status(afterCancel)).isEqualTo(Status.CLAIMED);
        complete(afterCancel);
        assertThat(status(backfillClaim(job, old.plusSeconds(3), "f", id))).as("cancelled").isEqualTo(Status.STALE);
        assertThat(store().backfillView(job, null, List.of(old), LEASE).activeId()).isNull();
        assertThat(status(request(job, recent.plusSeconds(1), "m2", LEASE, Mode.MISS_ONLY, false, Duration.ZERO)))
                .as("cancelled: the range is the schedule's again").isEqualTo(Status.MISSED);
        assertThat(store().backfills()).singleElement().satisfies(e -> assertThat(e.backfill().cancelled()).isTrue());
    }

    void cancelBackfill(String job) {
        store().cancelBackfill(job);
    }

    @Test
    void aSkipOnlyRequestRecordsTheSlotSkippedOnceAtItsTimeAndHoldsNothing() {
        String job = RedisFixture.job();
        ClaimRequest ahead = new ClaimRequest(new Lease(job, now().plusSeconds(5), "a", LEASE, true), "w-a", GRACE, Mode.SKIP_ONLY,
                false, false, Duration.ZERO, null, "calendar");
        assertThat(status(ahead)).as("never before its slot").isEqualTo(Status.EARLY);
        assertThat(store().lastSlots(List.of(job))).isEmpty();
        Instant due = now().minusMillis(5);
        ClaimRequest skip = new ClaimRequest(new Lease(job, due, "a", LEASE, true), "w-a", GRACE, Mode.SKIP_ONLY,
                false, false, Duration.ZERO, null, "calendar");
        assertThat(status(skip)).isEqualTo(Status.SKIPPED);
        assertThat(status(skip)).as("repeated").isEqualTo(Status.SKIPPED);
        assertThat(status(claim(job, due, "b"))).as("decided: never run").isEqualTo(Status.TAKEN);
        assertThat(status(new ClaimRequest(new Lease(job, due, "c", LEASE, true), "w-c", GRACE, Mode.SKIP_ONLY,
                false, false, Duration.ZERO, null, "calendar"))).isEqualTo(Status.TAKEN);
        assertThat(store().lastSlots(List.of(job))).as("the job's last decided slot").containsEntry(job, due);
        assertThat(status(claim(job, due.plusMillis(1), "d"))).as("a skip holds no lease").isEqualTo(Status.CLAIMED);
    }

    @Test
    void aNoWorkerMissOfAPausedJobIsRecordedPaused() {
        String job = RedisFixture.job();
        pause(job);
        try {
            Instant due = now().minus(GRACE).minusSeconds(1);
            ClaimRequest watch = new ClaimRequest(new Lease(job, due, "a", LEASE, true), "w-a", GRACE, Mode.MISS_ONLY,
                    false, false, Duration.ZERO, null, "no_worker");
            assertThat(status(watch)).as("paused, not missed: no worker was owed it").isEqualTo(Status.PAUSED);
            ClaimRequest other = new ClaimRequest(new Lease(job, due.plusMillis(1), "b", LEASE, true), "w-b", GRACE, Mode.MISS_ONLY,
                    false, false, Duration.ZERO, null, "no_thread");
            assertThat(status(other)).as("any other miss stays a miss").isEqualTo(Status.MISSED);
        } finally {
            resume(job);
        }
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

    /**
     * Review C1: workers of two configs (a rollout that raised misfireGrace or lease) write records
     * of different ttls. A slot that one decided under a short ttl stays decided for a claimant with
     * a longer one once that record has expired: the store judges a slot without a record by the
     * shortest ttl any claim of the job wrote, not by the claimant's own. (Record ttls of seconds,
     * so that the test waits seconds: the scheduler's are its grace plus two minutes at least.)
     */
    @Test
    void aSlotDecidedUnderAShorterRecordTtlStaysDecidedForAClaimantWithALongerOne() {
        String job = RedisFixture.job();
        Instant slot = now().minusMillis(5);
        ClaimRequest first = withRecordTtl(claim(job, slot, "a"), SHORT_RECORD);
        ClaimResult won = decide(first);
        assertThat(won.status()).isEqualTo(Status.CLAIMED);
        assertThat(complete(first)).isTrue();
        awaitStoreTime(won.serverTimeMillis() + SHORT_RECORD.toMillis() + 20);

        assertThat(status(claim(job, slot, "b"))).as("the slot ran under a record that expired; a claimant whose own record would"
                + " still live must not run it again").isEqualTo(Status.STALE);
        assertThat(status(request(job, slot, "c", LEASE, Mode.MISS_ONLY, false, Duration.ZERO))).as("nor report it missed")
                .isEqualTo(Status.STALE);
        assertThat(status(request(job, slot, "d", LEASE, Mode.CATCH_UP, false, Duration.ZERO))).as("nor catch it up")
                .isEqualTo(Status.STALE);
        Instant next = now().minusMillis(5);
        assertThat(status(claim(job, next, "e"))).as("a slot after the last decided one is claimed as ever").isEqualTo(Status.CLAIMED);
    }

    /** Review C1 for manual runs: they move no marks, so their records' shortest ttl is kept apart. */
    @Test
    void aManualRunDecidedUnderAShorterRecordTtlStaysDecidedForAClaimantWithALongerOne() {
        String job = RedisFixture.job();
        Instant slot = now().minusMillis(5);
        ClaimRequest first = withRecordTtl(manual(job, slot, "a"), SHORT_RECORD);
        ClaimResult won = decide(first);
        assertThat(won.status()).isEqualTo(Status.CLAIMED);
        assertThat(complete(first)).isTrue();
        awaitStoreTime(won.serverTimeMillis() + SHORT_RECORD.toMillis() + 20);

        assertThat(status(manual(job, slot, "b"))).as("the manual run ran under a record that expired; a worker that sees the"
                + " trigger late must not run it again").isEqualTo(Status.STALE);
        Instant later = now();
        ClaimRequest another = manual(job, later.minusMillis(8), "c");
        assertThat(status(another)).as("a new manual run of the job is claimed as ever").isEqualTo(Status.CLAIMED);
        assertThat(complete(another)).isTrue();
        assertThat(status(claim(job, later.minusMillis(4), "d"))).as("the job's schedule is not touched by the manual kept ttl")
                .isEqualTo(Status.CLAIMED);
    }

    @Test
    void aRunThatLostItsLeaseIsRecoveredOnceUnderAHigherToken() {
        String job = RedisFixture.job();
        Instant slot = now().minusMillis(5);
        ClaimRequest dying = request(job, slot, "a", SHORT_LEASE, Mode.CLAIM, false, Duration.ZERO);
        ClaimResult first = decide(dying);
        assertThat(first.status()).isEqualTo(Status.CLAIMED);
        assertThat(status(request(job, slot, "b", LEASE, Mode.RECOVER, false, Duration.ZERO)))
                .as("while its lease lives").isEqualTo(Status.TAKEN);
        awaitExpired(job, slot);
        ClaimRequest rerun = request(job, slot, "b", LEASE, Mode.RECOVER, false, Duration.ZERO);
        ClaimResult recovered = decide(rerun);
        assertThat(recovered.status()).isEqualTo(Status.CLAIMED);
        assertThat(recovered.why()).as("its worker died: the lease ran out").isEqualTo("lease_lost");
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
        ClaimRequest dying = request(job, slot, "a", SHORT_LEASE, Mode.CLAIM, false, Duration.ZERO);
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
        // The slots are 5 s ahead, claimable 10 s ahead: every "ahead" answer below holds through a
        // stall of seconds between reading now() and the claim.
        Duration ahead = Duration.ofSeconds(10);
        String job = RedisFixture.job();
        Instant slot = now().plusSeconds(5);
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
        Instant next = now.plusSeconds(5);
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

    @Test
    void perSlotLeasesLetTheSlotsOfOneJobRunSideBySide() {
        String job = RedisFixture.job();
        Instant now = now();
        ClaimRequest first = perSlot(job, now.minusMillis(20), "a");
        ClaimRequest second = perSlot(job, now.minusMillis(10), "b");
        assertThat(status(first)).isEqualTo(Status.CLAIMED);
        assertThat(status(second)).as("the first run's lease is its slot's, not the job's").isEqualTo(Status.CLAIMED);
        assertThat(renew(first)).isTrue();
        assertThat(renew(second)).isTrue();
        assertThat(renew(perSlot(job, now.minusMillis(20), "b"))).as("a lease is still owner-checked").isFalse();
        assertThat(complete(first)).isTrue();
        assertThat(renew(second)).as("the other run's completion left this lease alone").isTrue();
        assertThat(complete(second)).isTrue();
        // On Redlock the completion returns once a majority recorded it; the last master follows just after.
        await().atMost(Duration.ofSeconds(5)).untilAsserted(() ->
                assertThat(store().runsInFlight(List.of(job)).get(0).nextLeaseEndMillis()).as("no run left in flight").isZero());
    }

    @Test
    void aMissOnlyRepeatOfOnesOwnClaimDisownsItAndFreesTheLease() {
        // A claim whose reply never came, given up on (never started): repeated as MISS_ONLY under the
        // same token, the record turns missed, the lease is given back and the run leaves the index.
        String job = RedisFixture.job();
        Instant now = now();
        ClaimRequest lost = claim(job, now.minusMillis(20), "a");
        assertThat(status(lost)).isEqualTo(Status.CLAIMED);
        ClaimRequest giveUp = request(job, now.minusMillis(20), "a", LEASE, Mode.MISS_ONLY, false, Duration.ZERO);
        ClaimResult disowned = decide(giveUp);
        assertThat(disowned.status()).isEqualTo(Status.MISSED);
        assertThat(disowned.runningUntilMillis()).as("the run left the running index").isZero();
        assertThat(status(giveUp)).as("repeated").isEqualTo(Status.MISSED);
        assertThat(status(lost)).as("the original claim repeated: the record now says missed").isEqualTo(Status.MISSED);
        assertThat(renew(lost)).as("its lease was given back").isFalse();
        assertThat(complete(lost)).as("its outcome does not count").isFalse();
        assertThat(status(claim(job, now.minusMillis(20), "b"))).isEqualTo(Status.TAKEN);
        assertThat(status(claim(job, now.minusMillis(10), "c"))).as("the job's lease is free: not skipped").isEqualTo(Status.CLAIMED);
    }

    @Test
    void aRecoveryWhileAnotherRunHoldsTheJobsLeaseIsBusyAndAnAbandonIsNot() {
        String job = RedisFixture.job();
        Instant slot = now().minusMillis(20);
        ClaimRequest dying = request(job, slot, "a", SHORT_LEASE, Mode.CLAIM, false, Duration.ZERO);
        assertThat(status(dying)).isEqualTo(Status.CLAIMED);
        awaitExpired(job, slot);
        ClaimRequest newer = claim(job, now().minusMillis(5), "b");
        assertThat(status(newer)).as("the job's lease ran out: the next slot runs").isEqualTo(Status.CLAIMED);
        assertThat(status(request(job, slot, "c", LEASE, Mode.RECOVER, false, Duration.ZERO)))
                .as("a rerun needs the job's lease, which the newer run holds").isEqualTo(Status.BUSY);
        assertThat(store().runsInFlight(List.of(job)).get(0).expired()).as("nothing was written: still to deal with").containsExactly(slot);
        assertThat(status(request(job, slot, "d", LEASE, Mode.ABANDON, false, Duration.ZERO))).isEqualTo(Status.ABANDONED);
        assertThat(renew(newer)).as("the newer run kept its lease").isTrue();
    }

    @Test
    void aRecoveryAnsweredBusyHasTheNextTurnOverALaterSlot() {
        // Review m3: a rerun behind a frequent job's back-to-back runs must get in at the first gap,
        // or it starves. Answered busy, it holds the next turn: a later slot that finds the lease free
        // is skipped (overlap: skip), the rerun claims, and the turn is gone with it.
        String job = RedisFixture.job();
        Instant slot = now().minusMillis(30);
        ClaimRequest dying = request(job, slot, "a", SHORT_LEASE, Mode.CLAIM, false, Duration.ZERO);
        assertThat(status(dying)).isEqualTo(Status.CLAIMED);
        awaitExpired(job, slot);
        ClaimRequest newer = claim(job, now().minusMillis(20), "b");
        assertThat(status(newer)).isEqualTo(Status.CLAIMED);
        ClaimRequest rerun = request(job, slot, "c", LEASE, Mode.RECOVER, false, Duration.ZERO);
        assertThat(status(rerun)).isEqualTo(Status.BUSY);
        assertThat(complete(newer)).isTrue();
        awaitNoLease(job);
        Instant later = now();
        assertThat(status(claim(job, later.minusMillis(10), "d")))
                .as("the lease is free, but the rerun of an earlier slot holds the turn").isEqualTo(Status.SKIPPED);
        ClaimRequest replacing = request(job, later.minusMillis(5), "e", LEASE, Mode.CLAIM, true, Duration.ZERO);
        assertThat(status(replacing)).as("overlap: replace takes no turn").isEqualTo(Status.CLAIMED);
        assertThat(status(rerun)).as("the replacing run holds the lease now").isEqualTo(Status.BUSY);
        assertThat(complete(replacing)).isTrue();
        awaitNoLease(job);
        assertThat(status(rerun)).as("its turn").isEqualTo(Status.CLAIMED);
        assertThat(complete(rerun)).isTrue();
        awaitNoLease(job);
        assertThat(status(claim(job, now(), "f"))).as("the turn went with the rerun").isEqualTo(Status.CLAIMED);
    }

    @Test
    void aCheckpointIsSavedOnlyByTheRunThatHoldsTheSlotAndOutlivesItForTheRerun() {
        // F8 of the 2026-12-04 trial: a rerun resumes from what the run before it saved.
        String job = RedisFixture.job();
        Instant slot = now().minusMillis(20);
        ClaimRequest first = request(job, slot, "a", SHORT_LEASE, Mode.CLAIM, false, Duration.ZERO);
        ClaimResult won = decide(first);
        assertThat(won.status()).isEqualTo(Status.CLAIMED);
        assertThat(store().lastCheckpoint(job, slot)).isEmpty();
        assertThat(store().checkpoint(first.lease(), new io.lockstep.scheduler.lock.Checkpoint("step 3", won.fencingToken(), 1))).isTrue();
        assertThat(store().checkpoint(claim(job, slot, "stranger").lease(), new io.lockstep.scheduler.lock.Checkpoint("x", 1, 1)))
                .as("another token saves nothing").isFalse();
        assertThat(store().lastCheckpoint(job, slot)).get().extracting(io.lockstep.scheduler.lock.Checkpoint::value).isEqualTo("step 3");
        awaitExpired(job, slot);
        ClaimRequest rerun = request(job, slot, "c", LEASE, Mode.RECOVER, false, Duration.ZERO);
        ClaimResult recovered = decide(rerun);
        assertThat(recovered.status()).isEqualTo(Status.CLAIMED);
        assertThat(recovered.why()).as("its worker died: the lease ran out").isEqualTo("lease_lost");
        assertThat(store().lastCheckpoint(job, slot)).as("kept with the slot for its rerun").get()
                .extracting(io.lockstep.scheduler.lock.Checkpoint::value).isEqualTo("step 3");
        assertThat(store().checkpoint(first.lease(), new io.lockstep.scheduler.lock.Checkpoint("step 9", won.fencingToken(), 2)))
                .as("the run that lost its slot can no longer save").isFalse();
        assertThat(store().checkpoint(rerun.lease(), new io.lockstep.scheduler.lock.Checkpoint("step 4", recovered.fencingToken(), 1))).isTrue();
        assertThat(store().lastCheckpoint(job, slot)).get().extracting(io.lockstep.scheduler.lock.Checkpoint::value).isEqualTo("step 4");
        assertThat(complete(rerun)).isTrue();
        assertThat(store().checkpoint(rerun.lease(), new io.lockstep.scheduler.lock.Checkpoint("step 5", recovered.fencingToken(), 2)))
                .as("a run that ended saves nothing").isFalse();
    }

    @Test
    void aRerunSaysWhetherTheRunBeforeItWasHandedOverAtItsStopOrLostItsLease() {
        // F3 of the 2026-12-04 trial: a hand-over at shutdown reads as one, not as a worker that died.
        String job = RedisFixture.job();
        Instant stopped = now().minusMillis(40);
        ClaimRequest cut = request(job, stopped, "a", LEASE, Mode.CLAIM, false, Duration.ZERO);
        assertThat(status(cut)).isEqualTo(Status.CLAIMED);
        assertThat(store().complete(List.of(new io.lockstep.scheduler.lock.Completion(cut.lease(),
                io.lockstep.scheduler.lock.Outcome.INTERRUPTED, 1, 10, "interrupted by shutdown", true)))).containsExactly(true);
        awaitExpired(job, stopped);
        ClaimResult rerun = decide(request(job, stopped, "b", LEASE, Mode.RECOVER, false, Duration.ZERO));
        assertThat(rerun.status()).isEqualTo(Status.CLAIMED);
        assertThat(rerun.why()).isEqualTo("handed_over");

        String other = RedisFixture.job();
        Instant lost = now().minusMillis(40);
        ClaimRequest stalled = request(other, lost, "c", LEASE, Mode.CLAIM, false, Duration.ZERO);
        assertThat(status(stalled)).isEqualTo(Status.CLAIMED);
        assertThat(store().complete(List.of(new io.lockstep.scheduler.lock.Completion(stalled.lease(),
                io.lockstep.scheduler.lock.Outcome.LEASE_LOST, 1, 10, "lease lost", true)))).containsExactly(true);
        awaitExpired(other, lost);
        assertThat(decide(request(other, lost, "d", LEASE, Mode.RECOVER, false, Duration.ZERO)).why())
                .as("a run handed over because it had lost its lease").isEqualTo("lease_lost");
    }

    @Test
    void aRecoveryDecidedWithoutARunGivesUpItsTurn() {
        String job = RedisFixture.job();
        Instant slot = now().minusMillis(30);
        assertThat(status(request(job, slot, "a", SHORT_LEASE, Mode.CLAIM, false, Duration.ZERO))).isEqualTo(Status.CLAIMED);
        awaitExpired(job, slot);
        ClaimRequest newer = claim(job, now().minusMillis(20), "b");
        assertThat(status(newer)).isEqualTo(Status.CLAIMED);
        assertThat(status(request(job, slot, "c", LEASE, Mode.RECOVER, false, Duration.ZERO))).isEqualTo(Status.BUSY);
        assertThat(status(request(job, slot, "d", LEASE, Mode.ABANDON, false, Duration.ZERO))).isEqualTo(Status.ABANDONED);
        assertThat(complete(newer)).isTrue();
        awaitNoLease(job);
        assertThat(status(claim(job, now(), "e"))).as("the abandoned slot's turn went with it").isEqualTo(Status.CLAIMED);
    }

    @Test
    void aRenewalOfARunNoLongerInTheRunningIndexDoesNotPutItBack() {
        // A run replaced (overlap: replace) by a claim that holds the job's lease under the same token:
        // the lease is still that token's, so the renewal answers true, but the replaced run left the
        // running index for good; it must not come back to be recovered later.
        String job = RedisFixture.job();
        Instant now = now();
        ClaimRequest replaced = claim(job, now.minusMillis(20), "a");
        assertThat(status(replaced)).isEqualTo(Status.CLAIMED);
        ClaimRequest replacing = request(job, now.minusMillis(10), "a", LEASE, Mode.CLAIM, true, Duration.ZERO);
        assertThat(status(replacing)).isEqualTo(Status.CLAIMED);
        assertThat(renew(replaced)).as("the job's lease is this token's").isTrue();
        assertThat(complete(replacing)).isTrue();
        // On Redlock the completion returns once a majority recorded it; the last master follows just after.
        awaitNoLease(job); // no run in flight: the renewal did not put the replaced one back
        assertThat(store().runsInFlight(List.of(job)).get(0).expired()).isEmpty();
        assertThat(complete(replaced)).as("the replaced run's outcome").isFalse();
    }

    io.lockstep.scheduler.lock.StartAnswer start(ClaimRequest request, Duration grace) {
        return store().start(List.of(new io.lockstep.scheduler.lock.StartRequest(request.lease(), grace))).get(0).answer();
    }

    /**
     * A batch of starts carries the store's clock as late as the store read it before the answers
     * left (the latest time of the whole batch, not each call's own): a started run begins
     * {@code slot - serverTime} after the answer arrives, so an earlier time would only start it
     * later than its slot. 150 starts: more than one script call on Redis.
     */
    @Test
    void aBatchOfStartsCarriesTheLatestTimeTheStoreReadJustBeforeItsReply() {
        Instant slot = now().plusSeconds(3);
        List<ClaimRequest> claims = new java.util.ArrayList<>();
        for (int i = 0; i < 150; i++) {
            claims.add(request(RedisFixture.job(), slot, "t" + i, LEASE, Mode.CLAIM, false, Duration.ofSeconds(10)));
        }
        long before = store().serverTimeMillis();
        List<ClaimResult> claimed = store().claim(claims);
        assertThat(claimed).extracting(ClaimResult::status).containsOnly(Status.CLAIMED);
        List<io.lockstep.scheduler.lock.StartReply> started = store().start(claims.stream()
                .map(c -> new io.lockstep.scheduler.lock.StartRequest(c.lease(), GRACE)).toList());
        long after = store().serverTimeMillis();
        assertThat(started).extracting(io.lockstep.scheduler.lock.StartReply::answer)
                .containsOnly(io.lockstep.scheduler.lock.StartAnswer.STARTED);
        long startTime = started.get(0).serverTimeMicros();
        assertThat(started).extracting(io.lockstep.scheduler.lock.StartReply::serverTimeMicros).as("one time for the batch")
                .containsOnly(startTime);
        assertThat(startTime).as("read after the claims were answered and before the start's reply left")
                .isGreaterThanOrEqualTo(claimed.get(0).serverTimeMillis() * 1_000).isLessThan((after + 1) * 1_000)
                .isGreaterThanOrEqualTo(before * 1_000);
        assertThat(started.get(0).startDelayNanos(slot)).as("the slot is that much after the store's time")
                .isEqualTo((slot.toEpochMilli() * 1_000 - startTime) * 1_000);
        assertThat(started.get(0).startDelayNanos(slot.minusSeconds(60))).as("a slot past: at once").isZero();
        for (ClaimRequest c : claims) {
            assertThat(complete(c)).isTrue();
        }
    }

    /**
     * A claim made ahead is staged: a short lease (until the slot plus STAGED_MARGIN) until its
     * start, which the store checks by its own clock: the claim still ours, the grace not passed,
     * the job not paused. Each answer is the same when repeated.
     */
    @Test
    void aClaimAheadIsStagedUntilItsStartAndTheStartChecksTheClaimTheGraceAndThePause() {
        Duration ahead = Duration.ofSeconds(10);
        String job = RedisFixture.job();
        Instant slot = now().plusSeconds(3);
        ClaimRequest staged = request(job, slot, "a", LEASE, Mode.CLAIM, false, ahead);
        assertThat(status(staged)).isEqualTo(Status.CLAIMED);
        assertThat(store().runsInFlight(List.of(job)).get(0).nextLeaseEndMillis()).as("a short lease until the start")
                .isLessThanOrEqualTo(slot.plus(ClaimRequest.STAGED_MARGIN).toEpochMilli());
        ClaimRequest stranger = request(job, slot, "b", LEASE, Mode.CLAIM, false, ahead);
        assertThat(start(stranger, GRACE)).isEqualTo(io.lockstep.scheduler.lock.StartAnswer.LOST);
        assertThat(start(staged, GRACE)).isEqualTo(io.lockstep.scheduler.lock.StartAnswer.STARTED);
        assertThat(start(staged, GRACE)).as("repeated").isEqualTo(io.lockstep.scheduler.lock.StartAnswer.STARTED);
        // (On Redlock the start returned once a majority started it: the last master's may come a moment later.)
        await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThat(store().runsInFlight(List.of(job)).get(0).nextLeaseEndMillis())
                .as("the full lease once started").isGreaterThan(slot.plus(ClaimRequest.STAGED_MARGIN).toEpochMilli()));
        assertThat(complete(staged)).isTrue();

        String paused = RedisFixture.job();
        ClaimRequest beforePause = request(paused, now().plusSeconds(3), "c", LEASE, Mode.CLAIM, false, ahead);
        assertThat(status(beforePause)).isEqualTo(Status.CLAIMED);
        pause(paused);
        assertThat(start(beforePause, GRACE)).isEqualTo(io.lockstep.scheduler.lock.StartAnswer.PAUSED);
        assertThat(start(beforePause, GRACE)).as("repeated").isEqualTo(io.lockstep.scheduler.lock.StartAnswer.PAUSED);
        assertThat(status(request(paused, beforePause.lease().slot(), "d", LEASE, Mode.CLAIM, false, ahead)))
                .as("the slot is decided (skipped)").isEqualTo(Status.TAKEN);
        resume(paused);
        assertThat(status(request(paused, beforePause.lease().slot().plusSeconds(1), "e", LEASE, Mode.CLAIM, false, ahead)))
                .as("the lease was given back").isEqualTo(Status.CLAIMED);

        String late = RedisFixture.job();
        Instant soon = now().plusMillis(300); // staged (farther off than the start window), past its grace once the start comes
        ClaimRequest stalled = request(late, soon, "f", LEASE, Mode.CLAIM, false, ahead);
        assertThat(store().claim(List.of(stalled)).get(0)).extracting(ClaimResult::status, ClaimResult::started)
                .containsExactly(Status.CLAIMED, false);
        await().atMost(Duration.ofSeconds(5)).until(() -> store().serverTimeMillis() > soon.toEpochMilli() + 1);
        assertThat(start(stalled, Duration.ZERO)).as("past its grace at the start").isEqualTo(io.lockstep.scheduler.lock.StartAnswer.LATE);
        assertThat(start(stalled, Duration.ZERO)).as("repeated").isEqualTo(io.lockstep.scheduler.lock.StartAnswer.LATE);
        assertThat(status(request(late, stalled.lease().slot(), "g", LEASE, Mode.RECOVER, false, Duration.ZERO)))
                .as("recorded as missed: nothing to recover").isEqualTo(Status.TAKEN);
        assertThat(status(claim(late, now().minusMillis(1), "h"))).as("the lease was given back").isEqualTo(Status.CLAIMED);
    }

    /**
     * A claim made ahead that the store decides within {@link ClaimRequest#START_WINDOW} of its slot
     * is the run's start, as a claim at the slot is: no start call follows (a slot costs two calls).
     * Its lease ends the job's ttl past the slot, a peer that looks finds it running, and every
     * check a start makes the claim made then: a pause that comes after it does not undo it (as a
     * pause after a start does not), while one that came before it makes it early. A start sent
     * anyway (Redlock sends one when a master did not say) answers started and changes nothing.
     * A claim made ahead farther off than the window is staged.
     */
    @Test
    void aClaimAheadWithinTheStartWindowIsTheRunsStart() {
        Duration ahead = Duration.ofSeconds(10);
        String job = RedisFixture.job();
        Instant slot = Instant.ofEpochMilli(store().serverTimeMillis()).plusMillis(30); // inside the window at the store
        ClaimRequest claim = request(job, slot, "a", LEASE, Mode.CLAIM, false, ahead);
        if (this instanceof RedlockLockProviderContractTest) {
            // Redlock's masters could each answer started or staged by their own clocks: it has no window,
            // every claim made ahead is staged and started by a start call, as before the window.
            assertThat(store().startWindow()).isZero();
            assertThat(store().claim(List.of(claim)).get(0)).extracting(ClaimResult::status, ClaimResult::started)
                    .containsExactly(Status.CLAIMED, false);
            assertThat(start(claim, GRACE)).isEqualTo(io.lockstep.scheduler.lock.StartAnswer.STARTED);
            assertThat(complete(claim)).isTrue();
            return;
        }
        assertThat(store().startWindow()).isEqualTo(ClaimRequest.START_WINDOW);
        ClaimResult won = store().claim(List.of(claim)).get(0);
        assertThat(won.status()).isEqualTo(Status.CLAIMED);
        assertThat(won.started()).as("the run's start").isTrue();
        await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThat(store().runsInFlight(List.of(job)).get(0).nextLeaseEndMillis())
                .as("the run's lease, from its slot").isGreaterThanOrEqualTo(slot.plus(LEASE).toEpochMilli() - 5));
        assertThat(store().slotStates(List.of(new io.lockstep.scheduler.lock.SlotState.Ref(job, slot))).get(0).kind())
                .isEqualTo(io.lockstep.scheduler.lock.SlotState.Kind.RUNNING);
        pause(job);
        assertThat(start(claim, GRACE)).as("a start sent anyway").isEqualTo(io.lockstep.scheduler.lock.StartAnswer.STARTED);
        ClaimResult repeated = store().claim(List.of(claim)).get(0);
        assertThat(repeated.started()).as("repeated").isTrue();
        assertRepeated(repeated, won);
        resume(job);
        assertThat(complete(claim)).isTrue();

        String far = RedisFixture.job();
        ClaimRequest early = request(far, now().plusSeconds(3), "b", LEASE, Mode.CLAIM, false, ahead);
        assertThat(store().claim(List.of(early)).get(0)).extracting(ClaimResult::status, ClaimResult::started)
                .as("farther off than the window: staged").containsExactly(Status.CLAIMED, false);
        assertThat(start(early, GRACE)).isEqualTo(io.lockstep.scheduler.lock.StartAnswer.STARTED);
        assertThat(complete(early)).isTrue();
    }

    /**
     * What a worker that stepped aside reads of a slot (on Redis, from the marks of the job's group,
     * one command per group): nothing before the claim (claim it), a lease to look at while a claim
     * or its run holds the slot, decided once the run ended or the slot was decided without a run;
     * and for a slot the cluster passed over (a later slot was decided first), what its own record
     * says: none.
     */
    @Test
    void slotStatesTellAPeerThatSteppedAsideWhetherToClaimOrWhenToLook() {
        Duration ahead = Duration.ofSeconds(10);
        String job = RedisFixture.job();
        Instant slot = now().plusSeconds(3);
        java.util.function.Function<Instant, io.lockstep.scheduler.lock.SlotState> state =
                s -> store().slotStates(List.of(new io.lockstep.scheduler.lock.SlotState.Ref(job, s))).get(0);
        assertThat(state.apply(slot)).isEqualTo(io.lockstep.scheduler.lock.SlotState.NONE);
        ClaimRequest staged = request(job, slot, "a", LEASE, Mode.CLAIM, false, ahead);
        assertThat(status(staged)).isEqualTo(Status.CLAIMED);
        io.lockstep.scheduler.lock.SlotState held = state.apply(slot);
        assertThat(held.kind()).as("claimed ahead").isIn(io.lockstep.scheduler.lock.SlotState.Kind.STAGED,
                io.lockstep.scheduler.lock.SlotState.Kind.RUNNING);
        assertThat(held.leaseEndMillis()).as("the short lease's end").isPositive()
                .isLessThanOrEqualTo(slot.plus(ClaimRequest.STAGED_MARGIN).toEpochMilli());
        assertThat(state.apply(slot.minusSeconds(1))).as("an earlier slot nobody decided").isEqualTo(io.lockstep.scheduler.lock.SlotState.NONE);
        assertThat(state.apply(slot.plusSeconds(1))).as("a later slot").isEqualTo(io.lockstep.scheduler.lock.SlotState.NONE);
        assertThat(start(staged, GRACE)).isEqualTo(io.lockstep.scheduler.lock.StartAnswer.STARTED);
        assertThat(state.apply(slot).kind()).as("running").isNotIn(io.lockstep.scheduler.lock.SlotState.Kind.NONE,
                io.lockstep.scheduler.lock.SlotState.Kind.DECIDED);
        assertThat(complete(staged)).isTrue();
        assertThat(state.apply(slot)).as("its run ended").isEqualTo(io.lockstep.scheduler.lock.SlotState.DECIDED);

        String missed = RedisFixture.job();
        Instant past = now().minusMillis(5);
        assertThat(status(request(missed, past, "b", LEASE, Mode.MISS_ONLY, false, Duration.ZERO))).isEqualTo(Status.MISSED);
        assertThat(store().slotStates(List.of(new io.lockstep.scheduler.lock.SlotState.Ref(missed, past))).get(0))
                .as("decided without a run").isEqualTo(io.lockstep.scheduler.lock.SlotState.DECIDED);

        // overlap: allow: a manual run takes the job's marks ('holder') while the slot's run goes on;
        // the slot is still in flight (its worker may die: a peer must look for it), never "decided".
        String allow = RedisFixture.job();
        Instant scheduled = now().minusMillis(5);
        ClaimRequest run = perSlot(allow, scheduled, "c");
        assertThat(status(run)).isEqualTo(Status.CLAIMED);
        ClaimRequest manual = new ClaimRequest(new Lease(allow, scheduled.plusMillis(1), "d", LEASE, false), "w-d", GRACE, Mode.CLAIM,
                false, true, Duration.ZERO);
        assertThat(status(manual)).isEqualTo(Status.CLAIMED);
        assertThat(store().slotStates(List.of(new io.lockstep.scheduler.lock.SlotState.Ref(allow, scheduled))).get(0).kind())
                .as("a run in flight beside a manual one").isNotIn(io.lockstep.scheduler.lock.SlotState.Kind.NONE,
                        io.lockstep.scheduler.lock.SlotState.Kind.DECIDED);
    }

    /**
     * A repeated claim (its reply was lost) is claimed again for the same owner under the same token;
     * on Redlock under a token at least as high: a master the first claim had not reached yet (the
     * claim returns once a majority claimed) claims it fresh under its own, higher counter, and the
     * highest counts (CI saw it twice).
     */
    private void assertRepeated(ClaimResult repeated, ClaimResult first) {
        assertThat(repeated.status()).as("repeated").isEqualTo(Status.CLAIMED);
        if (this instanceof RedlockLockProviderContractTest) {
            assertThat(repeated.fencingToken()).as("repeated").isGreaterThanOrEqualTo(first.fencingToken());
        } else {
            assertThat(repeated.fencingToken()).as("repeated").isEqualTo(first.fencingToken());
        }
    }

    /**
     * A staged claim whose worker never started it (killed or stalled before its start) is known
     * never to have run: once its short lease runs out a peer runs it, even under recover: none
     * (an ABANDON request wins it as a run), within the slot's grace; past the grace it is recorded
     * as missed, once.
     */
    @Test
    void aStagedClaimThatNeverStartedIsRunByAPeerWhateverThePolicyWithinItsGrace() {
        Duration ahead = Duration.ofSeconds(10);
        String job = RedisFixture.job();
        Instant slot = now().plusMillis(200); // farther off than the start window: staged
        ClaimRequest dead = request(job, slot, "a", LEASE, Mode.CLAIM, false, ahead);
        ClaimResult first = decide(dead);
        assertThat(first.status()).isEqualTo(Status.CLAIMED);
        awaitExpired(job, slot);
        ClaimRequest takeover = request(job, slot, "b", LEASE, Mode.ABANDON, false, Duration.ZERO);
        ClaimResult won = decide(takeover);
        assertThat(won.status()).as("recover: none, but it never started").isEqualTo(Status.CLAIMED);
        assertThat(won.fencingToken()).isGreaterThan(first.fencingToken());
        assertRepeated(decide(takeover), won);
        assertThat(start(dead, GRACE)).as("the dead claim's late start").isEqualTo(io.lockstep.scheduler.lock.StartAnswer.LOST);
        assertThat(complete(dead)).isFalse();
        assertThat(complete(takeover)).isTrue();

        String tooLate = RedisFixture.job();
        Instant old = now().plusMillis(200); // staged; past its (zero) grace once its short lease ran out
        assertThat(status(request(tooLate, old, "c", LEASE, Mode.CLAIM, false, ahead))).isEqualTo(Status.CLAIMED);
        awaitExpired(tooLate, old);
        ClaimRequest pastGrace = new ClaimRequest(new Lease(tooLate, old, "d", LEASE, true), "w-d", Duration.ZERO, Mode.ABANDON,
                false, false, Duration.ZERO);
        assertThat(status(pastGrace)).isEqualTo(Status.MISSED);
        assertThat(status(pastGrace)).as("repeated").isEqualTo(Status.MISSED);
        assertThat(status(request(tooLate, old, "e", LEASE, Mode.RECOVER, false, Duration.ZERO))).isEqualTo(Status.TAKEN);
        assertThat(store().runsInFlight(List.of(tooLate)).get(0).expired()).isEmpty();
    }

    /**
     * A hand-over: a run that lost its lease (or was cut off by its worker's stop) under recover:
     * rerun is left recoverable at once, its outcome in the history; a run that never started goes
     * back to any policy. The completion is retry-safe and the run is rerun under a higher token.
     */
    @Test
    void aHandedOverRunIsRerunAtOnceAndARunThatNeverStartedGoesBackToAnyPolicy() {
        String job = RedisFixture.job();
        Instant slot = now().minusMillis(5);
        ClaimRequest cut = claim(job, slot, "a");
        ClaimResult first = decide(cut);
        Completion handOver = new Completion(cut.lease(), Outcome.INTERRUPTED, 1, 10, "", true);
        assertThat(store().complete(List.of(handOver))).containsExactly(true);
        assertThat(store().complete(List.of(handOver))).as("repeated").containsExactly(true);
        assertThat(store().runsInFlight(List.of(job)).get(0).expired()).as("dead at once").contains(slot);
        ClaimResult rerun = decide(request(job, slot, "b", LEASE, Mode.RECOVER, false, Duration.ZERO));
        assertThat(rerun.status()).isEqualTo(Status.CLAIMED);
        assertThat(rerun.fencingToken()).isGreaterThan(first.fencingToken());
        assertThat(renew(cut)).as("the handed-over run's lease is gone").isFalse();

        String unstarted = RedisFixture.job();
        ClaimRequest never = claim(unstarted, slot, "c");
        assertThat(status(never)).isEqualTo(Status.CLAIMED);
        assertThat(store().complete(List.of(new Completion(never.lease(), Outcome.NOT_STARTED)))).containsExactly(true);
        assertThat(status(request(unstarted, slot, "d", LEASE, Mode.ABANDON, false, Duration.ZERO)))
                .as("recover: none, but it never started").isEqualTo(Status.CLAIMED);
    }

    /** A record ttl the tests wait out (by the store's clock), far shorter than any a job's config gives. */
    static final Duration SHORT_RECORD = Duration.ofMillis(1_500);

    /** {@code r} with a record ttl of its own (a claimant of another config, scaled down to seconds). */
    static ClaimRequest withRecordTtl(ClaimRequest r, Duration recordTtl) {
        return new ClaimRequest(r.lease(), r.workerId(), r.misfireGrace(), r.mode(), r.replace(), r.manual(), r.ahead(), recordTtl);
    }

    private void awaitStoreTime(long millis) {
        await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20)).until(() -> store().serverTimeMillis() > millis);
    }

    /**
     * A staged claim that was started and then died is a run like any other: the job's recover
     * policy applies (ABANDON abandons it, RECOVER reruns it under a higher token), unlike one that
     * never started (GUARANTEES 3).
     */
    @Test
    void aStagedClaimThatStartedAndThenDiedGoesToTheRecoverPolicy() {
        Duration ahead = Duration.ofSeconds(10);
        // Staged and started by a start (the slot farther off than the start window), or the claim itself the start.
        for (int round = 0; round < 4; round++) {
            Mode policy = round % 2 == 0 ? Mode.ABANDON : Mode.RECOVER;
            boolean staged = round < 2;
            String job = RedisFixture.job();
            Instant slot = staged ? now().plusMillis(200) : now().minusMillis(5);
            ClaimRequest dead = request(job, slot, "a", SHORT_LEASE, Mode.CLAIM, false, ahead);
            ClaimResult first = decide(dead);
            assertThat(first.status()).isEqualTo(Status.CLAIMED);
            assertThat(start(dead, GRACE)).isEqualTo(io.lockstep.scheduler.lock.StartAnswer.STARTED);
            awaitExpired(job, slot);
            ClaimRequest peer = request(job, slot, "b", LEASE, policy, false, Duration.ZERO);
            ClaimResult answer = decide(peer);
            if (policy == Mode.ABANDON) {
                assertThat(answer.status()).as("it started: recover none abandons it").isEqualTo(Status.ABANDONED);
                assertThat(decide(peer).status()).as("repeated").isEqualTo(Status.ABANDONED);
            } else {
                assertThat(answer.status()).as("it started: recover rerun reruns it").isEqualTo(Status.CLAIMED);
                assertThat(answer.fencingToken()).isGreaterThan(first.fencingToken());
                assertRepeated(decide(peer), answer);
                assertThat(complete(peer)).isTrue();
            }
            assertThat(complete(dead)).as("the dead run's late outcome").isFalse();
        }
    }

    /**
     * A {@code trigger} that meets a staged claim (claimed ahead, not started yet) meets its lease:
     * decided by overlap like any run in flight (skipped when the job's runs exclude each other,
     * run beside it when they do not), never merged into it (GUARANTEES 3).
     */
    @Test
    void aManualRunThatMeetsAStagedClaimIsDecidedByOverlap() {
        Duration ahead = Duration.ofSeconds(10);
        String job = RedisFixture.job();
        Instant slot = now().plusSeconds(2);
        ClaimRequest staged = request(job, slot, "a", LEASE, Mode.CLAIM, false, ahead);
        assertThat(status(staged)).isEqualTo(Status.CLAIMED);
        ClaimRequest trigger = manual(job, now().minusMillis(3), "m");
        assertThat(status(trigger)).as("exclusive lease held by the staged claim").isEqualTo(Status.SKIPPED);
        assertThat(decide(staged).status()).as("the staged claim is still ours").isEqualTo(Status.CLAIMED);

        String side = RedisFixture.job();
        Instant later = now().plusSeconds(2);
        ClaimRequest stagedPerSlot = new ClaimRequest(new Lease(side, later, "c", LEASE, false), "w-c", GRACE, Mode.CLAIM, false, false, ahead);
        assertThat(status(stagedPerSlot)).isEqualTo(Status.CLAIMED);
        ClaimRequest besides = new ClaimRequest(new Lease(side, now().minusMillis(3), "n", LEASE, false), "w-n", GRACE, Mode.CLAIM, false,
                true, Duration.ZERO);
        assertThat(status(besides)).as("per-slot leases: the trigger runs beside the staged claim").isEqualTo(Status.CLAIMED);
    }

    static ClaimRequest manual(String job, Instant slot, String token) {
        return new ClaimRequest(new Lease(job, slot, token, LEASE, true), "w-" + token, GRACE, Mode.CLAIM, false, true, Duration.ZERO);
    }

    /** No run of the job holds a lease that is still ahead (on Redlock, the last master follows a completion just after). */
    private void awaitNoLease(String job) {
        await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(20))
                .until(() -> store().runsInFlight(List.of(job)).get(0).nextLeaseEndMillis() == 0);
    }

    private void awaitExpired(String job, Instant slot) {
        await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(20))
                .until(() -> store().runsInFlight(List.of(job)).get(0), (RunsInFlight r) -> r.expired().contains(slot));
    }
}
