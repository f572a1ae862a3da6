package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.ClaimResult;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.LockProvider;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.locks.LockSupport;

/**
 * Races the other workers for due slots: one batch per round trip, no more slots than this worker
 * has free job threads, and the store's answer to each slot turned into its event (and, for a win,
 * a run handed to the {@link Runner}). Called only from the tick thread.
 */
final class Claimer {

    /** How soon a claim that failed for want of the store, or of a free thread, is tried again. */
    static final Duration RETRY_DELAY = Duration.ofMillis(250);
    /** At most this many claim round trips per tick when lost races free reserved threads. */
    private static final int MAX_CLAIM_ROUNDS = 4;
    private static final SecureRandom TOKENS = new SecureRandom();

    private final LockProvider provider;
    private final String workerId;
    private final JobThreads threads;
    private final ClusterClock clock;
    private final Events events;
    private final Outage outage;
    private final SlotQueue queue;
    private final Runner runner;

    Claimer(LockProvider provider, String workerId, JobThreads threads, ClusterClock clock, Events events,
            Outage outage, SlotQueue queue, Runner runner) {
        this.provider = provider;
        this.workerId = workerId;
        this.threads = threads;
        this.clock = clock;
        this.events = events;
        this.outage = outage;
        this.queue = queue;
        this.runner = runner;
    }

    /**
     * Claims what is due; when lost races free threads that were reserved, claims again at once
     * for the slots that had to wait, so that no slot waits while some worker is free. What still
     * finds no thread waits for one, at the longest until its grace ends.
     */
    void claimInRounds(List<DueSlot> due) {
        List<DueSlot> deferred = claim(due);
        for (int round = 1; round < MAX_CLAIM_ROUNDS && !deferred.isEmpty() && threads.anyFree(); round++) {
            deferred = claim(deferred);
        }
        queue.awaitThread(deferred);
    }

    /**
     * Claims one batch: at most as many slots as there are free threads, the rest left to peers.
     *
     * @return the slots that found no free thread and may still start within their grace
     */
    private List<DueSlot> claim(List<DueSlot> due) {
        List<DueSlot> deferred = new ArrayList<>();
        if (due.isEmpty()) {
            return deferred;
        }
        Collections.shuffle(due);
        Instant now = clock.now();
        int free = threads.free();
        List<DueSlot> batch = new ArrayList<>(due.size());
        List<ClaimRequest> requests = new ArrayList<>(due.size());
        List<Boolean> reservations = new ArrayList<>(due.size());
        int reserved = 0;
        for (DueSlot d : due) {
            ClaimRequest.Mode mode = d.mode;
            boolean reserves = false;
            if (d.needsThread()) {
                if (reserved < free) {
                    reserved++;
                    reserves = true;
                } else if (mode == ClaimRequest.Mode.CLAIM && now.isAfter(d.graceEnd())) {
                    mode = ClaimRequest.Mode.MISS_ONLY; // past its grace with no thread: only make sure the miss is recorded
                } else {
                    // No thread to start it now: peers may take it; try again when a thread frees up.
                    deferred.add(d);
                    continue;
                }
            }
            if (d.token == null) {
                d.token = newToken();
            }
            JobDefinition def = d.definition();
            Lease lease = new Lease(def.name(), d.slot, d.token, def.lease(), def.exclusive());
            requests.add(new ClaimRequest(lease, workerId, def.misfireGrace(), mode, def.overlap() == Overlap.REPLACE));
            reservations.add(reserves);
            batch.add(d);
        }
        if (requests.isEmpty()) {
            return deferred;
        }
        spreadDelay(); // before reserving: the delay reflects how busy we were, not this batch
        threads.take(reserved);
        long sent = System.nanoTime();
        List<ClaimResult> results;
        try {
            results = provider.claim(requests);
            outage.succeeded();
        } catch (LockException e) {
            threads.release(reserved);
            outage.failed("claim", e);
            Instant after = clock.now();
            for (DueSlot d : batch) {
                if (after.isBefore(d.graceEnd())) {
                    queue.requeue(d, SlotQueue.earliest(after.plus(RETRY_DELAY), d.graceEnd()));
                } else {
                    missed(d, Duration.between(d.slot, after).toMillis(), "lock store unreachable: " + e.getMessage(), null);
                    queue.decided(d, clock.now());
                }
            }
            return deferred;
        }
        long durationMs = (System.nanoTime() - sent) / 1_000_000;
        for (int i = 0; i < batch.size(); i++) {
            DueSlot d = batch.get(i);
            ClaimRequest request = requests.get(i);
            ClaimResult result = results.get(i);
            boolean claimed = result.status() == ClaimResult.Status.CLAIMED;
            if (!claimed && reservations.get(i)) {
                threads.release(1);
            } else if (claimed && !reservations.get(i)) {
                threads.take(1); // an earlier, ambiguous claim of ours had won after all
            }
            handle(d, request, result, sent, durationMs);
        }
        return deferred;
    }

