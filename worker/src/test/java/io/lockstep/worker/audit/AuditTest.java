package io.lockstep.worker.audit;

import static io.lockstep.worker.audit.EventLog.at;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lockstep.scheduler.config.ConfigLoader;
import io.lockstep.scheduler.config.LockstepConfig;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The audit on hand-written event streams: each legitimate case holds (a rerun after a lost lease,
 * catch-up, a manual run, a pause, a stale slot, an outage, a vanished worker, time with no worker
 * running), and each violation is named by its check, with the events that show it.
 * Job {@code tick} fires every second (lease 5 s, misfireGrace 2 s); the window is slots 1..10 s.
 */
class AuditTest {

    private static final String JOB = "tick";

    @TempDir
    Path dir;

    private LockstepConfig config;
    private EventLog log;

    @BeforeEach
    void setUp() throws IOException {
        Path file = dir.resolve("jobs.yaml");
        Files.writeString(file, """
                redis:
                  uri: redis://127.0.0.1:6379
                defaults:
                  lease: 5s
                  misfireGrace: 2s
                jobs:
                  - name: tick
                    cron: "* * * * * *"
                    class: com.example.NotLoadedByAudit
                  - name: off
                    cron: "* * * * * *"
                    class: com.example.NotLoadedByAudit
                    enabled: false
                """);
        config = ConfigLoader.defaults().checkingClasses(false).load(file);
        log = new EventLog().workerStarted("w1", -5).workerStarted("w2", -5);
    }

    /** Slots 1..10 run once each, alternating workers, tokens rising with the slot; {@code except} left to the test. */
    private EventLog everySlotRunsOnce(Set<Integer> except) {
        for (int s = 1; s <= 10; s++) {
            if (!except.contains(s)) {
                log.run(s % 2 == 0 ? "w2" : "w1", JOB, s, 1000 + s * 10L);
            }
        }
        return log;
    }

    private AuditReport audit() throws Audit.BadInput {
        return audit(Audit.Options.defaults());
    }

    private AuditReport audit(Audit.Options base) throws Audit.BadInput {
        Path file = log.write(dir, "events.log");
        Audit.Options options = new Audit.Options(at(1), at(10), null, base.tolerance(), base.stopAllowance());
        return Audit.run(List.of(file.toString()), InputStream(), config, options);
    }

    private static ByteArrayInputStream InputStream() {
        return new ByteArrayInputStream(new byte[0]);
    }

    private static void assertHolds(AuditReport report) {
        assertThat(report.violations()).as("violations").isEmpty();
        assertThat(report.holds()).isTrue();
    }

    private static void assertOnly(AuditReport report, String check, int count) {
        assertThat(report.violations()).as("violations").allSatisfy(v -> assertThat(v.check()).isEqualTo(check));
        assertThat(report.violationsByCheck().get(check)).isEqualTo(count);
        assertThat(report.holds()).isFalse();
    }

    /** Puts in force a config of the usual redis and defaults with {@code rest} (its calendars and jobs). */
    private void useConfig(String name, String rest) throws IOException {
        Path file = dir.resolve(name);
        Files.writeString(file, "redis:\n  uri: redis://127.0.0.1:6379\ndefaults:\n  lease: 5s\n  misfireGrace: 2s\n" + rest);
        config = ConfigLoader.defaults().checkingClasses(false).load(file);
    }

    /** The config with slots 3 and 4 (10:00:03 to 10:00:05 on Tuesday 2026-12-01) in a calendar tick skips on. */
    private void withFreezeCalendar() throws IOException {
        useConfig("calendar.yaml", """
                calendars:
                  freeze: { zone: UTC, weekly: ["TUE 10:00:03-10:00:05"] }
                jobs:
                  - name: tick
                    cron: "* * * * * *"
                    class: com.example.NotLoadedByAudit
                    skipOn: [freeze]
                """);
    }

    private void calendarSkip(String worker, int slot) {
        log.event(slot, "slot_skipped", worker, "\"job\":\"" + JOB + "\",\"slot\":\"" + EventLog.iso(slot)
                + "\",\"lock_name\":\"k\",\"reason\":\"calendar: skipOn freeze\",\"code\":\"calendar\"");
    }

    /** A backfill's run of slot {@code slot}, {@code at} seconds, under {@code token}: claimed and started long after its slot. */
    private void backfillRun(String worker, int slot, double at, long token) {
        backfillRun(worker, slot, at, token, "b1");
    }

    private void backfillRun(String worker, int slot, double at, long token, String backfill) {
        String fields = "\"job\":\"" + JOB + "\",\"slot\":\"" + EventLog.iso(slot) + "\",\"lock_name\":\"k\",\"fencing_token\":" + token;
        long lateness = Math.round((at - slot) * 1000);
        log.event(at, "slot_claimed", worker, fields + ",\"success\":true,\"lateness_ms\":" + lateness + ",\"origin\":\"backfill\",\"backfill\":\""
                + backfill + "\"");
        log.event(at + 0.001, "job_started", worker, fields + ",\"attempt\":1,\"lateness_ms\":" + lateness + ",\"origin\":\"backfill\",\"backfill\":\""
                + backfill + "\"");
        log.succeeded(worker, JOB, slot, token, at + 0.01);
        log.released(worker, JOB, slot, token, at + 0.012, true, "succeeded");
    }

    @Test
    void aBackfillsRunsHoldOutsideTheSchedulesGraceAndOrderAndAForgedSecondRunOfOneIsNamed() throws Exception {
        everySlotRunsOnce(Set.of(3, 4, 5, 6)); // the cluster decided none of 3..6 (all its workers stalled, say)
        for (int s = 3; s <= 6; s++) {
            backfillRun("w1", s, 12 + s * 0.1, 5000 + s); // later, under higher tokens than slot 10's, in their own order
        }
        log.workerStopped("w1", 20).workerStopped("w2", 20);
        assertHolds(audit());

        log.started("w2", JOB, 4, 7777, 9300, ""); // a second run of a backfilled slot, with no recovery before it
        AuditReport forged = audit();
        assertOnly(forged, "second-run", 1);
        assertThat(forged.violations().get(0).slot()).isEqualTo(at(4));

        log = new EventLog().workerStarted("w1", -5).workerStarted("w2", -5);
        everySlotRunsOnce(Set.of(3, 4, 5, 6));
        backfillRun("w1", 3, 14, 5003);
        backfillRun("w1", 4, 12, 5004); // the backfill's own order broken: slot 4 started before slot 3
        log.workerStopped("w1", 20).workerStopped("w2", 20);
        AuditReport outOfOrder = audit();
        assertThat(outOfOrder.violations()).extracting(v -> v.check()).contains("start-order");
    }

