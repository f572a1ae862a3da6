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
 * nothing and is used only under that monitor; what each operation decides stays here.
 */
public final class InMemoryLockProvider extends InMemoryRecords implements LockProvider {

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
                case RECOVER, ABANDON -> recoverOne(request);
                default -> claimOne(request);
            });
            ClaimResult r = results.get(results.size() - 1);
            results.set(results.size() - 1, new ClaimResult(r.status(), r.fencingToken(), r.serverTimeMillis(),
                    runningUntil(request.lease().job()), r.why(), r.started()));
        }
        return results;
    }

    private ClaimResult claimOne(ClaimRequest request) {
        long now = clockMillis.getAsLong();
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
        boolean ahead = now < slot;
        if (ahead && now < slot - request.ahead().toMillis()) {
            return new ClaimResult(ClaimResult.Status.EARLY, 0, now);
        }
        boolean manual = request.manual(); // as in Redis: outside the job's schedule, it neither reads nor moves the marks
        if (stale(lease.job(), slot, now, recordTtl, manual)) {
            return new ClaimResult(ClaimResult.Status.STALE, 0, now);
        }
        if (request.mode() == ClaimRequest.Mode.MISS_ONLY
                || (request.mode() == ClaimRequest.Mode.CLAIM && now > slot + request.misfireGrace().toMillis())) {
            decide(lease, new SlotRecord("missed", lease.token(), 0, now + recordTtl), manual, recordTtl);
            return new ClaimResult(ClaimResult.Status.MISSED, 0, now);
        }
        if (!manual && paused.contains(lease.job())) {
            if (ahead) {
                return new ClaimResult(ClaimResult.Status.EARLY, 0, now); // decided at the slot: the pause may be over by then
            }
            decide(lease, new SlotRecord("skipped", lease.token(), 0, now + recordTtl, "paused"), false, recordTtl);
            return new ClaimResult(ClaimResult.Status.PAUSED, 0, now);
        }
        if (!manual && slot < startedSlots.getOrDefault(lease.job(), 0L)) {
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
        if (!manual) {
            startedSlots.merge(lease.job(), slot, Math::max);
        }
        takeLease(lease, now, staged ? stagedTtl(request, now) : runTtl(lease, now));
        return new ClaimResult(ClaimResult.Status.CLAIMED, fence, now, 0, "", !staged);
    }

    /** A run's lease, as claim.lua: the job's ttl from its slot (from now for a claim at or after it). */
    private static long runTtl(Lease lease, long now) {
        return lease.ttl().toMillis() + Math.max(lease.slot().toEpochMilli() - now, 0);
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

    /** As start.lua. */
    private StartAnswer startOne(StartRequest request, long now) {
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
        if (now > slot + request.misfireGrace().toMillis() || paused.contains(lease.job())) {
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

    private ClaimResult recoverOne(ClaimRequest request) {
        long now = clockMillis.getAsLong();
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
        if (unstarted && now > slot + request.misfireGrace().toMillis()) {
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
}
