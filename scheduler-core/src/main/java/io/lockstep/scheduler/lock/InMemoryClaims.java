package io.lockstep.scheduler.lock;

import java.util.TreeMap;

/**
 * What a claim, a staged claim's start and a recovery decide in {@link InMemoryLockProvider}, as
 * {@code claim.lua}, {@code start.lua} and {@code recover.lua} decide them in Redis: the slot's
 * answer ({@link ClaimResult.Status}, {@link StartAnswer}) and the records it writes on the way
 * (a slot decided, a fencing token handed out, a lease taken, a turn taken or given up). These are
 * the store's decisions about who runs a slot, the part of the in-memory store that must stay
 * answer for answer the same as the scripts (the provider contract tests hold both to it).
 *
 * <p>Apart from {@link InMemoryLockProvider} because the provider is the rest of the store's face:
 * its public methods, the clock, the batches, and the bookkeeping that decides nothing about who
 * runs a slot (renewals, completions, checkpoints, reads). The records and their helpers are the
 * base {@link InMemoryRecords}. Each decision takes the store time {@code now} its operation read.
 *
 * <p>Not thread-safe by itself: nothing here locks. Every method is called holding the provider's
 * monitor (this object's: its public methods are {@code synchronized}), as the records require.
 * Only InMemoryLockProvider extends it.
 */
abstract class InMemoryClaims extends InMemoryRecords {

