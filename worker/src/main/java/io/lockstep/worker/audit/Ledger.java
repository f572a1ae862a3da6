package io.lockstep.worker.audit;

import io.lockstep.worker.audit.Ev.Type;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Everything the checks need from the events, gathered in one pass in any order: each slot's
 * events ({@link Ev}, by job and slot), each worker's lifecycle and the times it was seen, and the
 * ranges of {@code slots_missed}. An event repeated word for word (a log shipper's at-least-once
 * delivery) is kept once and counted.
 */
final class Ledger implements Consumer<EventReader.Fields> {

    /** The miss codes a worker decides alone, without the store: the slot may have run elsewhere (GUARANTEES, known limits). */
    static final List<String> UNILATERAL_MISSES = List.of("outage", "no_quorum", "unconfirmed");

    /** job -> slot (epoch ms) -> its events. */
    final Map<String, Map<Long, List<Ev>>> slots = new HashMap<>();
    final Map<String, WorkerLog> workers = new HashMap<>();
    final List<Range> ranges = new ArrayList<>();
    long duplicates, unreadableSlots;
    long minTs = Long.MAX_VALUE, maxTs = Long.MIN_VALUE;

    /** A {@code slots_missed} event: every slot of {@code job} in [from, to] reported together. */
    record Range(String job, long from, long to, long count, String reason, Ev event) {}

    /** A worker's lifecycle events and every time it logged anything. */
    static final class WorkerLog {
        final String id;
        final List<Ev> lifecycle = new ArrayList<>();
        long[] seen = new long[64];
        int seenCount;
        /**
         * A slot event came before any {@code worker_started} of this worker, in the order read: the log begins
         * inside a life. (The order read, not the times: a host clock stepped back would put later events first.)
         */
        boolean slotEventBeforeStart;
        boolean startSeen;
        private boolean sorted;

        WorkerLog(String id) {
            this.id = id;
        }

        void seen(long ts) {
            if (seenCount == seen.length) {
                seen = Arrays.copyOf(seen, seenCount * 2);
            }
            seen[seenCount++] = ts;
            sorted = false;
        }

        /** The last time it was seen before {@code before} (exclusive), or before everything if none. */
        long lastSeenBefore(long before) {
            if (!sorted) {
                Arrays.sort(seen, 0, seenCount);
                sorted = true;
            }
            int i = Arrays.binarySearch(seen, 0, seenCount, before);
            int insertion = i >= 0 ? lowerBound(before) : -i - 1;
            return insertion == 0 ? seen[0] : seen[insertion - 1];
        }

        private int lowerBound(long value) {
            int lo = 0, hi = seenCount;
            while (lo < hi) {
                int mid = (lo + hi) >>> 1;
                if (seen[mid] < value) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            return lo;
        }
    }

    /**
     * One life of a worker: from its {@code worker_started} (or its first event, when the log began
     * later) to its {@code worker_stopping} when it stopped cleanly, or to its last event when it
     * vanished (no {@code worker_stopped}). {@code offset} turns its wall clock into Redis's
     * ({@code clock_offset_ms}). {@code begunBefore}: the log began inside it (a slot event before any start).
     */
    record Life(String worker, long start, long end, long lastSeen, boolean vanished, long offset, long endOffset, boolean begunBefore) {
        long startCluster() {
            return start + offset;
        }

        /** Its end by Redis time: through the offset its {@code worker_stopping} logged (a clock stepped meanwhile), else its start's. */
        long endCluster() {
            return end + endOffset;
        }

        long lastSeenCluster() {
            return lastSeen + offset;
        }
    }

    @Override
    public void accept(EventReader.Fields f) {
        Type type = Type.of(f.event);
        WorkerLog w = workers.computeIfAbsent(f.worker, WorkerLog::new);
        w.seen(f.ts);
        minTs = Math.min(minTs, f.ts);
        maxTs = Math.max(maxTs, f.ts);
        switch (type) {
            case OTHER -> { }
            case WORKER_STARTED, WORKER_STOPPING, WORKER_STOPPED -> {
                w.lifecycle.add(new Ev(type, f.worker, f.ts, Ev.NONE, 0, f.clockOffset, 0, null));
                w.startSeen |= type == Type.WORKER_STARTED;
            }
            case SLOTS_MISSED -> {
                try {
                    ranges.add(new Range(f.job, Instant.parse(f.from).toEpochMilli(), Instant.parse(f.to).toEpochMilli(), f.count,
                            f.reason, new Ev(type, f.worker, f.ts, Ev.NONE, 0, Ev.NONE, 0, f.reason)));
                } catch (DateTimeParseException | NullPointerException e) {
                    unreadableSlots++;
                }
            }
            default -> slotEvent(type, f);
        }
    }

