package io.lockstep.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lockstep.scheduler.config.RedisSettings;
import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.ClaimResult;
import io.lockstep.scheduler.lock.Completion;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.Outcome;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The scheduler's store over 5 independent masters ({@code redis.redlock}), against real
 * redis-server processes: decisions by majority, split votes given back, fencing tokens that never
 * go back across majorities, and the restart quarantine with its negative control.
 */
class RedlockStoreTest {

    private static final Duration GRACE = Duration.ofSeconds(30);
    private static final Duration LEASE = Duration.ofSeconds(5);

    private LocalRedlock nodes;
    private final List<RedisLockProvider> providers = new ArrayList<>();

    @BeforeEach
    void start() {
        nodes = new LocalRedlock(5);
    }

    @AfterEach
    void stop() {
        providers.forEach(RedisLockProvider::close);
        nodes.close();
    }

    /** A provider over the 5 masters; {@code quarantine} empty: auto (the longest record ttl). */
    private RedisLockProvider redlock(Optional<Duration> quarantine) {
        RedisLockProvider p = RedisLockProvider.builder().settings(new RedisSettings(
                new RedisSettings.Redlock(nodes.names(), Duration.ofMillis(300), quarantine), "lockstep", Duration.ofSeconds(1),
                Optional.empty(), Optional.empty(), RedisSettings.Tls.OFF, 0, RedisSettings.DEFAULT_WAIT_TIMEOUT)).build();
        providers.add(p);
        return p;
    }

    /** A plain provider on master {@code i} alone, to write what a worker wrote there. */
    private RedisLockProvider single(int i) {
        RedisLockProvider p = RedisLockProvider.builder().uri(nodes.servers.get(i).uri()).build();
        providers.add(p);
        return p;
    }

    private static String job() {
        return RedisFixture.job();
    }

    private static ClaimRequest claim(String job, Instant slot, String token) {
        return new ClaimRequest(new Lease(job, slot, token, LEASE, true), "w-" + token, GRACE, false);
    }

    private Instant slotNow(RedisLockProvider p) {
        return Instant.ofEpochMilli(p.serverTimeMillis() / 1000 * 1000);
    }

    private ClaimResult.Status status(RedisLockProvider p, ClaimRequest request) {
        return p.claim(List.of(request)).get(0).status();
    }

    @Test
    void aMajorityDecidesAndTheAgreedTokenIsOnEveryRecord() {
        RedisLockProvider p = redlock(Optional.of(Duration.ZERO));
        String job = job();
        Instant slot = slotNow(p);
        ClaimResult won = p.claim(List.of(claim(job, slot, "a"))).get(0);
        assertThat(won.status()).isEqualTo(ClaimResult.Status.CLAIMED);
        assertThat(status(p, claim(job, slot, "b"))).isEqualTo(ClaimResult.Status.TAKEN);
        for (int i = 0; i < 5; i++) {
            assertThat(nodes.clients.get(i).hget(p.keys().slot(job, slot.toEpochMilli()), "fence"))
                    .as("master %d's record carries the agreed token", i).isEqualTo(Long.toString(won.fencingToken()));
        }
        Lease lease = claim(job, slot, "a").lease();
        assertThat(p.renew(List.of(lease))).containsExactly(true);
        assertThat(p.complete(List.of(new Completion(lease, Outcome.SUCCEEDED)))).containsExactly(true);
        assertThat(p.renew(List.of(claim(job, slot, "b").lease()))).containsExactly(false);
    }

    @Test
    void aSplitVoteIsGivenBackEverywhereAndAnsweredNoQuorum() {
        RedisLockProvider p = redlock(Optional.of(Duration.ZERO));
        String job = job();
        Instant slot = slotNow(p);
        // Two other workers each won two masters of the slot.
        for (int i : List.of(0, 1)) {
            assertThat(status(single(i), claim(job, slot, "x"))).isEqualTo(ClaimResult.Status.CLAIMED);
        }
        for (int i : List.of(2, 3)) {
            assertThat(status(single(i), claim(job, slot, "y"))).isEqualTo(ClaimResult.Status.CLAIMED);
        }
        // Ours wins only the fifth: no token has a majority, so ours is given back there.
        assertThat(status(p, claim(job, slot, "z"))).isEqualTo(ClaimResult.Status.NO_QUORUM);
        assertThat(nodes.clients.get(4).exists(p.keys().slot(job, slot.toEpochMilli()))).isFalse();
        assertThat(nodes.clients.get(4).exists(p.keys().lease(claim(job, slot, "z").lease()))).isFalse();
        // Once x holds three masters, the slot is x's: z steps aside.
        assertThat(status(single(4), claim(job, slot, "x"))).isEqualTo(ClaimResult.Status.CLAIMED);
        assertThat(status(p, claim(job, slot, "z"))).isEqualTo(ClaimResult.Status.TAKEN);
    }