    /** As claim.lua: a scheduled claim, a catch-up or a miss to record ({@link ClaimRequest.Mode}), decided at {@code now}. */
    final ClaimResult claimOne(ClaimRequest request, long now, java.time.Duration startWindow) {
        Lease lease = request.lease();
        long slot = lease.slot().toEpochMilli();
        String slotKey = slotKey(lease.job(), slot);
        long recordTtl = request.recordTtl().toMillis();
        SlotRecord existing = live(slotKey, now);
        if (existing != null) {
            if (!existing.token().equals(lease.token())) {
                return new ClaimResult(ClaimResult.Status.TAKEN, 0, now);
            }
            // A repeat of our own request (its reply was lost): the same decision again.
            switch (existing.state()) {
                case "running", "claimed" -> {
                    LeaseEntry held = liveLease(leaseKey(lease), now);
                    boolean ours = held == null || held.token().equals(lease.token());
                    if (request.mode() == ClaimRequest.Mode.MISS_ONLY) {
                        // Given up on and never started: disown it, so the record says what the events say.
                        releaseLease(lease, now);
                        running.getOrDefault(lease.job(), new TreeMap<>()).remove(slot);
                        slots.put(slotKey, existing.with("missed", "disowned"));
                        return new ClaimResult(ClaimResult.Status.MISSED, 0, now);
                    }
                    if (ours) {
                        boolean staged = existing.state().equals("claimed");
                        takeLease(lease, now, staged ? stagedTtl(request, now) : runTtl(lease, now));
                        return new ClaimResult(ClaimResult.Status.CLAIMED, existing.fence(), now, 0, "", !staged);
                    }
                    return new ClaimResult(ClaimResult.Status.TAKEN, 0, now);
                }
                case "missed" -> {
                    return new ClaimResult("order".equals(existing.note()) ? ClaimResult.Status.SUPERSEDED
                            : ClaimResult.Status.MISSED, 0, now);
                }
                case "skipped" -> {
                    return new ClaimResult("paused".equals(existing.note()) ? ClaimResult.Status.PAUSED
                            : ClaimResult.Status.SKIPPED, 0, now);
                }
                default -> {
                    return new ClaimResult(ClaimResult.Status.TAKEN, 0, now);
                }
            }
        }
        String backfill = request.backfill(); // as claim.lua: only for the job's backfill, past its cursor; never stale
        String[] mark = backfillMarks.get(lease.job());
        if (backfill == null && !request.manual() && mark != null && slot > Long.parseLong(mark[1]) && slot <= Long.parseLong(mark[2])) {
            return new ClaimResult(ClaimResult.Status.STALE, 0, now); // a slot a running backfill is to decide: left to it
        }
        if (backfill != null) {
            if (mark == null || !mark[0].equals(backfill) || slot <= Long.parseLong(mark[1])) {
                return new ClaimResult(ClaimResult.Status.STALE, 0, now);
            }
            if (paused.contains(io.lockstep.scheduler.RunOn.jobOf(lease.job()))) {
                return new ClaimResult(ClaimResult.Status.BUSY, 0, now);
            }
            long[] turn = turns.get(lease.job());
            if (turn != null && turn[1] > now) {
                return new ClaimResult(ClaimResult.Status.BUSY, 0, now); // a slot waiting for the lease goes first
            }
        }
        boolean ahead = now < slot;
        if (ahead && now < slot - request.ahead().toMillis()) {
            return new ClaimResult(ClaimResult.Status.EARLY, 0, now);
        }
        boolean manual = request.manual(); // as in Redis: outside the job's schedule, it neither reads nor moves the marks
        if (backfill == null && stale(lease.job(), slot, now, recordTtl, manual)) {
            return new ClaimResult(ClaimResult.Status.STALE, 0, now);
        }
        if (request.mode() == ClaimRequest.Mode.SKIP_ONLY) {
            decide(lease, new SlotRecord("skipped", lease.token(), 0, now + recordTtl, request.missCode()), manual, recordTtl);
            return new ClaimResult(ClaimResult.Status.SKIPPED, 0, now);
        }
        if (request.mode() == ClaimRequest.Mode.MISS_ONLY && "no_worker".equals(request.missCode()) && !manual
                && paused.contains(io.lockstep.scheduler.RunOn.jobOf(lease.job()))) {
            decide(lease, new SlotRecord("skipped", lease.token(), 0, now + recordTtl, "paused"), false, recordTtl);
            return new ClaimResult(ClaimResult.Status.PAUSED, 0, now); // as claim.lua: paused, not missed
        }
        if (request.mode() == ClaimRequest.Mode.MISS_ONLY
                || (request.mode() == ClaimRequest.Mode.CLAIM && now > slot + request.misfireGrace().toMillis())) {
            decide(lease, new SlotRecord("missed", lease.token(), 0, now + recordTtl), manual, recordTtl);
            return new ClaimResult(ClaimResult.Status.MISSED, 0, now);
        }
        if (!manual && paused.contains(io.lockstep.scheduler.RunOn.jobOf(lease.job()))) { // an instance's pause is its job's
            if (ahead) {
                return new ClaimResult(ClaimResult.Status.EARLY, 0, now); // decided at the slot: the pause may be over by then
            }
            decide(lease, new SlotRecord("skipped", lease.token(), 0, now + recordTtl, "paused"), false, recordTtl);
            return new ClaimResult(ClaimResult.Status.PAUSED, 0, now);
        }
        if (!manual && backfill == null && slot < startedSlots.getOrDefault(lease.job(), 0L)) {
            decide(lease, new SlotRecord("missed", lease.token(), 0, now + recordTtl, "order"), false, recordTtl);
            return new ClaimResult(ClaimResult.Status.SUPERSEDED, 0, now);
        }
        LeaseEntry holder = liveLease(leaseKey(lease), now);
        if (holder != null) {
            if (ahead) {
                return new ClaimResult(ClaimResult.Status.EARLY, 0, now); // decided at the slot: it may be free by then
            }
            if (request.mode() == ClaimRequest.Mode.CATCH_UP) {
                return new ClaimResult(ClaimResult.Status.BUSY, 0, now);
            }
            if (!manual && holder.token().equals(backfillTokens.get(lease.job()))) {
                // As claim.lua: the schedule waits for a backfill's run, holding the job's next turn until its grace ends.
                long[] turn = turns.get(lease.job());
                if (turn == null || turn[1] <= now || turn[0] > slot) {
                    turns.put(lease.job(), new long[] {slot, slot + request.misfireGrace().toMillis()});
                }
                return new ClaimResult(ClaimResult.Status.BUSY, 0, now);
            }
            if (request.replace()) {
                revoke(lease.job(), holder.token(), now);
            } else {
                decide(lease, new SlotRecord("skipped", lease.token(), 0, now + recordTtl), manual, recordTtl);
                return new ClaimResult(ClaimResult.Status.SKIPPED, 0, now);
            }
        } else if (!manual && !request.replace() && turnHeldBefore(lease.job(), slot, now)) {
            // As claim.lua: an earlier slot's rerun holds the next turn, so this slot yields to it as to a run.
            if (ahead) {
                return new ClaimResult(ClaimResult.Status.EARLY, 0, now);
            }
            if (request.mode() == ClaimRequest.Mode.CATCH_UP) {
                return new ClaimResult(ClaimResult.Status.BUSY, 0, now);
            }
            decide(lease, new SlotRecord("skipped", lease.token(), 0, now + recordTtl), manual, recordTtl);
            return new ClaimResult(ClaimResult.Status.SKIPPED, 0, now);
        }
        long fence = nextFence(lease.job(), now);
        // As claim.lua: a claim made ahead is the run's start within the start window of its slot, else staged.
        long window = startWindow.toMillis(); // 0: every claim made ahead is staged, whenever it is decided
        boolean staged = request.staged() && (window == 0 || slot - now > window);
        decide(lease, new SlotRecord(staged ? "claimed" : "running", lease.token(), fence,
                Math.max(slot, now) + recordTtl), manual, recordTtl); // the record lives from the slot, as in Redis
        if (!manual && backfill == null) {
            startedSlots.merge(lease.job(), slot, Math::max);
            leaveTurn(lease.job(), slot);
        }
        if (backfill != null) {
            backfillMarks.put(lease.job(), new String[] {backfill, Long.toString(slot), mark[2]});
            backfillTokens.put(lease.job(), lease.token());
            backfilledSlots.add(slotKey);
        }
        takeLease(lease, now, staged ? stagedTtl(request, now) : runTtl(lease, now));
        return new ClaimResult(ClaimResult.Status.CLAIMED, fence, now, 0, "", !staged);
    }

