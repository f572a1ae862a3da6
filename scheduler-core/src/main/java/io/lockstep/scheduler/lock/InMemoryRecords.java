package io.lockstep.scheduler.lock;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * The state of {@link InMemoryLockProvider} and the small steps its operations are made of: the
 * records (as Redis's keys: slot records, leases, fence counters, the running index, the marks,
 * hand-overs, pauses) and the helpers that read and write them the way the Lua scripts do (a slot
 * decided, a fencing token handed out, a lease taken, extended, released or revoked, a record or
 * lease read only while it lives, a run found completed under its token). The operations
 * themselves are in the classes above it: what a claim, start or recovery decides in
 * {@link InMemoryClaims}; what a renewal or completion decides, and every public method, in
 * {@link InMemoryLockProvider}.
 *
 * <p>Not thread-safe by itself, and not meant to be: nothing here locks. Every member must be used
 * while holding this object's monitor, which every method of {@link InMemoryLockProvider} that
 * touches the records does (they are {@code synchronized}, on the same object, and call
 * {@link InMemoryClaims} only from there). Only InMemoryClaims extends it, and only
 * InMemoryLockProvider extends that; nothing else in the package touches it.
 */
abstract class InMemoryRecords {

    /** A slot record; {@code note} is why a miss was recorded, or the token that abandoned the run. */
    record SlotRecord(String state, String token, long fence, long expiresAt, String note) {
        SlotRecord(String state, String token, long fence, long expiresAt) {
            this(state, token, fence, expiresAt, null);
        }

        SlotRecord with(String newState) {
            return new SlotRecord(newState, token, fence, expiresAt, note);
        }

        SlotRecord with(String newState, String newNote) {
            return new SlotRecord(newState, token, fence, expiresAt, newNote);
        }
    }

    /** A lease: who holds it, until when (store time, epoch ms). */
    record LeaseEntry(String token, long expiresAt) {}

    /** Slot records, by {@link #slotKey}. */
    final Map<String, SlotRecord> slots = new HashMap<>();
    /** Leases, by {@link #leaseKey}: per job when exclusive, else per slot. */
    final Map<String, LeaseEntry> leases = new HashMap<>();
    /** Per job, the last fencing token handed out. */
    final Map<String, Long> fences = new HashMap<>();
    /** Per job: slot millis of runs in flight, to the store time their lease ends. */
    final Map<String, TreeMap<Long, Long>> running = new HashMap<>();
    /** Per job, the latest slot the cluster decided. */
    final Map<String, Long> lastSlots = new HashMap<>();
    /** Per job, the latest slot that started a run. */
    final Map<String, Long> startedSlots = new HashMap<>();
    /**
     * Per job, the shortest slot record ttl a claim of a scheduled slot wrote (claim.lua's
     * {@code <job>:kept}); a slot without a record is judged stale by it, see {@link #decide}.
     */
    final Map<String, Long> kept = new HashMap<>();
    /** The same for manual runs (claim.lua's {@code <job>:mkept}): they never move the job's decided slot. */
    final Map<String, Long> manualKept = new HashMap<>();
    /** Slot records handed over by a completion (complete.lua's 'handed'): slot key to the token. */
    final Map<String, String> handed = new HashMap<>();
    /** The outcome each hand-over carried (complete.lua keeps it in the record's 'outcome'). */
    final Map<String, Outcome> handedOutcomes = new HashMap<>();
    /** Runs' checkpoints, by {@link #slotKey} (checkpoint.lua's fields of the slot record). */
    final Map<String, Checkpoint> checkpoints = new HashMap<>();
    /** Per job, the rerun waiting for the lease (recover.lua's {@code <job>:turn}): its slot and when its turn lapses. */
    final Map<String, long[]> turns = new HashMap<>();

    /** Whether a rerun of a slot before {@code slot} holds the job's turn at {@code now}. */
    final boolean turnHeldBefore(String job, long slot, long now) {
        long[] turn = turns.get(job);
        return turn != null && turn[1] > now && turn[0] < slot;
    }

    /** A rerun of {@code slot} was refused busy: it takes the job's turn, unless an earlier slot's rerun holds it. */
    final void takeTurn(String job, long slot, long now) {
        long[] turn = turns.get(job);
        if (turn == null || turn[1] <= now || turn[0] >= slot) {
            turns.put(job, new long[] {slot, now + ClaimResult.TURN_HOLD.toMillis()});
        }
    }

    /** {@code slot} was decided (rerun, missed or abandoned): a turn it held is given up. */
    final void leaveTurn(String job, long slot) {
        long[] turn = turns.get(job);
        if (turn != null && turn[0] == slot) {
            turns.remove(job);
        }
    }

    /** Per job, its backfill's id, cursor and last slot (claim.lua's {@code <job>:bf}): {id, cursor ms, to ms}; absent when it has none running. */
    final Map<String, String[]> backfillMarks = new HashMap<>();

    /** The slot keys a backfill claimed (claim.lua's record field {@code origin: backfill}): recovered past their grace. */
    final java.util.Set<String> backfilledSlots = new java.util.HashSet<>();

    /** Per job, the token of its backfill's latest run (claim.lua's {@code <job>:bftoken}): a scheduled claim waits for it. */
    final Map<String, String> backfillTokens = new HashMap<>();