    @Test
    void fencingTokensNeverGoBackAcrossMajoritiesThatDiffer() {
        RedisLockProvider p = redlock(Optional.of(Duration.ZERO));
        String job = job();
        long ahead = System.currentTimeMillis() * 1000 + Duration.ofHours(1).toNanos() / 1000;
        nodes.clients.get(4).set(p.keys().fence(job), Long.toString(ahead));
        Instant slot = slotNow(p);
        ClaimResult first = p.claim(List.of(claim(job, slot.minusSeconds(2), "a"))).get(0);
        assertThat(first.fencingToken()).isEqualTo(ahead + 1);
        p.complete(List.of(new Completion(claim(job, slot.minusSeconds(2), "a").lease(), Outcome.SUCCEEDED)));

        nodes.servers.get(3).kill();
        nodes.servers.get(4).kill();
        ClaimResult second = p.claim(List.of(claim(job, slot.minusSeconds(1), "b"))).get(0);
        assertThat(second.status()).isEqualTo(ClaimResult.Status.CLAIMED);
        assertThat(second.fencingToken()).isGreaterThan(first.fencingToken());
    }

    /**
     * The double run the quarantine prevents. A slot ran while two masters were down, so its record
     * is on exactly three. One of those three restarts empty, and the two others come back empty
     * too: without the quarantine, a late worker (within the slot's grace) wins the three empty
     * masters and runs the slot again; with it, those masters do not count and nobody wins.
     */
    @Test
    void aMasterRestartedEmptyDoesNotVoteWithinItsQuarantine() {
        // The quarantine is shortened to 8 s (it is the longest record ttl, minutes, by default), so
        // that the masters started for the test count before the restarts; the restarted ones stay
        // within it for the rest of the test.
        Duration quarantine = Duration.ofSeconds(8);
        nodes.awaitUptime(quarantine.toSeconds());
        RedisLockProvider first = redlock(Optional.of(quarantine));
        String job = job();
        Instant slot = slotNow(first);
        nodes.servers.get(3).kill();
        nodes.servers.get(4).kill();
        assertThat(status(first, claim(job, slot, "a"))).isEqualTo(ClaimResult.Status.CLAIMED);
        nodes.servers.get(2).restart();
        nodes.servers.get(3).restart();
        nodes.servers.get(4).restart();

        RedisLockProvider guarded = redlock(Optional.of(quarantine));
        // (The first try may meet broken pooled connections instead; the answer is the same: no decision.)
        assertThatThrownBy(() -> status(guarded, claim(job, slot, "late"))).isInstanceOf(LockException.class);
        assertThatThrownBy(() -> status(guarded, claim(job, slot, "late")))
                .as("3 of 5 masters restarted within the quarantine: no majority counts")
                .isInstanceOf(LockException.class).hasMessageContaining("only 2 of 5").hasMessageContaining("quarantined");

        RedisLockProvider unguarded = redlock(Optional.of(Duration.ZERO));
        assertThat(status(unguarded, claim(job, slot, "late")))
                .as("negative control: without the quarantine the slot is won a second time").isEqualTo(ClaimResult.Status.CLAIMED);
    }

    @Test
    void theQuarantineGrowsToTheLongestRecordTtlOfTheClaimsMade() {
        // Auto (the default): fresh masters, up for less than the record ttl of the claim (minutes),
        // do not count. This is what a brand-new deployment waits out once.
        RedisLockProvider p = redlock(Optional.empty());
        assertThatThrownBy(() -> status(p, claim(job(), slotNow(p), "a"))).isInstanceOf(LockException.class)
                .hasMessageContaining("not yet past the restart quarantine (" + claim("j", Instant.EPOCH, "a").recordTtl().toSeconds()
                        + " s; counted once uptime reads more)");
    }

