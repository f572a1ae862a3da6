package io.lockstep.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.ClaimRequest.Mode;
import io.lockstep.scheduler.lock.ClaimResult.Status;
import io.lockstep.scheduler.lock.Expectations;
import io.lockstep.scheduler.lock.Expectations.Notice;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.Outcome;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The judge of expectations (expect.lua) against a real redis-server, fed by the store's real
 * claims, outcomes and decisions: each slot is judged once whichever workers ask, a slot paused or
 * skipped by a calendar is not expected to succeed, a breach is cleared by the next success, the
 * dead-man's switch breaches once per silence, and a verdict its worker did not deliver goes to
 * another after its lease, saying whether it was logged.
 */
class RedisExpectationsTest {

    private static final Duration LEASE = Duration.ofSeconds(10);
    private static final Duration GRACE = Duration.ofSeconds(10);
    private static final Duration DELIVERY = Duration.ofSeconds(30);

    @RegisterExtension
    static final RedisFixture redis = RedisFixture.of(b -> b);

    private static Expectations store() {
        return redis.provider().expectations().orElseThrow();
    }

    private static Status claim(String job, Instant slot, String token, Mode mode, String code) {
        return redis.provider().claim(List.of(new ClaimRequest(new Lease(job, slot, token, LEASE, true), "w-" + token, GRACE, mode,
                false, false, Duration.ZERO, null, code))).get(0).status();
    }

    private static void run(String job, Instant slot, String token, Outcome outcome) {
        assertThat(claim(job, slot, token, Mode.CLAIM, null)).isEqualTo(Status.CLAIMED);
        assertThat(redis.provider().complete(new Lease(job, slot, token, LEASE, true), outcome)).isTrue();
    }

    /** Two workers asking in turn, as live workers do, each with the slots its own schedule says are due. */
    private static class Judges {
        final String job;
        final String spec;
        final long within;
        final long every;
        final Duration delivery;
        final List<Notice> heard = new ArrayList<>();
        long through;
        long now;

        Judges(String job, long within, long every, Duration delivery) {
            this.job = job;
            this.within = within;
            this.every = every;
            this.delivery = delivery;
            this.spec = "w=" + within + ";e=" + every;
        }

        List<Notice> ask(String worker, List<Instant> slots) {
            List<Instant> due = through == 0 ? List.of() : slots.stream().filter(s -> s.toEpochMilli() > through).toList();
            Expectations.Judgement j = store().judge(job, spec, within, every, due, worker, delivery);
            through = j.judgedThroughMillis();
            now = j.nowMillis();
            heard.addAll(j.notices());
            return j.notices();
        }
    }

