package io.lockstep.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.lockstep.scheduler.lock.Backfill;
import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.ClaimRequest.Mode;
import io.lockstep.scheduler.lock.ClaimResult.Status;
import io.lockstep.scheduler.lock.Completion;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.Outcome;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What Redis tells a backfill about slots whose records expired: their history (a run's outcome)
 * and decisions (a miss) still say they were decided while both streams are whole from a margin
 * before them; once a stream was trimmed past a slot, or keeps nothing (history.keep 0), the slot's
 * fate is unknown and the view's {@code knownFrom} says so.
 */
class BackfillViewTest {

    private static final Duration LEASE = Duration.ofSeconds(10);
    private static final Duration GRACE = Duration.ofSeconds(10);
    private static final Duration RECORD_TTL = ClaimRequest.recordTtl(LEASE, GRACE);

    @RegisterExtension
    static final RedisFixture redis = RedisFixture.of(b -> b);

    @RegisterExtension
    static final RedisFixture keepsNone = RedisFixture.of(b -> b.historyKeep(0));

    private static ClaimRequest request(String job, Instant slot, String token, Mode mode) {
        return new ClaimRequest(new Lease(job, slot, token, LEASE, true), "w-" + token, GRACE, mode, false);
    }

    /**
     * Decides two old slots through a backfill (nothing else decides slots this old): one run to its
     * end, one claimed and then disowned (missed), then lets their records go as their ttl would.
     */
    private static List<Instant> decideTwoOldSlots(RedisFixture on, String job, Instant base) {
        Instant ran = base;
        Instant missed = base.plusSeconds(1);
        String id = on.provider().requestBackfill(job, base, base.plusSeconds(2), 10, "test", List.of()).id();
        ClaimRequest run = backfill(job, ran, "r", id);
        assertThat(on.provider().claim(List.of(run)).get(0).status()).isEqualTo(Status.CLAIMED);
        assertThat(on.provider().complete(List.of(new Completion(run.lease(), Outcome.SUCCEEDED)))).containsExactly(true);
        ClaimRequest given = backfill(job, missed, "m", id);
        assertThat(on.provider().claim(List.of(given)).get(0).status()).isEqualTo(Status.CLAIMED);
        assertThat(on.provider().claim(List.of(new ClaimRequest(given.lease(), "w-m", GRACE, Mode.MISS_ONLY, false))).get(0).status())
                .as("given up on: disowned").isEqualTo(Status.MISSED);
        on.provider().cancelBackfill(job);
        on.raw().del(on.provider().keys().slot(job, ran.toEpochMilli()), on.provider().keys().slot(job, missed.toEpochMilli()));
        return List.of(ran, missed);
    }

    private static ClaimRequest backfill(String job, Instant slot, String token, String id) {
        return new ClaimRequest(new Lease(job, slot, token, LEASE, true), "w-" + token, GRACE, Mode.CATCH_UP, false, false,
                Duration.ZERO, null, null, id);
    }

    @Test
    void slotsWhoseRecordsExpiredAreKnownDecidedFromTheHistoryWhileItIsWhole() {
        String job = RedisFixture.job();
        Instant now = redis.serverNow();
        Instant base = now.minus(Duration.ofHours(2)).truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
        List<Instant> decided = decideTwoOldSlots(redis, job, base);
        Instant undecided = base.plusSeconds(2);

        Backfill.View view = redis.provider().backfillView(job, null, List.of(decided.get(0), decided.get(1), undecided), RECORD_TTL);
        assertThat(view.decided()).containsExactlyInAnyOrderElementsOf(decided);
        assertThat(view.knownFrom()).as("the streams were never trimmed: a week back")
                .isBefore(now.minus(Duration.ofDays(6))).isAfter(now.minus(Duration.ofDays(8)));
        assertThat(view.activeId()).isNull();

        // Trim the history past the run (as MAXLEN does once history.keep runs followed it): its fate is no longer known.
        ClaimRequest later = request(job, now.minusSeconds(1), "l", Mode.CLAIM);
        redis.provider().claim(List.of(later));
        redis.provider().complete(List.of(new Completion(later.lease(), Outcome.SUCCEEDED)));
        redis.raw().xtrim(redis.provider().keys().history(job), 1, false);
        Backfill.View trimmed = redis.provider().backfillView(job, null, List.of(decided.get(0), decided.get(1), undecided), RECORD_TTL);
        assertThat(trimmed.knownFrom()).as("the history now reaches less far back than a record lives: the records' reach")
                .isBetween(now.minus(RECORD_TTL).minusSeconds(5), now.minus(RECORD_TTL).plusSeconds(5)).isAfter(undecided);
        assertThat(trimmed.decided()).as("the decisions stream still has the miss").containsExactly(decided.get(1));
    }

    @Test
    void whatWasDecidedWhenTheBackfillWasAskedForStaysDecidedForItWhateverTheHistoryLoses() {
        String job = RedisFixture.job();
        Instant base = redis.serverNow().minus(Duration.ofHours(3)).truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
        String id = redis.provider().requestBackfill(job, base, base.plusSeconds(2), 10, "test", List.of(base.plusSeconds(1))).id();
        List<Instant> asked = List.of(base, base.plusSeconds(1), base.plusSeconds(2));
        assertThat(redis.provider().backfillView(job, id, asked, RECORD_TTL).decided()).containsExactly(base.plusSeconds(1));
        assertThat(redis.provider().backfillView(job, null, asked, RECORD_TTL).decided()).as("not asked by the backfill").isEmpty();
        redis.provider().cancelBackfill(job);
    }

    @Test
    void withoutAHistoryOnlyTheRecordsTell() {
        String job = RedisFixture.job();
        Instant now = keepsNone.serverNow();
        List<Instant> decided = decideTwoOldSlots(keepsNone, job, now.minus(Duration.ofHours(2)));
        Backfill.View view = keepsNone.provider().backfillView(job, null, decided, RECORD_TTL);
        assertThat(view.decided()).isEmpty();
        assertThat(view.knownFrom()).as("as far back as a record lives")
                .isBetween(now.minus(RECORD_TTL).minusSeconds(5), now.minus(RECORD_TTL).plusSeconds(5));
    }
}