    @Test
    void aQuarantinedMastersAnswersDoNotCountForRenewalsAndCompletions() {
        RedisLockProvider p = redlock(Optional.of(Duration.ofSeconds(5)));
        nodes.awaitUptime(5);
        String job = job();
        Instant slot = slotNow(p);
        Lease lease = claim(job, slot, "a").lease();
        assertThat(status(p, claim(job, slot, "a"))).isEqualTo(ClaimResult.Status.CLAIMED);
        nodes.servers.get(0).restart();
        nodes.servers.get(1).kill();
        nodes.servers.get(2).kill();
        // Two live masters that count and one restarted: fewer than a majority can confirm anything.
        assertThatThrownBy(() -> p.renew(List.of(lease))).isInstanceOf(LockException.class);
        assertThatThrownBy(() -> p.renew(List.of(lease))).isInstanceOf(LockException.class).hasMessageContaining("quarantined");
        assertThatThrownBy(() -> p.complete(List.of(new Completion(lease, Outcome.SUCCEEDED))))
                .isInstanceOf(LockException.class).hasMessageContaining("quarantined");
    }

    @Test
    void operatorsSeeAndSteerTheMastersAsOneWithAMasterDown() {
        RedisLockProvider p = redlock(Optional.of(Duration.ZERO));
        RedisAdmin admin = RedisAdmin.of(p);
        String job = job();
        nodes.servers.get(0).kill();
        admin.pause(job, "maintenance", Optional.empty(), "ops");
        assertThat(admin.job(job, 5).pause()).hasValueSatisfying(pause -> assertThat(pause.note()).isEqualTo("maintenance"));
        Instant slot = slotNow(p);
        assertThat(status(p, claim(job, slot, "a"))).isEqualTo(ClaimResult.Status.PAUSED);
        assertThat(admin.resume(job)).isTrue();

        Instant earlier = slot.minusSeconds(1);
        assertThat(status(p, claim(job, earlier, "b"))).isEqualTo(ClaimResult.Status.CLAIMED);
        assertThat(admin.job(job, 5).running()).singleElement().satisfies(f -> assertThat(f.slot()).isEqualTo(earlier));
        p.complete(List.of(new Completion(claim(job, earlier, "b").lease(), Outcome.SUCCEEDED)));
        assertThat(admin.history(job, 10)).as("one run and one paused slot, though four masters recorded each")
                .extracting(RedisAdmin.Run::slot, RedisAdmin.Run::outcome)
                .containsExactly(org.assertj.core.groups.Tuple.tuple(slot, "paused"), org.assertj.core.groups.Tuple.tuple(earlier, "succeeded"));
        assertThat(admin.runOf(job, earlier)).containsEntry("state", "done");

        Instant manual = admin.trigger(job);
        Instant now = Instant.ofEpochMilli(p.serverTimeMillis());
        io.lockstep.scheduler.lock.WorkerInfo self = new io.lockstep.scheduler.lock.WorkerInfo("w", "h", 1, "v", now, 1, 0, "c", now);
        assertThat(p.heartbeat(self, Duration.ofSeconds(10)).triggers())
                .contains(new io.lockstep.scheduler.lock.Heartbeat.Trigger(job, manual));
        assertThat(admin.workers()).extracting(io.lockstep.scheduler.lock.WorkerInfo::id).containsExactly("w");
    }

    @Test
    void aMasterThatRefusesThePasswordStopsTheStartWhateverTheOthersSay() {
        nodes.servers.get(2).close();
        LocalRedisServer guarded = LocalRedisServer.start("--requirepass", "not-ours");
        try {
            List<String> names = new ArrayList<>(nodes.names());
            names.set(2, guarded.host() + ":" + guarded.port());
            RedisLockProvider p = RedisLockProvider.builder().settings(new RedisSettings(
                    new RedisSettings.Redlock(names, Duration.ofMillis(300), Optional.of(Duration.ZERO)), "lockstep", Duration.ofSeconds(1),
                    Optional.empty(), Optional.empty(), RedisSettings.Tls.OFF, 0, RedisSettings.DEFAULT_WAIT_TIMEOUT)).build();
            providers.add(p);
            // A config mistake is never outvoted: one line that names the master.
            assertThatThrownBy(p::ping).isInstanceOf(LockException.class)
                    .hasMessageStartingWith("redis " + names.get(2)).hasMessageContaining("authentication failed")
                    .hasMessageNotContaining("\n");
        } finally {
            guarded.close();
        }
    }

    @Test
    void theStartCheckNeedsAMajorityAndNamesTheMastersDown() {
        RedisLockProvider p = redlock(Optional.empty());
        nodes.servers.get(0).kill();
        nodes.servers.get(1).kill();
        p.ping(); // a majority answers: the worker may start
        nodes.servers.get(2).kill();
        assertThatThrownBy(p::ping).isInstanceOf(LockException.class)
                .hasMessageContaining("only 2 of 5 masters answer, a majority (3) is needed")
                .hasMessageContaining(nodes.names().get(0));
    }
}