    @Test
    void eachSlotIsJudgedOnceWhoeverAsksAndOnlySlotsRunOnPurposeAreExempt() {
        String job = RedisFixture.job();
        Judges judges = new Judges(job, 3_000, 0, DELIVERY);
        judges.ask("w1", List.of()); // the expectation is first judged now: slots before now less 3 s are not
        Instant t0 = Instant.ofEpochMilli(judges.now);
        Instant ok = t0.minusMillis(2_500);
        Instant failed = t0.minusMillis(2_400);
        Instant missed = t0.minusMillis(2_300);
        Instant silent = t0.minusMillis(2_200);
        Instant calendar = t0.minusMillis(2_100);
        Instant calendar2 = t0.minusMillis(2_050);
        Instant paused = t0.minusMillis(2_000);
        Instant paused2 = t0.minusMillis(1_950);
        Instant lateOk = t0.minusMillis(1_000);
        run(job, ok, "a", Outcome.SUCCEEDED);
        run(job, failed, "b", Outcome.FAILED);
        assertThat(claim(job, missed, "c", Mode.MISS_ONLY, "no_thread")).isEqualTo(Status.MISSED);
        assertThat(claim(job, calendar, "e", Mode.SKIP_ONLY, "calendar")).isEqualTo(Status.SKIPPED);
        assertThat(claim(job, calendar2, "e2", Mode.SKIP_ONLY, "calendar")).isEqualTo(Status.SKIPPED);
        RedisAdmin admin = RedisAdmin.of(redis.provider());
        admin.pause(job, "maintenance", Optional.empty(), "test");
        assertThat(claim(job, paused, "f", Mode.CLAIM, null)).isEqualTo(Status.PAUSED);
        assertThat(claim(job, paused2, "f2", Mode.CLAIM, null)).isEqualTo(Status.PAUSED);
        admin.resume(job);
        List<Instant> slots = List.of(ok, failed, missed, silent, calendar, calendar2, paused, paused2, lateOk);

        // lateOk's run begins in time and ends after its deadline (slot + 3 s)
        assertThat(claim(job, lateOk, "g", Mode.CLAIM, null)).isEqualTo(Status.CLAIMED);
        await().atMost(Duration.ofSeconds(10)).until(() -> { // judged while lateOk runs: every slot before it
            judges.ask(judges.heard.size() % 2 == 0 ? "w1" : "w2", slots);
            return judges.through >= paused2.toEpochMilli();
        });
        assertThat(judges.through).as("lateOk is not due yet").isLessThan(lateOk.toEpochMilli());
        await().atMost(Duration.ofSeconds(10)).until(() -> redis.serverNow().isAfter(lateOk.plusMillis(3_000)));
        assertThat(redis.provider().complete(new Lease(job, lateOk, "g", LEASE, true), Outcome.SUCCEEDED)).isTrue();
        judges.ask("w2", slots); // reads the success (clearing the open breach), then judges lateOk: late
        assertThat(judges.through).isEqualTo(lateOk.toEpochMilli());
        for (int i = 0; i < 5; i++) { // asked again and again by both: nothing is decided twice
            judges.ask("w1", slots);
            judges.ask("w2", slots);
        }

        Map<Long, List<Notice>> breaches = judges.heard.stream().filter(Notice::breached)
                .collect(Collectors.groupingBy(Notice::slotMillis));
        assertThat(breaches.keySet()).as("the slots that did not succeed in time, no other (each paused or skipped slot exempt)")
                .containsExactlyInAnyOrder(failed.toEpochMilli(), missed.toEpochMilli(), silent.toEpochMilli(), lateOk.toEpochMilli());
        assertThat(breaches.values()).as("each once").allSatisfy(n -> assertThat(n).hasSize(1));
        assertThat(breaches.get(failed.toEpochMilli()).get(0).happened()).isEqualTo("failed");
        assertThat(breaches.get(missed.toEpochMilli()).get(0).happened()).isEqualTo("missed (no_thread)");
        assertThat(breaches.get(silent.toEpochMilli()).get(0).happened()).isEqualTo("no outcome");
        assertThat(breaches.get(failed.toEpochMilli()).get(0).deadlineMillis()).isEqualTo(failed.toEpochMilli() + 3_000);
        assertThat(judges.heard.stream().filter(n -> !n.breached()).map(Notice::id))
                .as("lateOk's late success clears the breaches open when it is read, once; lateOk's own breach, decided after it, "
                        + "is cleared as soon as it is decided")
                .containsExactly("succeededWithin:" + silent.toEpochMilli() + ":met", "succeededWithin:" + lateOk.toEpochMilli() + ":met");
        assertThat(breaches.get(lateOk.toEpochMilli()).get(0).happened()).isEqualTo("succeeded late");
        assertThat(store().states(List.of(job)).get(job).breached()).isFalse();
    }

