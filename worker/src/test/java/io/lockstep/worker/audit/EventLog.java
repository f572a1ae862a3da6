package io.lockstep.worker.audit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * Hand-written event streams for the audit's tests: each method appends the JSON lines a worker
 * writes for one step, in the worker's own field names (OPERATIONS.md, Events). Times are seconds
 * after {@link #T0} (fractions allowed); {@code lateness} is in ms.
 */
final class EventLog {

    static final Instant T0 = Instant.parse("2026-12-01T10:00:00Z");

    final List<String> lines = new ArrayList<>();

    static Instant at(double seconds) {
        return T0.plusMillis(Math.round(seconds * 1000));
    }

    static String iso(double seconds) {
        return at(seconds).toString();
    }

    EventLog event(double ts, String event, String worker, String fields) {
        lines.add("{\"ts\":\"" + iso(ts) + "\",\"level\":\"INFO\",\"event\":\"" + event + "\",\"worker\":\"" + worker + "\""
                + (fields.isEmpty() ? "" : "," + fields) + ",\"msg\":\"x\",\"logger\":\"io.lockstep.events\",\"thread\":\"t\"}");
        return this;
    }

    private static String slotFields(String job, double slot) {
        return "\"job\":\"" + job + "\",\"slot\":\"" + iso(slot) + "\"";
    }

    EventLog workerStarted(String worker, double ts) {
        return event(ts, "worker_started", worker, "\"jobs\":1,\"threads\":4,\"clock_offset_ms\":0");
    }

    /** A worker started with job definitions of hash {@code configHash} (worker_started's config_hash) and 4 job threads. */
    EventLog workerStarted(String worker, double ts, String configHash) {
        return event(ts, "worker_started", worker, "\"jobs\":1,\"threads\":4,\"clock_offset_ms\":0,\"config_hash\":\"" + configHash + "\"");
    }

    /** The worker command's first line: a new process (RunCommand). */
    EventLog configLoaded(String worker, double ts) {
        return event(ts, "config_loaded", worker, "\"config\":\"jobs.yaml\",\"jobs\":1,\"threads\":4");
    }

    /** A reload put job definitions of hash {@code configHash} in force. */
    EventLog scheduleUpdated(String worker, double ts, String configHash) {
        return event(ts, "schedule_updated", worker, "\"jobs\":2,\"added\":\"\",\"changed\":\"tick\",\"removed\":\"\",\"config_hash\":\""
                + configHash + "\"");
    }

    /** A reload whose line says the instant that split the two definitions ({@code effective_at}, seconds as {@code ts}). */
    EventLog scheduleUpdated(String worker, double ts, String configHash, double effectiveAt) {
        return event(ts, "schedule_updated", worker, "\"jobs\":2,\"added\":\"\",\"changed\":\"tick\",\"removed\":\"\",\"config_hash\":\""
                + configHash + "\",\"effective_at\":\"" + at(effectiveAt) + "\"");
    }

    EventLog workerStopped(String worker, double ts) {
        event(ts, "worker_stopping", worker, "\"running\":0");
        return event(ts + 0.01, "worker_stopped", worker, "\"drained\":true");
    }

    EventLog claimed(String worker, String job, double slot, long token) {
        return event(slot - 0.25, "slot_claimed", worker, slotFields(job, slot) + ",\"fencing_token\":" + token + ",\"success\":true");
    }

    EventLog started(String worker, String job, double slot, long token, long latenessMs, String extra) {
        return event(slot + latenessMs / 1000.0, "job_started", worker, slotFields(job, slot) + ",\"fencing_token\":" + token
                + ",\"attempt\":1,\"lateness_ms\":" + latenessMs + (extra.isEmpty() ? "" : "," + extra));
    }

    EventLog succeeded(String worker, String job, double slot, long token, double ts) {
        return event(ts, "job_succeeded", worker, slotFields(job, slot) + ",\"fencing_token\":" + token + ",\"attempt\":1,\"duration_ms\":50");
    }

    EventLog failed(String worker, String job, double slot, long token, double ts, String reason) {
        return event(ts, "job_failed", worker, slotFields(job, slot) + ",\"fencing_token\":" + token
                + ",\"attempt\":1,\"error\":\"java.lang.InterruptedException\",\"reason\":\"" + reason + "\"");
    }

    EventLog released(String worker, String job, double slot, long token, double ts, boolean success, String outcome) {
        return event(ts, "slot_released", worker, slotFields(job, slot) + ",\"fencing_token\":" + token + ",\"success\":" + success
                + ",\"outcome\":\"" + outcome + "\"");
    }

    /** A whole run: claimed ahead, started {@code latenessMs} after the slot, succeeded 50 ms later, released. */
    EventLog run(String worker, String job, double slot, long token) {
        return run(worker, job, slot, token, 3);
    }

    EventLog run(String worker, String job, double slot, long token, long latenessMs) {
        claimed(worker, job, slot, token);
        started(worker, job, slot, token, latenessMs, "");
        double end = slot + latenessMs / 1000.0 + 0.05;
        succeeded(worker, job, slot, token, end);
        return released(worker, job, slot, token, end + 0.002, true, "succeeded");
    }

    EventLog leaseLost(String worker, String job, double slot, long token, double ts) {
        return event(ts, "lease_lost", worker, slotFields(job, slot) + ",\"fencing_token\":" + token + ",\"action\":\"expire\",\"success\":false"
                + ",\"reason\":\"renewal deadline passed\"");
    }

    /** The victim's side of a takeover: its next renewal is refused (RenewThread), then its job fails. */
    EventLog renewalRefused(String worker, String job, double slot, long token, double ts) {
        return event(ts, "lease_lost", worker, slotFields(job, slot) + ",\"fencing_token\":" + token + ",\"action\":\"expire\",\"success\":false"
                + ",\"reason\":\"renewal refused: the token no longer owns the lease\"");
    }

    /** A run as the quiet preset (LOCKSTEP_LOG_DETAIL=WARN) logs it: no slot_claimed, no slot_released. */
    EventLog quietRun(String worker, String job, double slot, long token) {
        started(worker, job, slot, token, 3, "");
        return succeeded(worker, job, slot, token, slot + 0.053);
    }

    EventLog recovered(String worker, String job, double slot, long token, double ts) {
        return event(ts, "slot_recovered", worker, slotFields(job, slot) + ",\"fencing_token\":" + token
                + ",\"lateness_ms\":" + Math.round((ts - slot) * 1000) + ",\"reason\":\"the run lost its lease without an outcome; recover: rerun\"");
    }

    EventLog missed(String worker, String job, double slot, double ts, String code, String reason) {
        return event(ts, "slot_missed", worker, slotFields(job, slot) + ",\"lateness_ms\":" + Math.round((ts - slot) * 1000)
                + ",\"reason\":\"" + reason + "\",\"code\":\"" + code + "\"" + (code.equals("outage") ? "" : ",\"lock_name\":\"k\""));
    }

    EventLog skipped(String worker, String job, double slot, String reason) {
        return event(slot, "slot_skipped", worker, slotFields(job, slot) + ",\"lock_name\":\"k\",\"reason\":\"" + reason + "\"");
    }

    EventLog stale(String worker, String job, double slot, double ts) {
        return event(ts, "slot_stale", worker, slotFields(job, slot) + ",\"lock_name\":\"k\",\"reason\":\"too old\"");
    }

    EventLog raw(String line) {
        lines.add(line);
        return this;
    }

    Path write(Path dir, String name) {
        try {
            Path file = dir.resolve(name);
            Files.write(file, lines);
            return file;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