    @Test
    void aBackfillsSlotsBeforeTheWindowAreCheckedToo() throws Exception {
        everySlotRunsOnce(Set.of());
        backfillRun("w1", -30, 12, 6001); // slots long before the workers' events: the window starts at slot 1
        backfillRun("w1", -29, 12.5, 6002);
        log.workerStopped("w1", 20).workerStopped("w2", 20);
        backfillRun("w2", -40, 14, 6101, "b2"); // a later backfill of older slots: its own order, not b1's
        backfillRun("w2", -39, 14.5, 6102, "b2");
        AuditReport holds = audit();
        assertHolds(holds);
        assertThat(holds.backfilledRuns).isEqualTo(4);

        log.started("w2", JOB, -29, 7001, 41_700, ""); // a forged second run of a backfilled slot outside the window
        AuditReport forged = audit();
        assertOnly(forged, "second-run", 1);
        assertThat(forged.violations().get(0).slot()).isEqualTo(at(-29));
    }

    @Test
    void slotsACalendarExcludesHoldWhenSkippedAndAreViolationsWhenTheyRun() throws Exception {
        withFreezeCalendar();
        everySlotRunsOnce(Set.of(3, 4)).workerStopped("w1", 20).workerStopped("w2", 20);
        calendarSkip("w1", 3);
        calendarSkip("w2", 4);
        assertHolds(audit());

        log = new EventLog().workerStarted("w1", -5).workerStarted("w2", -5);
        everySlotRunsOnce(Set.of(4, 6)).workerStopped("w1", 20).workerStopped("w2", 20); // slot 3 runs: forged
        calendarSkip("w2", 4);
        calendarSkip("w1", 6); // slot 6 is not in the calendar
        AuditReport report = audit();
        assertOnly(report, "calendar", 2);
        assertThat(report.violations()).extracting(v -> v.slot() + " " + v.message()).containsExactlyInAnyOrder(
                at(3) + " ran, although its calendars exclude it (skipOn freeze)",
                at(6) + " reported skipped for its calendars by w1, but the config in force then does not exclude it");
    }

    @Test
    void aLabelledJobThatRanOnAWorkerWithoutItsLabelsIsAViolation() throws Exception {
        useConfig("labels.yaml", """
                jobs:
                  - name: tick
                    cron: "* * * * * *"
                    class: com.example.NotLoadedByAudit
                    runOn: { labels: [gpu] }
                """);
        log = new EventLog().event(-6, "config_loaded", "w1", "\"labels\":[\"gpu\",\"ssd\"]").workerStarted("w1", -5)
                .event(-6, "config_loaded", "w2", "\"labels\":[]").workerStarted("w2", -5);
        for (int s = 1; s <= 10; s++) {
            log.run(s == 4 ? "w2" : "w1", JOB, s, 1000 + s * 10L);
        }
        log.workerStopped("w1", 20).workerStopped("w2", 20);
        AuditReport report = audit();
        assertOnly(report, "labels", 1);
        assertThat(report.violations()).singleElement().satisfies(v -> assertThat(v.message())
                .isEqualTo("ran on w2, which has labels [], but the job runs only on workers with [gpu]"));
    }

    @Test
    void anEveryWorkerJobIsCheckedOncePerWorkerAndItsOwnSlotsAlone() throws Exception {
        useConfig("every.yaml", """
                jobs:
                  - name: tick
                    cron: "* * * * * *"
                    class: com.example.NotLoadedByAudit
                    runOn: every-worker
                """);
        for (int s = 1; s <= 10; s++) {
            log.run("w1", JOB + "@w1", s, 1000 + s * 10L);
            log.run("w2", JOB + "@w2", s, 1000 + s * 10L); // the same slot on each worker: each its own instance
        }
        log.workerStopped("w1", 20).workerStopped("w2", 20);
        AuditReport report = audit();
        assertHolds(report);
        assertThat(report.startedOnce).isEqualTo(20);

        log = new EventLog().workerStarted("w1", -5).workerStarted("w2", -5);
        for (int s = 1; s <= 10; s++) {
            log.run("w1", JOB + "@w1", s, 1000 + s * 10L);
            if (s != 7) {
                log.run("w2", JOB + "@w2", s, 1000 + s * 10L);
            }
        }
        log.run("w2", JOB + "@w1", 5, 2000); // w2 ran w1's instance's slot: a second run of it
        log.workerStopped("w1", 20).workerStopped("w2", 20);
        report = audit();
        assertThat(report.violations()).extracting(v -> v.check() + " " + v.job() + " " + v.slot())
                .containsExactlyInAnyOrder("second-run tick@w1 " + at(5), "silent-slot tick@w2 " + at(7));
    }

    // ---- legitimate histories: every check holds ----

    @Test
    void aCleanHistoryHolds() throws Exception {
        everySlotRunsOnce(Set.of()).workerStopped("w1", 20).workerStopped("w2", 20);
        AuditReport report = audit();
        assertHolds(report);
        assertThat(report.slotsChecked()).isEqualTo(10);
        assertThat(report.startedOnce).isEqualTo(10);
        assertThat(report.unverified()).isEmpty();
    }

    @Test
    void aRerunAfterALostLeaseUnderAHigherTokenHolds() throws Exception {
        everySlotRunsOnce(Set.of(3)).workerStopped("w1", 20).workerStopped("w2", 20);
        log.claimed("w1", JOB, 3, 1030).started("w1", JOB, 3, 1030, 3, "")
                .leaseLost("w1", JOB, 3, 1030, 8.5).failed("w1", JOB, 3, 1030, 8.6, "lease lost")
                .recovered("w2", JOB, 3, 1200, 9.0).started("w2", JOB, 3, 1200, 6010, "\"rerun\":true")
                .succeeded("w2", JOB, 3, 1200, 9.1);
        AuditReport report = audit();
        assertHolds(report); // the rerun starts after slots 4..9 and above their tokens: the exception to the order
        assertThat(report.rerunSlots).isEqualTo(1);
        assertThat(report.startedOnce).isEqualTo(9);
    }

    /** Test audit GG7: a rerun decided after later slots started must hold a token above theirs. */
    @Test
    void aRerunStartedAfterLaterSlotsUnderALowerTokenThanTheirsIsAViolation() throws Exception {
        everySlotRunsOnce(Set.of(3)).workerStopped("w1", 20).workerStopped("w2", 20);
        log.claimed("w1", JOB, 3, 1030).started("w1", JOB, 3, 1030, 3, "")
                .leaseLost("w1", JOB, 3, 1030, 8.5).failed("w1", JOB, 3, 1030, 8.6, "lease lost")
                .recovered("w2", JOB, 3, 1065, 9.4).started("w2", JOB, 3, 1065, 6500, "\"rerun\":true") // decided at 9.4, after slots 4..9 started
                .succeeded("w2", JOB, 3, 1065, 9.6);
        AuditReport report = audit();
        // Above slots 4..6's tokens (1040..1060), below those of slots 7, 8 and 9, which all started before it.
        assertOnly(report, "token-order", 3);
        assertThat(report.violations()).allSatisfy(v -> assertThat(v.slot()).isEqualTo(at(3)))
                .extracting(v -> v.message()).anySatisfy(m -> assertThat(m).contains("the later slot " + at(7) + " started, yet under a"
                        + " lower token than its 1070"));
    }

