package io.lockstep.scheduler.lock;

import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.LongSupplier;

/**
 * A lock store in this JVM's memory with the same semantics as the Redis provider (same states,
 * same answers, same expiries): for tests and for running several schedulers in one process. It
 * coordinates nothing across processes.
 *
 * <p>Thread-safe (every operation holds one monitor: this object's). The records, and the helpers
 * that read and write them, are in the package-private base {@link InMemoryRecords}, which locks
 * nothing and is used only under that monitor. What a claim, a start and a recovery decide (who
 * runs a slot: claim.lua, start.lua, recover.lua) is the base {@link InMemoryClaims}, under the
 * same monitor; what the other operations decide (renewals, completions, checkpoints, reads) stays
 * here, with every public method.
 */
public final class InMemoryLockProvider extends InMemoryClaims implements LockProvider {

    private final LongSupplier clockMillis;
    /** {@link #startWindow()}: {@link ClaimRequest#START_WINDOW}, as on Redis, unless a test stages every claim ahead. */
    private volatile java.time.Duration startWindow = ClaimRequest.START_WINDOW;

    private InMemoryLockProvider(LongSupplier clockMillis) {
        this.clockMillis = clockMillis;
    }

    /** A store on the system clock. */
    public static InMemoryLockProvider create() {
        return new InMemoryLockProvider(System::currentTimeMillis);
    }

    /** A store whose "server time" is read from {@code clockMillis} (epoch milliseconds). */
    public static InMemoryLockProvider withClock(LongSupplier clockMillis) {
        return new InMemoryLockProvider(clockMillis);
    }

    /**
     * Sets {@link #startWindow()} ({@link java.time.Duration#ZERO}: every claim made ahead is staged,
     * as on a store without a window); returns this store.
     */
    public InMemoryLockProvider withStartWindow(java.time.Duration window) {
        this.startWindow = java.util.Objects.requireNonNull(window, "window");
        return this;
    }

    @Override
    public java.time.Duration startWindow() {
        return startWindow;
    }

    @Override
    public synchronized List<ClaimResult> claim(List<ClaimRequest> requests) {
        List<ClaimResult> results = new ArrayList<>(requests.size());
        for (ClaimRequest request : requests) {
            results.add(switch (request.mode()) {
                case RECOVER, ABANDON -> recoverOne(request, clockMillis.getAsLong());
                default -> claimOne(request, clockMillis.getAsLong(), startWindow);
            });
            ClaimResult r = results.get(results.size() - 1);
            results.set(results.size() - 1, new ClaimResult(r.status(), r.fencingToken(), r.serverTimeMillis(),
                    runningUntil(request.lease().job()), r.why(), r.started()));
        }
        return results;
    }

    @Override
    public synchronized List<StartReply> start(List<StartRequest> requests) {
        long now = clockMillis.getAsLong();
        List<StartReply> answers = new ArrayList<>(requests.size());
        for (StartRequest request : requests) {
            answers.add(new StartReply(startOne(request, now), now * 1_000));
        }
        return answers;
    }

    /** As checkpoint.lua: saved only while the record is this token's running run. */
    @Override
    public synchronized boolean checkpoint(Lease lease, Checkpoint checkpoint) {
        long now = clockMillis.getAsLong();
        String slotKey = slotKey(lease.job(), lease.slot().toEpochMilli());
        SlotRecord record = live(slotKey, now);
        if (record == null || !record.token().equals(lease.token()) || !record.state().equals("running")
                || lease.token().equals(handed.get(slotKey))) {
            return false;
        }
        checkpoints.merge(slotKey, checkpoint, (old, c) -> c.after(old) ? c : old);
        return true;
    }

    @Override
    public synchronized java.util.Optional<Checkpoint> lastCheckpoint(String job, Instant slot) {
        String slotKey = slotKey(job, slot.toEpochMilli());
        return live(slotKey, clockMillis.getAsLong()) == null ? java.util.Optional.empty() : java.util.Optional.ofNullable(checkpoints.get(slotKey));
    }

    @Override
    public synchronized List<RunsInFlight> runsInFlight(List<String> jobs) {
        long now = clockMillis.getAsLong();
        List<RunsInFlight> result = new ArrayList<>(jobs.size());
        for (String job : jobs) {
            List<Instant> expired = new ArrayList<>();
            long next = 0;
            for (Map.Entry<Long, Long> run : running.getOrDefault(job, new TreeMap<>()).entrySet()) {
                if (run.getValue() <= now) {
                    expired.add(Instant.ofEpochMilli(run.getKey()));
                } else if (next == 0 || run.getValue() < next) {
                    next = run.getValue();
                }
            }
            result.add(new RunsInFlight(job, expired, next));
        }
        return result;
    }