    private void handle(DueSlot d, ClaimRequest request, ClaimResult result, long sentNanos, long durationMs) {
        JobDefinition def = d.definition();
        Lease lease = request.lease();
        String lockName = provider.lockName(lease);
        long lateness = result.serverTimeMillis() - d.slot.toEpochMilli();
        ClaimRequest.Mode mode = request.mode();
        if (result.status() != ClaimResult.Status.EARLY) {
            queue.noteRuns(def.name(), result.runningUntilMillis());
        }
        switch (result.status()) {
            case CLAIMED -> {
                if (mode == ClaimRequest.Mode.RECOVER) {
                    events.warn("slot_recovered").addKeyValue("job", def.name()).addKeyValue("slot", d.slot.toString())
                            .addKeyValue("lock_name", lockName).addKeyValue("action", "acquire")
                            .addKeyValue("identifier", lease.token()).addKeyValue("duration_ms", durationMs)
                            .addKeyValue("success", true).addKeyValue("fencing_token", result.fencingToken())
                            .addKeyValue("lateness_ms", lateness)
                            .addKeyValue("reason", "the run's lease ran out without an outcome; recover: rerun")
                            .log("slot recovered; running it again under a higher fencing token");
                } else {
                    var event = events.info("slot_claimed").addKeyValue("job", def.name()).addKeyValue("slot", d.slot.toString())
                            .addKeyValue("lock_name", lockName).addKeyValue("action", "acquire")
                            .addKeyValue("identifier", lease.token()).addKeyValue("duration_ms", durationMs)
                            .addKeyValue("success", true).addKeyValue("fencing_token", result.fencingToken())
                            .addKeyValue("lateness_ms", lateness);
                    if (mode == ClaimRequest.Mode.CATCH_UP) {
                        event = event.addKeyValue("catch_up", true);
                    }
                    event.log("slot claimed");
                }
                runner.start(new SlotRun(def, d.job.job(), lease, lockName, result.fencingToken(), workerId, sentNanos));
            }
            case TAKEN -> {
                if (mode == ClaimRequest.Mode.RECOVER || mode == ClaimRequest.Mode.ABANDON) {
                    events.debug("slot_recovery_skipped").addKeyValue("job", def.name()).addKeyValue("slot", d.slot.toString())
                            .log("nothing to recover: the run renewed, finished, or another worker took it");
                } else {
                    events.info("slot_contended").addKeyValue("job", def.name()).addKeyValue("slot", d.slot.toString())
                            .addKeyValue("lock_name", lockName).addKeyValue("action", "acquire")
                            .addKeyValue("identifier", lease.token()).addKeyValue("duration_ms", durationMs)
                            .addKeyValue("success", false).log("slot taken by another worker");
                }
            }
            case SKIPPED -> events.info("slot_skipped").addKeyValue("job", def.name()).addKeyValue("slot", d.slot.toString())
                    .addKeyValue("lock_name", lockName).addKeyValue("reason", "overlap: an earlier run still holds the lease")
                    .log("slot skipped");
            case MISSED -> missed(d, lateness, d.missReason != null ? d.missReason : request.missOnly()
                    ? "no free job thread on any worker within misfireGrace" : "later than misfireGrace", lockName);
            case ABANDONED -> events.warn("slot_abandoned").addKeyValue("job", def.name()).addKeyValue("slot", d.slot.toString())
                    .addKeyValue("lock_name", lockName).addKeyValue("fencing_token", result.fencingToken())
                    .addKeyValue("lateness_ms", lateness)
                    .addKeyValue("reason", "the run's lease ran out without an outcome; recover: none")
                    .log("slot abandoned: its run lost its lease without an outcome");
            case BUSY -> {
                // Another run of the job holds its exclusive lease: ask again shortly.
                queue.requeue(d, clock.now().plus(RETRY_DELAY));
                return;
            }
            case EARLY -> {
                // Our clock runs ahead of the store's: come back when the store's clock reaches the slot.
                long ahead = Math.max(1, d.slot.toEpochMilli() - result.serverTimeMillis());
                queue.requeue(d, clock.now().plusMillis(ahead));
                return;
            }
        }
        queue.decided(d, clock.now());
    }

    private void missed(DueSlot d, long latenessMs, String reason, String lockName) {
        var event = events.warn("slot_missed").addKeyValue("job", d.definition().name())
                .addKeyValue("slot", d.slot.toString()).addKeyValue("lateness_ms", latenessMs)
                .addKeyValue("reason", reason);
        if (lockName != null) {
            event = event.addKeyValue("lock_name", lockName);
        }
        event.log("slot missed");
    }

    /** A few milliseconds, more when busier, so that wins spread over the free workers. */
    private void spreadDelay() {
        long micros = ThreadLocalRandom.current().nextLong(0, 2_000) + (long) (threads.load() * 4_000);
        Runner.pause(Duration.ofNanos(micros * 1_000));
    }

    private static String newToken() {
        byte[] bytes = new byte[16];
        TOKENS.nextBytes(bytes);
        return HexFormat.of().formatHex(bytes);
    }
}