    /** A run's lease, as claim.lua: the job's ttl from its slot (from now for a claim at or after it). */
    private static long runTtl(Lease lease, long now) {
        return lease.ttl().toMillis() + Math.max(lease.slot().toEpochMilli() - now, 0);
    }

    /** As start.lua. */
    final StartAnswer startOne(StartRequest request, long now) {
        Lease lease = request.lease();
        long slot = lease.slot().toEpochMilli();
        String slotKey = slotKey(lease.job(), slot);
        SlotRecord record = live(slotKey, now);
        LeaseEntry held = liveLease(leaseKey(lease), now);
        boolean holds = held != null && held.token().equals(lease.token());
        if (record == null || !record.token().equals(lease.token())) {
            return StartAnswer.LOST;
        }
        switch (record.state()) {
            case "running" -> {
                return holds ? StartAnswer.STARTED : StartAnswer.LOST; // a repeat
            }
            case "missed" -> {
                return "late".equals(record.note()) ? StartAnswer.LATE : StartAnswer.LOST;
            }
            case "skipped" -> {
                return "paused".equals(record.note()) ? StartAnswer.PAUSED : StartAnswer.LOST;
            }
            case "claimed" -> { }
            default -> {
                return StartAnswer.LOST;
            }
        }
        if (!holds) {
            return StartAnswer.LOST;
        }
        if (now > slot + request.misfireGrace().toMillis() || paused.contains(io.lockstep.scheduler.RunOn.jobOf(lease.job()))) {
            boolean late = now > slot + request.misfireGrace().toMillis();
            slots.put(slotKey, record.with(late ? "missed" : "skipped", late ? "late" : "paused"));
            leases.remove(leaseKey(lease));
            running.getOrDefault(lease.job(), new TreeMap<>()).remove(slot);
            return late ? StartAnswer.LATE : StartAnswer.PAUSED;
        }
        slots.put(slotKey, record.with("running"));
        extendLease(lease, now);
        return StartAnswer.STARTED;
    }