    /** The paused jobs (as Redis's {@code <prefix>:{job}:paused}, without its optional ttl). */
    final java.util.Set<String> paused = new java.util.HashSet<>();

    /**
     * Writes the deciding record of a slot and, unless it is a manual run's, moves the job's last
     * decided slot forward; keeps {@code recordTtl} if it is the shortest the job's records (of its
     * kind: scheduled or manual) were written with.
     */
    final void decide(Lease lease, SlotRecord record, boolean manual, long recordTtl) {
        long slot = lease.slot().toEpochMilli();
        slots.put(slotKey(lease.job(), slot), record);
        if (!manual) {
            lastSlots.merge(lease.job(), slot, Math::max);
        }
        (manual ? manualKept : kept).merge(lease.job(), recordTtl, Math::min);
    }

    /**
     * Whether a slot without a record may be one whose record expired (as claim.lua): older than
     * the shortest record ttl any claim of the job wrote, or than {@code recordTtl} (the claimant's),
     * and either a manual run or no later than the job's last decided slot.
     */
    final boolean stale(String job, long slot, long now, long recordTtl, boolean manual) {
        long judged = Math.min(recordTtl, (manual ? manualKept : kept).getOrDefault(job, recordTtl));
        Long decided = lastSlots.get(job);
        return now >= slot + judged && (manual || decided == null || slot <= decided);
    }

    /** As in Redis: max(counter + 1, store time in microseconds), so tokens never go back. */
    final long nextFence(String job, long nowMillis) {
        long fence = Math.max(fences.getOrDefault(job, 0L) + 1, nowMillis * 1_000);
        fences.put(job, fence);
        return fence;
    }

    final void takeLease(Lease lease, long now, long ttlMillis) {
        long end = now + ttlMillis;
        leases.put(leaseKey(lease), new LeaseEntry(lease.token(), end));
        running.computeIfAbsent(lease.job(), j -> new TreeMap<>()).put(lease.slot().toEpochMilli(), end);
    }

    /**
     * A renewal's extension, as renew.lua: the lease runs {@code ttl} from now, and the run's entry in
     * the running index moves only if it is still there (ZADD XX). A run that left the index (replaced,
     * disowned, dealt with) is never put back: it would come back to be recovered.
     */
    final void extendLease(Lease lease, long now) {
        long end = now + lease.ttl().toMillis();
        leases.put(leaseKey(lease), new LeaseEntry(lease.token(), end));
        TreeMap<Long, Long> runs = running.get(lease.job());
        if (runs != null) {
            runs.computeIfPresent(lease.slot().toEpochMilli(), (slot, old) -> end);
        }
    }

    /** Drops the lease of {@code lease} if its token holds it (a lease another token holds stays). */
    final void releaseLease(Lease lease, long now) {
        LeaseEntry held = liveLease(leaseKey(lease), now);
        if (held != null && held.token().equals(lease.token())) {
            leases.remove(leaseKey(lease));
        }
    }

    /**
     * Whether the run of {@code lease} is over under its own token: its slot record done, or handed
     * over by it (complete.lua's 'handed').
     */
    final boolean completedBy(Lease lease, long now) {
        String slotKey = slotKey(lease.job(), lease.slot().toEpochMilli());
        SlotRecord record = live(slotKey, now);
        return record != null && record.token().equals(lease.token())
                && (record.state().startsWith("done:") || lease.token().equals(handed.get(slotKey)));
    }

    /** Marks the run of {@code job} holding {@code token} as replaced; it no longer counts as running. */
    final void revoke(String job, String token, long now) {
        TreeMap<Long, Long> runs = running.getOrDefault(job, new TreeMap<>());
        for (Long slot : new ArrayList<>(runs.keySet())) {
            String key = slotKey(job, slot);
            SlotRecord record = live(key, now);
            if (record != null && record.token().equals(token)) {
                slots.put(key, record.with("replaced"));
                runs.remove(slot);
            }
        }
    }

    static String slotKey(String job, long slot) {
        return job + ":" + slot;
    }

    static String leaseKey(Lease lease) {
        return lease.exclusive() ? lease.job() : lease.job() + ":" + lease.slot().toEpochMilli();
    }

    final LeaseEntry liveLease(String key, long now) {
        LeaseEntry entry = leases.get(key);
        return entry == null || entry.expiresAt() <= now ? null : entry;
    }

    final SlotRecord live(String key, long now) {
        SlotRecord record = slots.get(key);
        return record == null || record.expiresAt() <= now ? null : record;
    }

    /** A staged claim's short lease, as claim.lua: until the slot plus {@link ClaimRequest#STAGED_MARGIN}. */
    static long stagedTtl(ClaimRequest request, long now) {
        return Math.max(request.lease().slot().toEpochMilli() - now, 0) + ClaimRequest.STAGED_MARGIN.toMillis();
    }

    /** The earliest lease end among the job's runs in flight, 0 if none (the fourth part of every answer). */
    final long runningUntil(String job) {
        return running.getOrDefault(job, new TreeMap<>()).values().stream().mapToLong(Long::longValue).min().orElse(0);
    }
}