    /** A rerun decided before a later slot's claim, which started before the rerun's own start (in no set order): no violation. */
    @Test
    void aRerunDecidedBeforeALaterSlotButStartedAfterItHolds() throws Exception {
        everySlotRunsOnce(Set.of(3)).workerStopped("w1", 20).workerStopped("w2", 20);
        log.claimed("w1", JOB, 3, 1030).started("w1", JOB, 3, 1030, 3, "")
                .leaseLost("w1", JOB, 3, 1030, 8.5).failed("w1", JOB, 3, 1030, 8.55, "lease lost")
                // decided at 8.6 (above slot 8's token, started at 8.003), began at 9.5: after slot 9's start, below its token
                .recovered("w2", JOB, 3, 1085, 8.6).started("w2", JOB, 3, 1085, 6500, "\"rerun\":true")
                .succeeded("w2", JOB, 3, 1085, 9.6);
        assertHolds(audit());
    }

    @Test
    void catchUpAfterTimeWithNoWorkerRunningHolds() throws Exception {
        // w1 stops after slot 2; nothing runs 3..6; w2 starts at 7.5 and catches up 3..7, later than misfireGrace.
        log = new EventLog().workerStarted("w1", -5).run("w1", JOB, 1, 1010).run("w1", JOB, 2, 1020).workerStopped("w1", 2.5)
                .workerStarted("w2", 7.5);
        for (int s = 3; s <= 7; s++) {
            log.started("w2", JOB, s, 1000 + s * 10L, Math.round((7.6 - s) * 1000) + s, "\"catch_up\":true");
        }
        for (int s = 8; s <= 10; s++) {
            log.run("w2", JOB, s, 1000 + s * 10L);
        }
        log.workerStopped("w2", 20);
        assertHolds(audit());
    }

    @Test
    void slotsWithNoWorkerRunningAreCountedNotBlamed() throws Exception {
        log = new EventLog().workerStarted("w1", -5).run("w1", JOB, 1, 1010).workerStopped("w1", 1.5).workerStarted("w1", 8.5);
        for (int s = 9; s <= 10; s++) {
            log.run("w1", JOB, s, 1000 + s * 10L);
        }
        log.workerStopped("w1", 20);
        AuditReport report = audit();
        assertHolds(report);
        assertThat(report.unattended).isEqualTo(7); // 2..8: w1 was stopped
    }

    @Test
    void aManualRunBetweenSlotsHolds() throws Exception {
        everySlotRunsOnce(Set.of()).workerStopped("w1", 20).workerStopped("w2", 20);
        log.started("w1", JOB, 4.321, 1045, 800, "\"manual\":true").succeeded("w1", JOB, 4.321, 1045, 5.2);
        AuditReport report = audit();
        assertHolds(report);
        assertThat(report.manualRuns).isEqualTo(1);
        assertThat(report.outsideSchedule).isZero();
    }

    @Test
    void pausedStaleAndOutageSlotsAreReportedNotSilent() throws Exception {
        everySlotRunsOnce(Set.of(2, 3, 5, 6)).workerStopped("w1", 20).workerStopped("w2", 20);
        log.skipped("w1", JOB, 2, "paused").skipped("w2", JOB, 3, "paused")
                .stale("w1", JOB, 5, 5.3)
                // Redis unreachable: each worker reports the slot itself; one behind a partition ran it elsewhere.
                .missed("w1", JOB, 6, 8.1, "outage", "lock store unreachable: connection refused")
                .missed("w2", JOB, 6, 8.1, "outage", "lock store unreachable: connection refused");
        log.raw(log.lines.get(log.lines.size() - 1)); // delivered twice by a log shipper
        AuditReport report = audit();
        assertHolds(report);
        assertThat(report.reported).containsEntry("skipped (paused)", 2L).containsEntry("stale", 1L).containsEntry("missed (outage)", 1L);
        assertThat(report.duplicates).isEqualTo(1);
    }

    @Test
    void aSlotMissedInAnOutageThatRanBehindAPartitionIsNotAContradiction() throws Exception {
        everySlotRunsOnce(Set.of()).workerStopped("w1", 20).workerStopped("w2", 20);
        log.missed("w1", JOB, 4, 6.1, "outage", "lock store unreachable: timeout"); // w2 reached Redis and ran it
        assertHolds(audit());
    }

    @Test
    void aWorkerThatVanishedLeavesOnlyTheSlotsItMayHaveClaimedAheadUnverified() throws Exception {
        // w2 ran 2 and 4, and was killed after its last event at 5.8: no worker_stopped. Slot 6 lies within its claims
        // ahead (250 ms + 500 ms): it may have decided it and died before logging it. Slots 8 and 10 fell due while w1 ran
        // and nobody started or reported them: a live worker must take them over, so they are violations.
        everySlotRunsOnce(Set.of(6, 8, 10)).event(5.8, "redis_recovered", "w2", "").workerStopped("w1", 20);
        AuditReport report = audit();
        assertOnly(report, "silent-slot", 2);
        assertThat(report.violations()).extracting(AuditReport.Violation::slot).containsExactly(at(8), at(10));
        assertThat(report.unverified()).singleElement().satisfies(u -> {
            assertThat(u.slot()).isEqualTo(at(6));
            assertThat(u.reason()).contains("w2").contains("vanished near it");
        });
        assertThat(report.vanished).singleElement().asString().startsWith("w2");
    }

    @Test
    void aSilentSlotASecondAfterAWorkerVanishedWhileOthersRanIsASilentSlot() throws Exception {
        // M3: w2 ran 2 and 4 and vanished (last event 4.055); slot 5 falls due 945 ms later, past its claims ahead, while w1 runs.
        log = new EventLog().workerStarted("w1", -5).workerStarted("w2", -5);
        for (int s = 1; s <= 10; s++) {
            if (s == 2 || s == 4) {
                log.run("w2", JOB, s, 1000 + s * 10L);
            } else if (s != 5) {
                log.run("w1", JOB, s, 1000 + s * 10L);
            }
        }
        log.workerStopped("w1", 20);
        AuditReport report = audit();
        assertOnly(report, "silent-slot", 1);
        assertThat(report.violations().get(0).slot()).isEqualTo(at(5));
        assertThat(report.violations().get(0).message()).contains("w1 was running");
    }

    @Test
    void aWorkerKilledAndStartedAgainUnderItsIdBeginsANewLifeAtItsFirstLine() throws Exception {
        // w1 starts slot 5 and is killed (SIGKILL) at once; w2 recovers it once its lease (5 s from the start) has ended and
        // runs 6..10; w1 is started again under its id at 14.9 (config_loaded, then worker_started). Its dead life ends at
        // 5.003, not at the new process's first line.
        log = new EventLog().configLoaded("w1", -5.1).workerStarted("w1", -5).workerStarted("w2", -5);
        for (int s = 1; s <= 4; s++) {
            log.run(s % 2 == 0 ? "w2" : "w1", JOB, s, 1000 + s * 10L);
        }
        log.claimed("w1", JOB, 5, 1050).started("w1", JOB, 5, 1050, 3, "");
        for (int s = 6; s <= 10; s++) {
            log.run("w2", JOB, s, 1000 + s * 10L);
        }
        log.recovered("w2", JOB, 5, 1200, 10.5).started("w2", JOB, 5, 1200, 5600, "\"rerun\":true").succeeded("w2", JOB, 5, 1200, 10.7)
                .configLoaded("w1", 14.9).workerStarted("w1", 15).workerStopped("w1", 20).workerStopped("w2", 20);
        AuditReport report = audit();
        assertHolds(report);
        assertThat(report.rerunSlots).isEqualTo(1);
        assertThat(report.vanished).singleElement().asString().contains("last event " + at(5.003));
    }