    @Override
    public synchronized Map<String, Instant> lastSlots(List<String> jobs) {
        Map<String, Instant> result = new HashMap<>();
        for (String job : jobs) {
            Long last = lastSlots.get(job);
            if (last != null) {
                result.put(job, Instant.ofEpochMilli(last));
            }
        }
        return result;
    }

    private final InMemoryInForce stamps = new InMemoryInForce();

    /** As {@code inforce.lua} and {@code forget.lua} do in Redis. */
    @Override
    public synchronized void stampInForce(java.util.Collection<String> enabled, java.util.Collection<String> disabled, boolean fresh) {
        long now = clockMillis.getAsLong();
        for (String job : stamps.stamp(enabled, disabled, fresh, now)) {
            Long decided = lastSlots.get(job);
            if (decided == null || now - decided > InForce.KEEP.toMillis()) {
                lastSlots.remove(job);
            }
        }
    }

    @Override
    public synchronized Map<String, InForce> inForce(List<String> jobs) {
        return stamps.read(jobs);
    }

    @Override
    public synchronized List<Boolean> renew(List<Lease> batch) {
        long now = clockMillis.getAsLong();
        List<Boolean> results = new ArrayList<>(batch.size());
        for (Lease lease : batch) {
            LeaseEntry entry = liveLease(leaseKey(lease), now);
            boolean owned = entry != null && entry.token().equals(lease.token());
            if (!owned) {
                // As in Redis: a renewal that crossed its own run's completion finds it done under its token.
                results.add(completedBy(lease, now));
                continue;
            }
            extendLease(lease, now);
            // As in Redis: the slot record lives at least two leases beyond a renewal.
            String slotKey = slotKey(lease.job(), lease.slot().toEpochMilli());
            SlotRecord record = live(slotKey, now);
            long keep = now + 2 * lease.ttl().toMillis();
            if (record != null && record.expiresAt() < keep) {
                slots.put(slotKey, new SlotRecord(record.state(), record.token(), record.fence(), keep));
            }
            results.add(true);
        }
        return results;
    }

    @Override
    public synchronized List<Boolean> complete(List<Completion> completions) {
        List<Boolean> owned = new ArrayList<>(completions.size());
        for (Completion c : completions) {
            owned.add(completeOne(c));
        }
        return owned;
    }

    /** As complete.lua, hand-overs included. */
    private boolean completeOne(Completion c) {
        Lease lease = c.lease();
        Outcome outcome = c.outcome();
        long now = clockMillis.getAsLong();
        long slot = lease.slot().toEpochMilli();
        String slotKey = slotKey(lease.job(), slot);
        SlotRecord record = live(slotKey, now);
        releaseLease(lease, now);
        if (record == null || !record.token().equals(lease.token())) {
            return false;
        }
        if (record.state().startsWith("done:") || lease.token().equals(handed.get(slotKey))) {
            return true; // a repeat of our own completion (its reply was lost)
        }
        if (!record.state().equals("running") && !record.state().equals("claimed")) {
            return false;
        }
        TreeMap<Long, Long> runs = running.getOrDefault(lease.job(), new TreeMap<>());
        if (!runs.containsKey(slot)) {
            slots.put(slotKey, record.with("replaced"));
            return false;
        }
        String mode = c.handOverMode();
        if (mode.isEmpty()) {
            slots.put(slotKey, record.with("done:" + outcome.label()));
            runs.remove(slot);
        } else {
            runs.put(slot, now); // expired now: the next look hands it to a peer
            slots.put(slotKey, record.with(mode.equals("unstarted") ? "claimed" : "running"));
            handed.put(slotKey, lease.token());
            handedOutcomes.put(slotKey, outcome);
        }
        return true;
    }

    /**
     * Pauses {@code job} cluster-wide, as {@code pause} does in Redis: its slots are recorded as skipped
     * ({@link ClaimResult.Status#PAUSED}) until {@link #resume}; manual runs still run.
     */
    public synchronized void pause(String job) {
        paused.add(job);
    }

    /** Ends a {@link #pause}. */
    public synchronized void resume(String job) {
        paused.remove(job);
    }

    /** The backfills requested, by job, the progress their drivers wrote, and the slots decided when each was asked for. */
    private final Map<String, Backfill> backfills = new java.util.LinkedHashMap<>();
    private final Map<String, Backfill.Progress> backfillProgress = new HashMap<>();
    private final Map<String, java.util.Set<Instant>> decidedAtRequest = new HashMap<>();