    /** As recover.lua: a rerun or an abandonment of a run whose lease ran out, decided at {@code now}. */
    final ClaimResult recoverOne(ClaimRequest request, long now) {
        Lease lease = request.lease();
        long slot = lease.slot().toEpochMilli();
        String slotKey = slotKey(lease.job(), slot);
        TreeMap<Long, Long> runs = running.getOrDefault(lease.job(), new TreeMap<>());
        SlotRecord record = live(slotKey, now);
        if (record != null && record.state().equals("running") && record.token().equals(lease.token())) {
            LeaseEntry held = liveLease(leaseKey(lease), now);
            if (held != null && !held.token().equals(lease.token())) {
                return new ClaimResult(ClaimResult.Status.TAKEN, 0, now);
            }
            takeLease(lease, now, lease.ttl().toMillis()); // a repeat of our own recovery (its reply was lost)
            return new ClaimResult(ClaimResult.Status.CLAIMED, record.fence(), now);
        }
        if (record != null && record.state().equals("abandoned") && lease.token().equals(record.note())) {
            return new ClaimResult(ClaimResult.Status.ABANDONED, record.fence(), now);
        }
        if (record != null && record.state().equals("missed") && record.token().equals(lease.token())) {
            return new ClaimResult(ClaimResult.Status.MISSED, 0, now);
        }
        Long leaseEnd = runs.get(slot);
        if (leaseEnd == null || leaseEnd > now) {
            leaveTurn(lease.job(), slot); // as recover.lua: settled or alive, it needs no turn
            return new ClaimResult(ClaimResult.Status.TAKEN, 0, now);
        }
        if (record == null || !(record.state().equals("running") || record.state().equals("claimed"))) {
            runs.remove(slot);
            leaveTurn(lease.job(), slot);
            return new ClaimResult(ClaimResult.Status.TAKEN, 0, now);
        }
        LeaseEntry holder = liveLease(leaseKey(lease), now);
        if (holder != null && holder.token().equals(record.token())) {
            leaveTurn(lease.job(), slot);
            return new ClaimResult(ClaimResult.Status.TAKEN, 0, now);
        }
        // As recover.lua: a run that never started is run whatever the policy, within its grace.
        boolean unstarted = record.state().equals("claimed");
        if (unstarted && now < slot) {
            return new ClaimResult(ClaimResult.Status.EARLY, 0, now); // never before the slot
        }
        if (unstarted && now > slot + request.misfireGrace().toMillis() && !backfilledSlots.contains(slotKey)) {
            slots.put(slotKey, new SlotRecord("missed", lease.token(), 0, record.expiresAt(), "not_started"));
            runs.remove(slot);
            leaveTurn(lease.job(), slot);
            return new ClaimResult(ClaimResult.Status.MISSED, 0, now);
        }
        if (request.mode() == ClaimRequest.Mode.ABANDON && !unstarted) {
            slots.put(slotKey, record.with("abandoned", lease.token()));
            runs.remove(slot);
            leaveTurn(lease.job(), slot);
            return new ClaimResult(ClaimResult.Status.ABANDONED, record.fence(), now);
        }
        if (holder != null || turnHeldBefore(lease.job(), slot, now)) {
            takeTurn(lease.job(), slot, now); // as recover.lua: the next turn is this rerun's, unless an earlier one holds it
            return new ClaimResult(ClaimResult.Status.BUSY, 0, now);
        }
        leaveTurn(lease.job(), slot);
        // As recover.lua says why: a hand-over of a run its worker's stop interrupted, else a lost lease.
        String why = unstarted ? "not_started" : record.token().equals(handed.get(slotKey))
                && handedOutcomes.get(slotKey) == Outcome.INTERRUPTED ? "handed_over" : "lease_lost";
        long fence = nextFence(lease.job(), now);
        slots.put(slotKey, new SlotRecord("running", lease.token(), fence,
                Math.max(record.expiresAt(), now + request.recordTtl().toMillis())));
        takeLease(lease, now, lease.ttl().toMillis());
        return new ClaimResult(ClaimResult.Status.CLAIMED, fence, now, 0, why);
    }
}
