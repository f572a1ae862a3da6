package io.lockstep.scheduler.lock;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * A lock store in this JVM's memory with the same semantics as the Redis provider: for tests and
 * for running several schedulers in one process. It coordinates nothing across processes.
 *
 * <p>Thread-safe (every operation holds one monitor).
 */
public final class InMemoryLockProvider implements LockProvider {

    private record SlotRecord(String state, String token, long fence, long expiresAt) {}

    private record LeaseEntry(String token, long expiresAt) {}

    private final LongSupplier clockMillis;
    private final Map<String, SlotRecord> slots = new HashMap<>();
    private final Map<String, LeaseEntry> leases = new HashMap<>();
    private final Map<String, Long> fences = new HashMap<>();

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

    @Override
    public synchronized List<ClaimResult> claim(List<ClaimRequest> requests) {
        List<ClaimResult> results = new ArrayList<>(requests.size());
        for (ClaimRequest request : requests) {
            results.add(claimOne(request));
        }
        return results;
    }

    private ClaimResult claimOne(ClaimRequest request) {
        long now = clockMillis.getAsLong();
        Lease lease = request.lease();
        long slot = lease.slot().toEpochMilli();
        String slotKey = lease.job() + ":" + slot;
        long recordTtl = request.recordTtl().toMillis();
        SlotRecord existing = live(slots, slotKey, now);
        if (existing != null) {
            if (existing.token().equals(lease.token()) && existing.state().equals("running")) {
                leases.put(leaseKey(lease), new LeaseEntry(lease.token(), now + lease.ttl().toMillis()));
                return new ClaimResult(ClaimResult.Status.CLAIMED, existing.fence(), now);
            }
            return new ClaimResult(ClaimResult.Status.TAKEN, 0, now);
        }
        if (now < slot) {
            return new ClaimResult(ClaimResult.Status.EARLY, 0, now);
        }
        if (request.missOnly() || now > slot + request.misfireGrace().toMillis()) {
            slots.put(slotKey, new SlotRecord("missed", lease.token(), 0, now + recordTtl));
            return new ClaimResult(ClaimResult.Status.MISSED, 0, now);
        }
        if (liveLease(leaseKey(lease), now) != null) {
            slots.put(slotKey, new SlotRecord("skipped", lease.token(), 0, now + recordTtl));
            return new ClaimResult(ClaimResult.Status.SKIPPED, 0, now);
        }
        long fence = fences.merge(lease.job(), 1L, Long::sum);
        slots.put(slotKey, new SlotRecord("running", lease.token(), fence, now + recordTtl));
        leases.put(leaseKey(lease), new LeaseEntry(lease.token(), now + lease.ttl().toMillis()));
        return new ClaimResult(ClaimResult.Status.CLAIMED, fence, now);
    }

    @Override
    public synchronized List<Boolean> renew(List<Lease> batch) {
        long now = clockMillis.getAsLong();
        List<Boolean> results = new ArrayList<>(batch.size());
        for (Lease lease : batch) {
            LeaseEntry entry = liveLease(leaseKey(lease), now);
            boolean owned = entry != null && entry.token().equals(lease.token());
            if (owned) {
                leases.put(leaseKey(lease), new LeaseEntry(lease.token(), now + lease.ttl().toMillis()));
                // As in Redis: the slot record lives at least two leases beyond a renewal.
                String slotKey = lease.job() + ":" + lease.slot().toEpochMilli();
                SlotRecord record = live(slots, slotKey, now);
                long keep = now + 2 * lease.ttl().toMillis();
                if (record != null && record.expiresAt() < keep) {
                    slots.put(slotKey, new SlotRecord(record.state(), record.token(), record.fence(), keep));
                }
            }
            results.add(owned);
        }
        return results;
    }

    @Override
    public synchronized boolean complete(Lease lease, Outcome outcome) {
        long now = clockMillis.getAsLong();
        String slotKey = lease.job() + ":" + lease.slot().toEpochMilli();
        SlotRecord record = live(slots, slotKey, now);
        LeaseEntry entry = liveLease(leaseKey(lease), now);
        if (entry != null && entry.token().equals(lease.token())) {
            leases.remove(leaseKey(lease));
        }
        if (record == null || !record.token().equals(lease.token())) {
            return false;
        }
        slots.put(slotKey, new SlotRecord("done:" + outcome.label(), record.token(), record.fence(), record.expiresAt()));
        return true;
    }

    @Override
    public long serverTimeMillis() {
        return clockMillis.getAsLong();
    }

    @Override
    public String describe() {
        return "in-memory";
    }

    /** The state of a slot's record ({@code running}, {@code done:succeeded}, {@code missed}, ...), for tests. */
    public synchronized java.util.Optional<String> slotState(String job, java.time.Instant slot) {
        SlotRecord record = live(slots, job + ":" + slot.toEpochMilli(), clockMillis.getAsLong());
        return java.util.Optional.ofNullable(record).map(SlotRecord::state);
    }

    private static String leaseKey(Lease lease) {
        return lease.exclusive() ? lease.job() : lease.job() + ":" + lease.slot().toEpochMilli();
    }

    private LeaseEntry liveLease(String key, long now) {
        LeaseEntry entry = leases.get(key);
        return entry == null || entry.expiresAt() <= now ? null : entry;
    }

    private static SlotRecord live(Map<String, SlotRecord> map, String key, long now) {
        SlotRecord record = map.get(key);
        return record == null || record.expiresAt() <= now ? null : record;
    }
}