    @Test
    void theDeadMansSwitchBreachesOncePerSilenceAndTheNextSuccessClearsIt() {
        String job = RedisFixture.job();
        Judges judges = new Judges(job, 0, 1_500, DELIVERY);
        judges.ask("w1", List.of());
        run(job, Instant.ofEpochMilli(judges.now - 100), "a", Outcome.SUCCEEDED);
        judges.ask("w2", List.of());
        assertThat(judges.heard).isEmpty();
        await().atMost(Duration.ofSeconds(10)).until(() -> !judges.ask("w1", List.of()).isEmpty());
        long breachedAt = judges.now;
        assertThat(store().states(List.of(job)).get(job).breached()).isTrue();
        await().atMost(Duration.ofSeconds(5)).until(() -> {
            judges.ask("w2", List.of());
            judges.ask("w1", List.of());
            return judges.now > breachedAt + 1_500; // a whole second window of silence more
        });
        assertThat(judges.heard).as("one breach however long the silence and whoever asks").singleElement()
                .satisfies(n -> assertThat(n.breached()).isTrue());

        run(job, Instant.ofEpochMilli(judges.now - 100), "b", Outcome.SUCCEEDED);
        judges.ask("w2", List.of());
        judges.ask("w1", List.of());
        assertThat(judges.heard).hasSize(2);
        assertThat(judges.heard.get(1).kind()).isEqualTo("met");
        assertThat(store().states(List.of(job)).get(job).breached()).isFalse();
    }

    @Test
    void aVerdictItsWorkerDidNotDeliverGoesToAnotherAfterItsLeaseSayingWhetherItWasLogged() {
        String job = RedisFixture.job();
        Judges judges = new Judges(job, 0, 1_000, Duration.ofMillis(500));
        judges.ask("w1", List.of());
        await().atMost(Duration.ofSeconds(10)).until(() -> !judges.ask("w1", List.of()).isEmpty());
        Notice breach = judges.heard.get(0);
        assertThat(breach.logged()).isFalse();
        store().logged(job, breach.id()); // w1 wrote the event, then died before delivering it

        List<Notice> taken = new ArrayList<>();
        await().atMost(Duration.ofSeconds(10)).until(() -> {
            taken.addAll(judges.ask("w2", List.of()));
            return !taken.isEmpty();
        });
        assertThat(judges.now).as("not before the lease ran out").isGreaterThanOrEqualTo(breach.decidedMillis() + 500);
        assertThat(taken).singleElement().satisfies(n -> {
            assertThat(n.id()).isEqualTo(breach.id());
            assertThat(n.logged()).as("w2 does not log it again").isTrue();
        });
        assertThat(store().sending(job, breach.id(), "w1", Duration.ofMillis(500))).as("w1, woken: it is w2's now, not sent").isFalse();
        assertThat(store().sending(job, breach.id(), "w2", Duration.ofSeconds(30))).isTrue();
        store().delivered(job, breach.id());
        long delivered = judges.now;
        await().atMost(Duration.ofSeconds(5)).until(() -> {
            assertThat(judges.ask("w3", List.of())).as("delivered: nobody gets it again").isEmpty();
            return judges.now > delivered + 1_200; // past two more leases
        });
    }

    @Test
    void afterAChangeOfTheExpectationOrTheScheduleTheSlotsDueBeforeItAreNotJudged() {
        String job = RedisFixture.job();
        Judges before = new Judges(job, 1_500, 0, DELIVERY);
        before.ask("w1", List.of());
        Instant slot = Instant.ofEpochMilli(before.now - 500);
        run(job, slot, "a", Outcome.FAILED);
        before.ask("w1", List.of(slot)); // not due yet
        // A reload moves the cron (the spec names the schedule): the failed slot was the old schedule's.
        Judges after = new Judges(job, 1_500, 0, DELIVERY) {
            @Override
            List<Notice> ask(String worker, List<Instant> slots) {
                Expectations.Judgement j = store().judge(job, spec + ";s=other", within, every,
                        slots.stream().filter(x -> x.toEpochMilli() > through).toList(), worker, delivery);
                through = j.judgedThroughMillis();
                now = j.nowMillis();
                heard.addAll(j.notices());
                return j.notices();
            }
        };
        after.through = before.through;
        await().atMost(Duration.ofSeconds(10)).until(() -> {
            after.ask("w2", List.of(slot));
            return after.now > slot.toEpochMilli() + 2_000;
        });
        assertThat(after.heard).as("no verdict on a slot due before the change").isEmpty();
    }