    @Override
    public synchronized Backfill requestBackfill(String job, Instant from, Instant to, double perSecond, String by,
            java.util.Collection<Instant> decided) {
        if (backfillMarks.containsKey(job)) {
            throw new IllegalStateException(job + " has a backfill running: wait for it to end, or cancel it");
        }
        Backfill b = new Backfill(java.util.UUID.randomUUID().toString(), job, from, to, perSecond, by,
                Instant.ofEpochMilli(clockMillis.getAsLong()), false);
        decidedAtRequest.put(b.id(), java.util.Set.copyOf(decided));
        backfillMarks.put(job, new String[] {b.id(), "0", Long.toString(to.toEpochMilli())});
        backfills.put(job, b);
        backfillProgress.remove(job);
        return b;
    }

    @Override
    public synchronized Optional<Backfill> cancelBackfill(String job) {
        String[] mark = backfillMarks.remove(job); // as BackfillStore: the mark first, then the request it named (or a running one)
        Backfill b = backfills.get(job);
        Backfill.Progress p = backfillProgress.get(job);
        boolean running = b != null && !b.cancelled() && (p == null || !p.id().equals(b.id()) || !p.ended());
        if (b == null || !(mark != null && mark[0].equals(b.id()) || mark == null && running)) {
            return Optional.empty();
        }
        backfills.put(job, b.cancel());
        return Optional.of(b.cancel());
    }

    @Override
    public synchronized List<Backfill.Entry> backfills() {
        List<Backfill.Entry> entries = new ArrayList<>();
        backfills.forEach((job, b) -> entries.add(new Backfill.Entry(b, backfillProgress.get(job))));
        return entries;
    }

    @Override
    public synchronized Heartbeat heartbeat(WorkerInfo self, java.time.Duration ttl) {
        return new Heartbeat(List.of(self), List.of(), 0, true, null, backfills());
    }

    @Override
    public synchronized Backfill.View backfillView(String job, String backfill, List<Instant> asked, java.time.Duration recordTtl) {
        long now = clockMillis.getAsLong();
        java.util.Set<Instant> known = backfill == null ? java.util.Set.of() : decidedAtRequest.getOrDefault(backfill, java.util.Set.of());
        java.util.Set<Instant> decided = new java.util.HashSet<>();
        for (Instant slot : asked) {
            if (known.contains(slot) || live(slotKey(job, slot.toEpochMilli()), now) != null) {
                decided.add(slot);
            }
        }
        String[] mark = backfillMarks.get(job);
        long judged = Math.min(recordTtl.toMillis(), kept.getOrDefault(job, recordTtl.toMillis())); // no history: the records alone tell
        return new Backfill.View(now, mark == null ? null : mark[0],
                mark == null || mark[1].equals("0") ? null : Instant.ofEpochMilli(Long.parseLong(mark[1])),
                Instant.ofEpochMilli(now - judged), decided);
    }

    @Override
    public synchronized void backfillProgress(Backfill backfill, Backfill.Progress progress) {
        Backfill request = backfills.get(backfill.job());
        Backfill.Progress current = backfillProgress.get(backfill.job());
        if (request == null || !request.id().equals(backfill.id())) {
            return; // a newer request's (as backfill_progress.lua)
        }
        if (current == null || !current.id().equals(backfill.id()) || !current.ended()) {
            backfillProgress.put(backfill.job(), progress);
        }
        String[] mark = backfillMarks.get(backfill.job());
        if (progress.ended() && mark != null && mark[0].equals(backfill.id())) {
            backfillMarks.remove(backfill.job());
        }
    }

    @Override
    public long serverTimeMillis() {
        return clockMillis.getAsLong();
    }

    @Override
    public String describe() {
        return "in-memory";
    }

    /**
     * The state of a slot's record ({@code running}, {@code done:succeeded}, {@code missed},
     * {@code abandoned}, {@code replaced}, ...), for tests.
     */
    public synchronized Optional<String> slotState(String job, Instant slot) {
        return Optional.ofNullable(live(slotKey(job, slot.toEpochMilli()), clockMillis.getAsLong())).map(SlotRecord::state);
    }

    @Override
    public synchronized List<SlotState> slotStates(List<SlotState.Ref> refs) {
        long now = clockMillis.getAsLong();
        List<SlotState> states = new ArrayList<>(refs.size());
        for (SlotState.Ref ref : refs) {
            long slot = ref.slot().toEpochMilli();
            SlotRecord record = live(slotKey(ref.job(), slot), now);
            Long end = running.getOrDefault(ref.job(), new TreeMap<>()).get(slot);
            String state = record == null ? null : record.state().startsWith("done:") ? "done" : record.state();
            states.add(SlotState.of(state, end == null ? 0 : end));
        }
        return states;
    }

    private final InMemoryPermits permits = new InMemoryPermits();

    /** Limits in this JVM ({@link InMemoryPermits}). */
    @Override
    public Optional<Permits> permits() {
        return Optional.of(permits);
    }
}