    @Test
    void aWorkerWhoseHostClockWasSteppedBackAnHourIsReadByRedisTime() throws Exception {
        // w1's wall clock goes back an hour after slot 5: its own timestamps jump, its slots and lateness (Redis time) do not.
        log = new EventLog().workerStarted("w1", 0.5);
        for (int s = 1; s <= 19; s++) {
            log.run("w1", JOB, s, 1000 + s * 10L);
        }
        List<String> lines = new java.util.ArrayList<>(log.lines);
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            String ts = line.substring(7, line.indexOf('"', 7));
            if (java.time.Instant.parse(ts).isAfter(at(5.5))) {
                lines.set(i, line.replace(ts, java.time.Instant.parse(ts).minusSeconds(3600).toString()));
            }
        }
        log.lines.clear();
        log.lines.addAll(lines);
        log.event(20 - 3600, "worker_stopping", "w1", "\"running\":0,\"clock_offset_ms\":3600000")
                .event(20.01 - 3600, "worker_stopped", "w1", "\"drained\":true");
        AuditReport report = Audit.run(List.of(log.write(dir, "stepped.log").toString()), InputStream(), config, Audit.Options.defaults());
        assertHolds(report);
        assertThat(report.from).isEqualTo(at(0.5));
        assertThat(report.to).isEqualTo(at(20));
        assertThat(report.startedOnce).isEqualTo(19);
    }

    @Test
    void eventsWrappedByLogStoresAreRead() throws Exception {
        everySlotRunsOnce(Set.of(5, 6, 7)).workerStopped("w1", 20).workerStopped("w2", 20);
        log.lines.addAll(List.of(
                // Loki's logcli: a time and the stream's labels before the line
                "2026-12-01T10:00:05.003Z {app=\"lockstep\", host=\"a\"} " + line(new EventLog().run("w1", JOB, 5, 1050), 1),
                // an Elasticsearch hit
                "{\"_index\":\"logs\",\"_source\":" + line(new EventLog().run("w2", JOB, 6, 1060), 1) + "}",
                // Docker's json-file: the event as an escaped string
                "{\"log\":" + com.fasterxml.jackson.databind.node.TextNode.valueOf(line(new EventLog().run("w1", JOB, 7, 1070), 1) + "\n")
                        + ",\"stream\":\"stdout\"}",
                "Exception in thread main: not an event", "{\"event\":\"no worker or time\"}"));
        AuditReport report = audit();
        assertThat(report.violations()).extracting(AuditReport.Violation::slot).doesNotContain(at(5), at(6), at(7));
        assertThat(report.skippedLines).isEqualTo(2);
        assertThat(report.startedOnce).isEqualTo(10);
        assertHolds(report);
    }

    private static String line(EventLog one, int index) {
        return one.lines.get(index); // the job_started of a run()
    }

    // ---- violations: each named, with its events ----

    @Test
    void aSilentSlotWhileWorkersRunIsAViolation() throws Exception {
        everySlotRunsOnce(Set.of(7)).workerStopped("w1", 20).workerStopped("w2", 20);
        AuditReport report = audit();
        assertOnly(report, "silent-slot", 1);
        assertThat(report.violations().get(0).slot()).isEqualTo(at(7));
        assertThat(report.violations().get(0).message()).contains("w1, w2 were running");
    }

    @Test
    void aSecondRunWithoutARecoveryIsAViolation() throws Exception {
        everySlotRunsOnce(Set.of()).workerStopped("w1", 20).workerStopped("w2", 20);
        log.started("w2", JOB, 5, 1055, 4, "").succeeded("w2", JOB, 5, 1055, 5.1);
        AuditReport report = audit();
        assertOnly(report, "second-run", 1);
        assertThat(report.violations().get(0).events()).hasSize(2).anySatisfy(e -> assertThat(e).contains("w2  job_started fencing_token=1055"));
    }

    @Test
    void aRerunWhileTheFirstRunStillHeldItsLeaseIsAViolation() throws Exception {
        everySlotRunsOnce(Set.of(3)).workerStopped("w1", 20).workerStopped("w2", 20);
        log.started("w1", JOB, 3, 1030, 3, "").succeeded("w1", JOB, 3, 1030, 3.8) // went on, its lease held
                .recovered("w2", JOB, 3, 1200, 3.5).started("w2", JOB, 3, 1200, 520, "\"rerun\":true").succeeded("w2", JOB, 3, 1200, 3.6);
        assertOnly(audit(), "second-run", 1);
    }

    @Test
    void twoWorkersStartingUnderOneTokenIsAViolation() throws Exception {
        everySlotRunsOnce(Set.of()).workerStopped("w1", 20).workerStopped("w2", 20);
        log.started("w2", JOB, 5, 1050, 4, "").succeeded("w2", JOB, 5, 1050, 5.1);
        AuditReport report = audit();
        assertOnly(report, "second-run", 1);
        assertThat(report.violations().get(0).message()).contains("same fencing token 1050");
    }

    @Test
    void tokensOutOfSlotOrderAreAViolation() throws Exception {
        everySlotRunsOnce(Set.of(4, 5)).workerStopped("w1", 20).workerStopped("w2", 20);
        log.run("w2", JOB, 4, 1050).run("w1", JOB, 5, 1040); // swapped
        AuditReport report = audit();
        assertOnly(report, "token-order", 1);
        assertThat(report.violations().get(0).slot()).isEqualTo(at(5));
    }

    @Test
    void anOlderSlotStartingAfterANewerOneIsAViolation() throws Exception {
        everySlotRunsOnce(Set.of(4)).workerStopped("w1", 20).workerStopped("w2", 20);
        log.run("w2", JOB, 4, 1040, 1500); // started at 5.5, after slot 5 started at 5.003
        AuditReport report = audit();
        assertOnly(report, "start-order", 1);
        assertThat(report.violations().get(0).message()).contains("the earlier slot " + at(4));
    }

    @Test
    void aStartBeforeItsSlotOrPastItsGraceIsAViolation() throws Exception {
        everySlotRunsOnce(Set.of(2, 10)).workerStopped("w1", 20).workerStopped("w2", 20);
        log.run("w2", JOB, 2, 1020, -300).run("w1", JOB, 10, 1100, 3500);
        AuditReport report = audit();
        assertOnly(report, "start-time", 2);
        assertThat(report.violations()).extracting(AuditReport.Violation::message)
                .anySatisfy(m -> assertThat(m).contains("300 ms before its slot"))
                .anySatisfy(m -> assertThat(m).contains("past misfireGrace"));
    }

    @Test
    void aRunThatKeptGoingAfterItsLeaseWasLostIsAViolation() throws Exception {
        everySlotRunsOnce(Set.of(3, 6)).workerStopped("w1", 20).workerStopped("w2", 20);
        log.claimed("w1", JOB, 3, 1030).started("w1", JOB, 3, 1030, 3, "").leaseLost("w1", JOB, 3, 1030, 4)
                .succeeded("w1", JOB, 3, 1030, 7.5); // 3.5 s after it was told
        log.claimed("w2", JOB, 6, 1060).started("w2", JOB, 6, 1060, 3, "").leaseLost("w2", JOB, 6, 1060, 6.5); // never ended
        AuditReport report = audit();
        assertOnly(report, "lease-stop", 2);
        assertThat(report.violations()).extracting(AuditReport.Violation::message)
                .anySatisfy(m -> assertThat(m).contains("ran 3500 ms after"))
                .anySatisfy(m -> assertThat(m).contains("no outcome was logged"));
        assertThat(audit(new Audit.Options(null, null, null, Duration.ofMillis(100), Duration.ofSeconds(4))).violations())
                .as("within a 4 s allowance only the run that never ended").hasSize(1);
    }

    @Test
    void eventsThatContradictEachOtherAreAViolation() throws Exception {
        everySlotRunsOnce(Set.of()).workerStopped("w1", 20).workerStopped("w2", 20);
        log.missed("w2", JOB, 4, 6.1, "late", "later than misfireGrace"); // the store decided a miss, yet it ran
        log.recovered("w2", JOB, 7, 1300, 12.5); // its run finished and was recorded, yet recovered as lost
        AuditReport report = audit();
        assertOnly(report, "contradiction", 2);
    }

    @Test
    void aTakeoverWhileTheFirstRunHeldItsLeaseIsNamedEvenThoughItsReleaseWasThenRefused() throws Exception {
        everySlotRunsOnce(Set.of(3)).workerStopped("w1", 20).workerStopped("w2", 20);
        log.started("w1", JOB, 3, 1030, 3, "").recovered("w2", JOB, 3, 1200, 3.5)
                .started("w2", JOB, 3, 1200, 520, "\"rerun\":true").succeeded("w2", JOB, 3, 1200, 3.6)
                .succeeded("w1", JOB, 3, 1030, 3.8).released("w1", JOB, 3, 1030, 3.81, false, "succeeded")
                .event(3.82, "outcome_late", "w1", "\"job\":\"tick\",\"slot\":\"" + EventLog.iso(3) + "\",\"fencing_token\":1030,\"outcome\":\"succeeded\"");
        assertOnly(audit(), "second-run", 1); // the refusal and outcome_late follow the takeover: they do not excuse it
    }

    @Test
    void aRunHandedOverAtShutdownWithItsOutcomeUnrecordedMayBeRerun() throws Exception {
        everySlotRunsOnce(Set.of(3)).workerStopped("w2", 20);
        log.started("w1", JOB, 3, 1030, 3, "").succeeded("w1", JOB, 3, 1030, 3.2)
                .event(3.5, "outcome_unrecorded", "w1", "\"job\":\"tick\",\"slot\":\"" + EventLog.iso(3)
                        + "\",\"fencing_token\":1030,\"outcome\":\"succeeded\",\"reason\":\"lock store unreachable while the worker shut down\"")
                .workerStopped("w1", 20)
                .recovered("w2", JOB, 3, 1200, 9).started("w2", JOB, 3, 1200, 6010, "\"rerun\":true").succeeded("w2", JOB, 3, 1200, 9.1);
        assertHolds(audit());
    }

    @Test
    void aMissReportedInAnOutageUnderAnEarlierCodeIsNotAContradiction() throws Exception {
        everySlotRunsOnce(Set.of()).workerStopped("w1", 20).workerStopped("w2", 20);
        log.missed("w1", JOB, 4, 6.1, "fell_behind", "this worker fell behind its schedule; lock store unreachable: timeout");
        assertHolds(audit());
    }

    @Test
    void aTimedOutRunThatRanOnPastItsLostLeaseIsNamedByItsRelease() throws Exception {
        everySlotRunsOnce(Set.of(3)).workerStopped("w1", 20).workerStopped("w2", 20);
        log.claimed("w1", JOB, 3, 1030).started("w1", JOB, 3, 1030, 3, "")
                .event(3.5, "job_timed_out", "w1", "\"job\":\"tick\",\"slot\":\"" + EventLog.iso(3) + "\",\"fencing_token\":1030,\"attempt\":1")
                .leaseLost("w1", JOB, 3, 1030, 4).released("w1", JOB, 3, 1030, 7.5, false, "timed_out");
        assertOnly(audit(), "lease-stop", 1);
    }

    @Test
    void rotatedFilesReadNewestFirstAndARepeatedStartLineKeepTheWorkersLives() throws Exception {
        // w1 ran slots 1..4, stopped, started again and ran 6..10; its logrotate files sort newest first.
        EventLog older = new EventLog().workerStarted("w1", 0.5).workerStarted("w1", 0.5);
        for (int s = 1; s <= 4; s++) {
            older.run("w1", JOB, s, 1000 + s * 10L);
        }
        older.workerStopped("w1", 4.5);
        EventLog newer = new EventLog().workerStarted("w1", 5.2);
        for (int s = 6; s <= 10; s++) {
            newer.run("w1", JOB, s, 1000 + s * 10L);
        }
        newer.workerStopped("w1", 30);
        Path logs = Files.createDirectories(dir.resolve("logs"));
        newer.write(logs, "app.log");
        older.write(logs, "app.log.1");
        AuditReport report = Audit.run(List.of(logs.toString()), InputStream(), config,
                new Audit.Options(at(1), at(10), null, Duration.ofMillis(100), Duration.ofSeconds(2)));
        assertHolds(report);
        assertThat(report.vanished).isEmpty();
        assertThat(report.unattended).isEqualTo(1); // slot 5: w1 was stopped
        assertThat(report.duplicates).isEqualTo(1);
    }

    @Test
    void oversizedAndOutOfRangeLinesAreSkippedAndAnEventInsideAnElasticsearchMessageIsRead() throws Exception {
        everySlotRunsOnce(Set.of(5)).workerStopped("w1", 20).workerStopped("w2", 20);
        String five = line(new EventLog().run("w1", JOB, 5, 1050), 1);
        log.raw("{\"_source\":{\"@timestamp\":\"2026-12-01T10:00:05Z\",\"message\":"
                + com.fasterxml.jackson.databind.node.TextNode.valueOf(five) + "}}");
        log.raw("x".repeat(EventReader.MAX_LINE + 10));
        log.raw(five.replace(EventLog.iso(5.003), "+999999999-01-01T00:00:00Z"));
        AuditReport report = audit();
        assertHolds(report);
        assertThat(report.skippedLines).isEqualTo(2);
        assertThat(report.startedOnce).isEqualTo(10);
    }

    @Test
    void aTakeoverFollowedByTheVictimsRefusedRenewalIsASecondRun() throws Exception {
        // M2: w2 takes slot 3 over at 3.5 while w1's run (started 3.003, lease 5 s) holds it; w1's next renewal is refused
        // and its job fails "lease lost". Those follow the takeover: they do not excuse it.
        everySlotRunsOnce(Set.of(3)).workerStopped("w1", 20).workerStopped("w2", 20);
        log.claimed("w1", JOB, 3, 1030).started("w1", JOB, 3, 1030, 3, "")
                .recovered("w2", JOB, 3, 1200, 3.5).started("w2", JOB, 3, 1200, 520, "\"rerun\":true").succeeded("w2", JOB, 3, 1200, 3.6)
                .renewalRefused("w1", JOB, 3, 1030, 4.7).failed("w1", JOB, 3, 1030, 4.8, "lease lost");
        AuditReport report = audit();
        assertOnly(report, "second-run", 1);
        assertThat(report.violations().get(0).message()).contains("rerun under fencing token 1200");
    }

    @Test
    void aLeaseLossLoggedAfterTheRerunWasDecidedOrBeforeTheLeaseCouldEndIsNoExcuse() throws Exception {
        // Slot 3: a deadline lease_lost logged after the recovery. Slot 6: one logged before it, but the recovery at 6.5
        // came while a lease taken at the start (6.003) still ran until 11.003.
        everySlotRunsOnce(Set.of(3, 6)).workerStopped("w1", 20).workerStopped("w2", 20);
        log.claimed("w1", JOB, 3, 1030).started("w1", JOB, 3, 1030, 3, "")
                .recovered("w2", JOB, 3, 1200, 3.5).started("w2", JOB, 3, 1200, 520, "\"rerun\":true").succeeded("w2", JOB, 3, 1200, 3.6)
                .leaseLost("w1", JOB, 3, 1030, 4.0).failed("w1", JOB, 3, 1030, 4.1, "lease lost");
        log.claimed("w2", JOB, 6, 1060).started("w2", JOB, 6, 1060, 3, "").leaseLost("w2", JOB, 6, 1060, 6.4)
                .failed("w2", JOB, 6, 1060, 6.45, "lease lost")
                .recovered("w1", JOB, 6, 1300, 6.5).started("w1", JOB, 6, 1300, 520, "\"rerun\":true").succeeded("w1", JOB, 6, 1300, 6.6);
        AuditReport report = audit();
        assertOnly(report, "second-run", 2);
        assertThat(report.violations()).extracting(AuditReport.Violation::message)
                .anySatisfy(m -> assertThat(m).contains("after the rerun was decided"))
                .anySatisfy(m -> assertThat(m).contains("lasts until " + at(11.003)));
    }

    /**
     * A holder SIGSTOPped past its lease logs its loss only when it wakes, after the peer's rerun: its
     * {@code deadline_passed_ms} says its own deadline (which comes before the store's expiry) had passed by the
     * decision, so the rerun holds. Had its deadline been after the decision, the rerun took a live lease.
     */
    @Test
    void aHolderStalledPastItsLeaseExcusesTheRerunByTheDeadlineItLogsOnWaking() throws Exception {
        java.util.function.LongFunction<AuditReport> withDeadlinePassed = ms -> {
            log = new EventLog().workerStarted("w1", -5).workerStarted("w2", -5);
            everySlotRunsOnce(Set.of(3)).workerStopped("w1", 20).workerStopped("w2", 20);
            // w1 starts slot 3 (its lease, 5 s, from 3.003) and is stopped; w2 reruns it at 8.3; w1 wakes at 12.0.
            log.claimed("w1", JOB, 3, 1030).started("w1", JOB, 3, 1030, 3, "")
                    .recovered("w2", JOB, 3, 1200, 8.29).started("w2", JOB, 3, 1200, 5300, "\"rerun\":true")
                    .succeeded("w2", JOB, 3, 1200, 8.4)
                    .event(12.0, "lease_lost", "w1", "\"job\":\"" + JOB + "\",\"slot\":\"" + at(3) + "\",\"fencing_token\":1030,"
                            + "\"success\":false,\"reason\":\"lease deadline passed without a confirmed renewal\",\"deadline_passed_ms\":" + ms)
                    .failed("w1", JOB, 3, 1030, 12.1, "lease lost");
            try {
                return audit();
            } catch (Audit.BadInput e) {
                throw new IllegalStateException(e);
            }
        };
        AuditReport stalled = withDeadlinePassed.apply(4_000); // its deadline at 8.0, before the rerun at 8.3
        assertHolds(stalled);
        assertThat(stalled.rerunSlots).isEqualTo(1);
        AuditReport live = withDeadlinePassed.apply(1_000); // its deadline at 11.0: the rerun took a live lease
        assertOnly(live, "second-run", 1);
    }

    @Test
    void oneWorkerStartingOneTokenTwiceIsASecondRunButAShippersRepeatIsNot() throws Exception {
        everySlotRunsOnce(Set.of()).workerStopped("w1", 20).workerStopped("w2", 20);
        log.started("w1", JOB, 5, 1050, 33, ""); // 30 ms after its first start: dispatched twice
        String start7 = log.lines.stream().filter(l -> l.contains("job_started") && l.contains(EventLog.iso(7))).findFirst().orElseThrow();
        log.raw(start7); // the same line delivered twice
        AuditReport report = audit();
        assertOnly(report, "second-run", 1);
        assertThat(report.violations().get(0).slot()).isEqualTo(at(5));
        assertThat(report.violations().get(0).message()).contains("started 2 times by w1 attempt 1 under fencing token 1050 (30 ms apart)");
        assertThat(report.duplicates).isEqualTo(1);
    }

    @Test
    void aSlotDueWhileAWorkerRanIsUnverifiedNotNoWorkerRunningWhenItStoppedWithinTheGrace() throws Exception {
        // w1 alone; slots 1..8 run, 9 and 10 have no event at all. It stops at 10.5, within both slots' 2 s grace: their
        // claims may have been unanswered, retried, or waiting for a thread. Not "no worker running" (it was): unverified,
        // which --strict fails. Stopped at 12.5, past slot 9's grace (and 10's by 0.5 s, within the 1 s margin): slot 9's
        // silence is a violation.
        log = new EventLog().workerStarted("w1", -5);
        for (int s = 1; s <= 8; s++) {
            log.run("w1", JOB, s, 1000 + s * 10L);
        }
        EventLog later = new EventLog();
        later.lines.addAll(log.lines);
        log.workerStopped("w1", 10.5);
        AuditReport report = audit();
        assertHolds(report);
        assertThat(report.unattended).isZero();
        assertThat(report.unverified()).extracting(AuditReport.Unverified::slot).containsExactly(at(9), at(10));
        assertThat(report.unverified().get(0).reason()).contains("w1 stopped 1500 ms after it, within its grace");
        log = later.workerStopped("w1", 12.5);
        report = audit();
        assertThat(report.violations()).extracting(AuditReport.Violation::check, AuditReport.Violation::slot)
                .contains(org.assertj.core.groups.Tuple.tuple("silent-slot", at(9)));
    }

    // ---- a log spanning a reload: each worker's config_hash picks its config ----

    private LockstepConfig config(String name, String jobs) throws IOException {
        Path file = dir.resolve(name);
        Files.writeString(file, "redis:\n  uri: redis://127.0.0.1:6379\ndefaults:\n  lease: 5s\n  misfireGrace: 2s\njobs:\n" + jobs);
        return ConfigLoader.defaults().checkingClasses(false).load(file);
    }

    @Test
    void aLogSpanningAReloadIsCheckedAgainstEachWorkersConfigInTurn() throws Exception {
        // Before the reload tick runs every second; after it (5.6 s) every 2 s, and a new job tock on the odd seconds.
        LockstepConfig before = config("before.yaml", "  - name: tick\n    cron: \"* * * * * *\"\n    class: com.example.X\n");
        LockstepConfig after = config("after.yaml", "  - name: tick\n    cron: \"*/2 * * * * *\"\n    class: com.example.X\n"
                + "  - name: tock\n    cron: \"1/2 * * * * *\"\n    class: com.example.X\n");
        String a = Targets.hash(before), b = Targets.hash(after);
        log = new EventLog().workerStarted("w1", -5, a).workerStarted("w2", -5, a);
        for (int s = 1; s <= 5; s++) {
            log.run(s % 2 == 0 ? "w2" : "w1", JOB, s, 1000 + s * 10L);
        }
        log.scheduleUpdated("w1", 5.6, b).scheduleUpdated("w2", 5.7, b);
        for (int s = 6; s <= 10; s++) {
            log.run(s % 2 == 0 ? "w2" : "w1", s % 2 == 0 ? JOB : "tock", s, 1000 + s * 10L);
        }
        log.workerStopped("w1", 20).workerStopped("w2", 20);
        Path file = log.write(dir, "reload.log");
        Audit.Options window = new Audit.Options(at(1), at(10), null, Duration.ofMillis(100), Duration.ofSeconds(2));
        AuditReport report = Audit.run(List.of(file.toString()), InputStream(), List.of(before, after), window);
        assertHolds(report);
        assertThat(report.startedOnce).isEqualTo(10);
        assertThat(report.outsideSchedule).isZero();
        assertThat(report.unverified()).isEmpty();
        // Given only the first config, the slots after the reload are unverified (config not given), never violations.
        AuditReport partial = Audit.run(List.of(file.toString()), InputStream(), List.of(before), window);
        assertHolds(partial);
        assertThat(partial.unverified()).isNotEmpty().allSatisfy(u -> assertThat(u.reason()).contains("config " + b));
        assertThat(partial.notes).anySatisfy(n -> assertThat(n).contains(b).contains("which no --config matches"));
        // Even there, a second run is named: the checks that need no job definition still run.
        log.started("w1", JOB, 8, 1999, 40, "");
        Path forged = log.write(dir, "reload-forged.log");
        AuditReport named = Audit.run(List.of(forged.toString()), InputStream(), List.of(before), window);
        assertOnly(named, "second-run", 1);
        assertThat(named.violations().get(0).slot()).isEqualTo(at(8));
    }

    /**
     * With the instant the reload took effect in its line ({@code effective_at}), each slot is checked against exactly
     * one config, however close to the reload: tick@7 (only the old config has it, and it falls after the reload) is
     * no one's to run; tock@7 (only the new one has it) is due, and silent when no one ran it.
     */
    @Test
    void aReloadWithItsEffectiveInstantSplitsTheSlotsExactlyEvenWithinAFractionOfASecond() throws Exception {
        LockstepConfig before = config("before.yaml", "  - name: tick\n    cron: \"* * * * * *\"\n    class: com.example.X\n");
        LockstepConfig after = config("after.yaml", "  - name: tick\n    cron: \"*/2 * * * * *\"\n    class: com.example.X\n"
                + "  - name: tock\n    cron: \"1/2 * * * * *\"\n    class: com.example.X\n");
        String a = Targets.hash(before), b = Targets.hash(after);
        java.util.function.Function<Boolean, AuditReport> audit = tockSeven -> {
            log = new EventLog().workerStarted("w1", -5, a).workerStarted("w2", -5, a);
            for (int s = 1; s <= 6; s++) {
                log.run(s % 2 == 0 ? "w2" : "w1", JOB, s, 1000 + s * 10L);
            }
            // The reload lands 200 ms before slot 7 on both workers.
            log.scheduleUpdated("w1", 6.81, b, 6.8).scheduleUpdated("w2", 6.82, b, 6.8);
            for (int s = 7; s <= 10; s++) {
                if (s != 7 || tockSeven) {
                    log.run(s % 2 == 0 ? "w2" : "w1", s % 2 == 0 ? JOB : "tock", s, 1000 + s * 10L);
                }
            }
            log.workerStopped("w1", 20).workerStopped("w2", 20);
            try {
                Path file = log.write(dir, "reload-" + tockSeven + ".log");
                Audit.Options window = new Audit.Options(at(1), at(10), null, Duration.ofMillis(100), Duration.ofSeconds(2));
                return Audit.run(List.of(file.toString()), InputStream(), List.of(before, after), window);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        };
        AuditReport whole = audit.apply(true);
        assertHolds(whole);
        assertThat(whole.unverified()).as("tick@7 is the old config's, after the reload: no one's").isEmpty();
        AuditReport missing = audit.apply(false);
        assertOnly(missing, "silent-slot", 1);
        assertThat(missing.violations()).extracting(v -> v.job() + "@" + v.slot()).containsExactly("tock@" + at(7));
        assertThat(missing.unverified()).isEmpty();
    }

    /** In a rollout each run is judged by its own worker's config: a start 3 s late is within 5 min of grace, not 1 s. */
    @Test
    void eachRunIsJudgedByTheGraceOfTheWorkerThatStartedIt() throws Exception {
        LockstepConfig tight = config("tight.yaml", "  - name: tick\n    cron: \"* * * * * *\"\n    class: com.example.X\n    misfireGrace: 1s\n");
        LockstepConfig loose = config("loose.yaml", "  - name: tick\n    cron: \"* * * * * *\"\n    class: com.example.X\n    misfireGrace: 5m\n");
        java.util.function.Function<String, AuditReport> lateOn = late -> {
            log = new EventLog().workerStarted("w1", -5, Targets.hash(tight)).workerStarted("w2", -5, Targets.hash(loose));
            for (int s = 1; s <= 10; s++) {
                log.run(s == 10 ? late : s % 2 == 0 ? "w2" : "w1", JOB, s, 1000 + s * 10L, s == 10 ? 3_000 : 3); // the last, 3 s late
            }
            log.workerStopped("w1", 20).workerStopped("w2", 20);
            try {
                Path file = log.write(dir, "rollout-" + late + ".log");
                Audit.Options window = new Audit.Options(at(1), at(10), null, Duration.ofMillis(100), Duration.ofSeconds(2));
                return Audit.run(List.of(file.toString()), InputStream(), List.of(tight, loose), window);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        };
        assertHolds(lateOn.apply("w2"));
        AuditReport tooLate = lateOn.apply("w1");
        assertOnly(tooLate, "start-time", 1);
        assertThat(tooLate.violations().get(0).message()).contains("past misfireGrace (1000 ms)");
    }

    // ---- inputs and edges (test-audit GG6) ----

    @Test
    void aGzippedLogAndStdinAreRead() throws Exception {
        everySlotRunsOnce(Set.of()).workerStopped("w1", 20).workerStopped("w2", 20);
        Path gz = dir.resolve("events.log.gz");
        try (var out = new java.util.zip.GZIPOutputStream(Files.newOutputStream(gz))) {
            out.write(String.join("\n", log.lines).getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }
        Audit.Options window = new Audit.Options(at(1), at(10), null, Duration.ofMillis(100), Duration.ofSeconds(2));
        AuditReport fromGz = Audit.run(List.of(gz.toString()), InputStream(), config, window);
        assertHolds(fromGz);
        assertThat(fromGz.startedOnce).isEqualTo(10);
        byte[] bytes = String.join("\n", log.lines).getBytes(java.nio.charset.StandardCharsets.UTF_8);
        AuditReport fromStdin = Audit.run(List.of("-"), new ByteArrayInputStream(bytes), config, window);
        assertHolds(fromStdin);
        assertThat(fromStdin.startedOnce).isEqualTo(10);
        assertThat(fromStdin.events()).isEqualTo(fromGz.events());
    }

    @Test
    void aLogCutAtItsStartLeavesTheSlotsNearItsBeginningUnverified() throws Exception {
        // w1's log begins inside its life (older files rotated away): no worker_started, its first line a run of slot 1.
        // Slot 2, within --margin (misfireGrace + 1 s) of its first run, may be in the lost part; slot 7 is not.
        log = new EventLog();
        for (int s = 1; s <= 10; s++) {
            if (s != 2 && s != 7) {
                log.run("w1", JOB, s, 1000 + s * 10L);
            }
        }
        log.workerStopped("w1", 20);
        AuditReport report = audit();
        assertOnly(report, "silent-slot", 1);
        assertThat(report.violations().get(0).slot()).isEqualTo(at(7));
        assertThat(report.unverified()).singleElement().satisfies(u -> {
            assertThat(u.slot()).isEqualTo(at(2));
            assertThat(u.reason()).contains("begins after it (cut)");
        });
        // By default the window starts a margin after the first run: slot 2 is not even in it.
        AuditReport byDefault = Audit.run(List.of(log.write(dir, "cut.log").toString()), InputStream(), config, Audit.Options.defaults());
        assertThat(byDefault.from).isEqualTo(at(1.003 + 3));
    }

    @Test
    void aSpanOfMoreThan31DaysNeedsAnExplicitWindow() throws Exception {
        // A stray timestamp 40 days on: the default window would be the whole span; --from/--to make it an explicit choice.
        everySlotRunsOnce(Set.of()).workerStopped("w1", 20).event(40 * 86400.0, "worker_started", "w2", "\"clock_offset_ms\":0")
                .event(40 * 86400.0 + 1, "worker_stopping", "w2", "\"clock_offset_ms\":0").event(40 * 86400.0 + 1.01, "worker_stopped", "w2", "");
        Path file = log.write(dir, "long.log");
        assertThatThrownBy(() -> Audit.run(List.of(file.toString()), InputStream(), config, Audit.Options.defaults()))
                .isInstanceOf(Audit.BadInput.class).hasMessageContaining("longer than 31 days").hasMessageContaining("pass --from and --to");
        assertHolds(audit());
    }

    @Test
    void inTheQuietPresetARerunAfterALostLeaseHolds() throws Exception {
        // LOCKSTEP_LOG_DETAIL=WARN: no slot_claimed, no slot_released. w1's lease of slot 3 (from 3.003, 5 s) passes its
        // deadline at 8.0; w2 recovers it at 8.2, after the lease could have ended.
        log = new EventLog().workerStarted("w1", -5).workerStarted("w2", -5);
        for (int s = 1; s <= 10; s++) {
            if (s != 3) {
                log.quietRun(s % 2 == 0 ? "w2" : "w1", JOB, s, 1000 + s * 10L);
            }
        }
        log.started("w1", JOB, 3, 1030, 3, "").leaseLost("w1", JOB, 3, 1030, 8.0).failed("w1", JOB, 3, 1030, 8.1, "lease lost")
                .recovered("w2", JOB, 3, 1200, 8.2).started("w2", JOB, 3, 1200, 5300, "\"rerun\":true").succeeded("w2", JOB, 3, 1200, 8.4)
                .workerStopped("w1", 20).workerStopped("w2", 20);
        AuditReport report = audit();
        assertHolds(report);
        assertThat(report.rerunSlots).isEqualTo(1);
        assertThat(log.lines).noneMatch(l -> l.contains("slot_claimed") || l.contains("slot_released"));
    }

    @Test
    void inTheQuietPresetASecondRunWhileTheLeaseHeldFails() throws Exception {
        log = new EventLog().workerStarted("w1", -5).workerStarted("w2", -5);
        for (int s = 1; s <= 10; s++) {
            if (s != 3) {
                log.quietRun(s % 2 == 0 ? "w2" : "w1", JOB, s, 1000 + s * 10L);
            }
        }
        log.started("w1", JOB, 3, 1030, 3, "")
                .recovered("w2", JOB, 3, 1200, 4.0).started("w2", JOB, 3, 1200, 1020, "\"rerun\":true").succeeded("w2", JOB, 3, 1200, 4.1)
                .renewalRefused("w1", JOB, 3, 1030, 5.0).failed("w1", JOB, 3, 1030, 5.1, "lease lost")
                .workerStopped("w1", 20).workerStopped("w2", 20);
        assertOnly(audit(), "second-run", 1);
    }

    // ---- bad input ----

    @Test
    void inputWithoutEventsOrAnEmptyWindowIsBadInput() {
        log = new EventLog().raw("not json").raw("{\"a\":1}");
        assertThatThrownBy(this::audit).isInstanceOf(Audit.BadInput.class).hasMessageContaining("no Lockstep events").hasMessageContaining("2 lines");
        Path missing = dir.resolve("nope.log");
        assertThatThrownBy(() -> Audit.run(List.of(missing.toString()), InputStream(), config, Audit.Options.defaults()))
                .isInstanceOf(Audit.BadInput.class).hasMessageContaining("nope.log: no such file");
        // The log ends while w1 still runs, 2 s after it started: less the margin (misfireGrace + 1 s) at that end, nothing is left.
        log = new EventLog().workerStarted("w1", 0).event(2, "redis_recovered", "w1", "");
        Path file = log.write(dir, "short.log");
        assertThatThrownBy(() -> Audit.run(List.of(file.toString()), InputStream(), config, Audit.Options.defaults()))
                .isInstanceOf(Audit.BadInput.class).hasMessageContaining("the window is empty");
        log = new EventLog().workerStarted("w1", 0).run("w1", "other-job", 1, 10).workerStopped("w1", 3);
        Path other = log.write(dir, "other.log");
        assertThatThrownBy(() -> Audit.run(List.of(other.toString()), InputStream(), config,
                new Audit.Options(at(99.2), at(99.8), null, Duration.ofMillis(100), Duration.ofSeconds(2))))
                .isInstanceOf(Audit.BadInput.class).hasMessageContaining("no slot of an enabled job").hasMessageContaining("other-job");
    }
}