    @Test
    void aDeadMansSwitchAloneKeepsNoFates() {
        String job = RedisFixture.job();
        Judges judges = new Judges(job, 0, 60_000, DELIVERY);
        judges.ask("w1", List.of());
        for (int i = 0; i < 5; i++) {
            run(job, Instant.ofEpochMilli(judges.now - 900 + i * 100), "r" + i, i % 2 == 0 ? Outcome.SUCCEEDED : Outcome.FAILED);
        }
        judges.ask("w2", List.of());
        assertThat(redis.raw().zcard(new RedisKeys(RedisLockProvider.DEFAULT_KEY_PREFIX, false).expectFates(job)))
                .as("nothing to judge per slot: nothing kept per slot").isZero();
        assertThat(store().states(List.of(job)).get(job).lastSuccessMillis()).isPositive();
    }

    /**
     * A worker's looks at all its jobs in one call ({@link Expectations#judge(List, String, Duration)}):
     * each job judged as it would be alone, and all of them in one round trip, not one per job. The
     * requests cross a proxy that holds each back 100 ms: one by one, 30 looks would take 3 s.
     */
    @Test
    void aWorkersLooksAtAllItsJobsAreJudgedInOneRoundTripEachAsAlone() throws Exception {
        List<String> jobs = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            jobs.add(RedisFixture.job());
        }
        long within = 3_000;
        String spec = "w=" + within + ";e=0";
        try (TcpProxy proxy = TcpProxy.to(redis.server().host(), redis.server().port());
             RedisLockProvider viaProxy = RedisLockProvider.builder().uri(proxy.uri()).build()) {
            Expectations store = viaProxy.expectations().orElseThrow();
            List<Expectations.Judged> first = store.judge(jobs.stream().map(j -> new Expectations.Look(j, spec, within, 0, List.of())).toList(),
                    "w1", DELIVERY);
            assertThat(first).allSatisfy(j -> assertThat(j.failure()).isNull());
            Instant t0 = Instant.ofEpochMilli(first.get(0).judgement().nowMillis());
            Instant slot = t0.plusMillis(200);
            await().atMost(Duration.ofSeconds(5)).until(() -> !redis.serverNow().isBefore(slot));
            for (int i = 0; i < jobs.size(); i++) { // the even jobs fail their slot, the odd ones succeed (within 3 s)
                run(jobs.get(i), slot, "t" + i, i % 2 == 0 ? Outcome.FAILED : Outcome.SUCCEEDED);
            }
            await().atMost(Duration.ofSeconds(10)).until(() -> redis.serverNow().isAfter(slot.plusMillis(within)));
            List<Expectations.Look> looks = jobs.stream().map(j -> new Expectations.Look(j, spec, within, 0, List.of(slot))).toList();
            proxy.delayRequests(100);
            long began = System.nanoTime();
            List<Expectations.Judged> judged = store.judge(looks, "w1", DELIVERY);
            long tookMillis = (System.nanoTime() - began) / 1_000_000;
            proxy.delayRequests(0);
            assertThat(tookMillis).as("30 looks behind a 100 ms delay per request: one round trip, not 30").isLessThan(1_500);
            assertThat(judged).extracting(j -> j.look().job()).containsExactlyElementsOf(jobs);
            for (int i = 0; i < jobs.size(); i++) {
                Expectations.Judged j = judged.get(i);
                String job = jobs.get(i);
                assertThat(j.failure()).isNull();
                assertThat(j.judgement().judgedThroughMillis()).isEqualTo(slot.toEpochMilli());
                List<Notice> breaches = j.judgement().notices().stream().filter(Notice::breached).toList();
                if (i % 2 == 0) {
                    assertThat(breaches).as(job).singleElement().satisfies(n -> {
                        assertThat(n.job()).isEqualTo(job);
                        assertThat(n.happened()).isEqualTo("failed");
                    });
                } else {
                    assertThat(breaches).as(job).isEmpty();
                }
            }
            // The same look once more, one job alone: nothing decided twice.
            Expectations.Judgement again = store.judge(jobs.get(0), spec, within, 0, List.of(slot), "w2", DELIVERY);
            assertThat(again.notices()).filteredOn(n -> !n.id().equals(judged.get(0).judgement().notices().get(0).id())).isEmpty();
        }
    }
}