    private void slotEvent(Type type, EventReader.Fields f) {
        long slot;
        try {
            slot = Instant.parse(f.slot).toEpochMilli();
        } catch (DateTimeParseException | NullPointerException e) {
            unreadableSlots++;
            return;
        }
        if (f.job == null) {
            unreadableSlots++;
            return;
        }
        int flags = (f.manual ? Ev.MANUAL : 0) | (f.catchUp ? Ev.CATCH_UP : 0) | (f.rerun ? Ev.RERUN : 0) | (f.success ? Ev.SUCCESS : 0);
        String text = switch (type) {
            case SLOT_RELEASED, OUTCOME_LATE -> f.outcome;
            case SLOT_MISSED -> missCode(f);
            case SLOT_SKIPPED -> f.reason != null && f.reason.startsWith("overlap") ? "overlap" : f.reason;
            default -> f.reason;
        };
        if (type == Type.SLOT_MISSED && UNILATERAL_MISSES.contains(text)) {
            flags |= Ev.UNILATERAL;
        }
        Ev ev = new Ev(type, f.worker, f.ts, f.token, (int) f.attempt, f.lateness, flags, text);
        WorkerLog w = workers.get(f.worker);
        w.slotEventBeforeStart |= !w.startSeen;
        List<Ev> events = slots.computeIfAbsent(f.job, j -> new HashMap<>()).computeIfAbsent(slot, s -> new ArrayList<>(6));
        if (events.contains(ev)) {
            duplicates++;
            return;
        }
        events.add(ev);
    }

    /**
     * The miss's code (the {@code code} field; the {@code lockstep.missed} meter's {@code reason}).
     * Events written before the field existed are classified by their words.
     */
    private static String missCode(EventReader.Fields f) {
        if (f.code != null) {
            return f.code;
        }
        String reason = f.reason == null ? "" : f.reason;
        if (reason.contains("lock store unreachable")) {
            return "outage";
        }
        if (reason.contains("no majority")) {
            return "no_quorum";
        }
        if (reason.contains("waitReplicas")) {
            return "unconfirmed";
        }
        return reason.contains("later slot") ? "order" : "late";
    }

    /** Every worker's lives, in no set order. */
    List<Life> lives() {
        List<Life> lives = new ArrayList<>();
        for (WorkerLog w : workers.values()) {
            List<Ev> cycle = w.lifecycle; // in the order read: a stepped clock may disorder their times
            List<Integer> starts = new ArrayList<>();
            for (int i = 0; i < cycle.size(); i++) {
                if (cycle.get(i).type() == Type.WORKER_STARTED) {
                    starts.add(i);
                }
            }
            long firstSeen = w.lastSeenBefore(Long.MIN_VALUE);
            if (starts.isEmpty() || w.slotEventBeforeStart) {
                // The log begins inside a life (a slot event before any start): from the first event to the first start.
                long until = starts.isEmpty() ? Long.MAX_VALUE : cycle.get(starts.get(0)).ts();
                lives.add(life(w, cycle, 0, starts.isEmpty() ? cycle.size() : starts.get(0), firstSeen, until, 0, true));
            }
            for (int k = 0; k < starts.size(); k++) {
                int from = starts.get(k);
                int to = k + 1 < starts.size() ? starts.get(k + 1) : cycle.size();
                long until = k + 1 < starts.size() ? cycle.get(to).ts() : Long.MAX_VALUE;
                lives.add(life(w, cycle, from, to, cycle.get(from).ts(), until, cycle.get(from).lateness() == Ev.NONE ? 0 : cycle.get(from).lateness(), false));
            }
        }
        return lives;
    }

    private static Life life(WorkerLog w, List<Ev> cycle, int from, int to, long start, long until, long offset, boolean begunBefore) {
        long stopping = Long.MIN_VALUE, endOffset = offset;
        boolean stopped = false;
        for (int i = from; i < to; i++) {
            Ev e = cycle.get(i);
            if (e.type() == Type.WORKER_STOPPING && stopping == Long.MIN_VALUE) {
                stopping = e.ts();
                endOffset = e.lateness() == Ev.NONE ? offset : e.lateness();
            } else if (e.type() == Type.WORKER_STOPPED) {
                stopped = true;
            }
        }
        long lastSeen = w.lastSeenBefore(until == Long.MAX_VALUE ? Long.MAX_VALUE : until);
        long end = stopping != Long.MIN_VALUE ? stopping : lastSeen;
        return new Life(w.id, start, end, lastSeen, !stopped, offset, endOffset, begunBefore);
    }
}
