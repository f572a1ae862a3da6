package io.lockstep.worker.audit;

import io.lockstep.worker.audit.Ev.Type;
import java.time.Instant;
import java.time.DateTimeException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Everything the checks need from the events, gathered in one pass: each slot's events ({@link Ev},
 * by job and slot; their order does not matter), each worker's lifecycle (read in the order the
 * worker wrote it: {@link EventReader} takes files oldest first) and the times it was seen, and the
 * ranges of {@code slots_missed}. An event repeated word for word (a log shipper's at-least-once
 * delivery) is kept once and counted.
 */
final class Ledger implements Consumer<EventReader.Fields> {

    /** A slot_skipped's code (and then its text) when the job's calendars excluded the slot. */
    static final String CALENDAR = "calendar";


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
         * The earliest start of a run it logged, by Redis time (slot + {@code lateness_ms}): before its first
         * {@code worker_started}, the log begins inside a life. (Redis time, not the host's: a clock stepped back, or
         * files read newest first, would put later events first.)
         */
        long firstRunStart = Long.MAX_VALUE;
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
            int insertion = lowerBound(before);
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
     * One life of a worker (one process): from its {@code worker_started} (or its first event, when the log began
     * later) to its {@code worker_stopping} when it stopped cleanly, or to its last event when it vanished (no
     * {@code worker_stopped}). A life ends, at the latest, where the next process of the same id begins: its
     * {@code config_loaded} (the worker command's first line), else its {@code worker_started}; so a worker killed
     * with SIGKILL and started again under its id is seen to vanish at its own last event, not at the new process's
     * first. {@code offset} turns its wall clock into Redis's ({@code clock_offset_ms}). {@code begunBefore}: the log
     * began inside it (a slot event before any start). {@code configs}: the job definitions it had in force, by the
     * {@code config_hash} of its {@code worker_started} and of each {@code schedule_updated} (a reload), from when
     * (Redis time); a null hash (a log written before the field) stands for the first config given. {@code threads}:
     * its job threads, 0 when not logged.
     */
    record Life(String worker, long start, long end, long lastSeen, boolean vanished, long offset, long endOffset, boolean begunBefore,
            List<Segment> configs, int threads) {
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

        /** Its end by Redis time: its stop, or its last event when it vanished. */
        long untilCluster() {
            return vanished ? lastSeenCluster() : endCluster();
        }

        /** The config hash in force at {@code at} (Redis time); the first one before its first segment. */
        String configAt(long at) {
            String hash = configs.isEmpty() ? null : configs.get(0).hash();
            for (Segment s : configs) {
                if (s.from() <= at) {
                    hash = s.hash();
                }
            }
            return hash;
        }
    }

    /**
     * From {@code from} (Redis time) a life had the job definitions of {@code hash} in force (null: not logged).
     * {@code exact}: the worker logged the instant itself ({@code effective_at}); otherwise it is read from the
     * line's time and is uncertain by {@link Targets#RELOAD_UNCERTAINTY_MS}.
     */
    record Segment(long from, String hash, boolean exact) {}

    @Override
    public void accept(EventReader.Fields f) {
        Type type = Type.of(f.event);
        WorkerLog w = workers.computeIfAbsent(f.worker, WorkerLog::new);
        w.seen(f.ts);
        minTs = Math.min(minTs, f.ts);
        maxTs = Math.max(maxTs, f.ts);
        switch (type) {
            case OTHER -> { }
            case CONFIG_LOADED, WORKER_STARTED, SCHEDULE_UPDATED, WORKER_STOPPING, WORKER_STOPPED -> {
                long offset = f.clockOffset;
                if (offset == Ev.NONE && type == Type.WORKER_STOPPED && !w.lifecycle.isEmpty()) {
                    offset = w.lifecycle.get(w.lifecycle.size() - 1).lateness(); // logged before 0.2 without one: its stopping's
                }
                // worker_started keeps its job threads (as the attempt) and config_hash; schedule_updated its config_hash
                long effectiveAt = Ev.NONE;
                if (type == Type.SCHEDULE_UPDATED && f.effectiveAt != null) {
                    try {
                        effectiveAt = Instant.parse(f.effectiveAt).toEpochMilli();
                    } catch (DateTimeException | ArithmeticException e) {
                        effectiveAt = Ev.NONE; // read as a reload of unknown instant: its time is uncertain
                    }
                }
                Ev ev = new Ev(type, f.worker, f.ts, effectiveAt, type == Type.WORKER_STARTED ? (int) f.threads : 0, offset, 0,
                        type == Type.WORKER_STARTED || type == Type.SCHEDULE_UPDATED ? f.configHash
                                : type == Type.CONFIG_LOADED ? f.labels : null); // config_loaded: the worker's labels, when logged
                if (w.lifecycle.contains(ev)) {
                    duplicates++;
                } else {
                    w.lifecycle.add(ev);
                }
            }
            case SLOTS_MISSED -> {
                try {
                    ranges.add(new Range(f.job, Instant.parse(f.from).toEpochMilli(), Instant.parse(f.to).toEpochMilli(), f.count,
                            f.reason, new Ev(type, f.worker, f.ts, Ev.NONE, 0, Ev.NONE, 0, f.reason)));
                } catch (DateTimeException | ArithmeticException | NullPointerException e) {
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
        } catch (DateTimeException | ArithmeticException | NullPointerException e) {
            unreadableSlots++;
            return;
        }
        if (f.job == null) {
            unreadableSlots++;
            return;
        }
        int flags = (f.manual ? Ev.MANUAL : 0) | (f.catchUp ? Ev.CATCH_UP : 0) | (f.rerun ? Ev.RERUN : 0) | (f.success ? Ev.SUCCESS : 0)
                | (f.backfill ? Ev.BACKFILL : 0);
        String text = switch (type) {
            case SLOT_RELEASED, OUTCOME_LATE -> f.outcome;
            case SLOT_MISSED -> missCode(f);
            case SLOT_SKIPPED -> f.reason != null && f.reason.startsWith("overlap") ? "overlap" : CALENDAR.equals(f.code) ? CALENDAR : f.reason;
            case JOB_STARTED -> f.backfill ? f.backfillId : f.reason; // a backfill's run: the backfill's id (its order is its own)
            default -> f.reason;
        };
        if (type == Type.SLOT_MISSED && (UNILATERAL_MISSES.contains(text) || unilateral(f.reason))) {
            flags |= Ev.UNILATERAL;
        }
        // lease_lost keeps, as its lateness, how long before the line its deadline passed (deadline_passed_ms)
        Ev ev = new Ev(type, f.worker, f.ts, f.token, (int) f.attempt, type == Type.LEASE_LOST ? f.deadlinePassed : f.lateness, flags, text);
        if (type == Type.JOB_STARTED && f.lateness != Ev.NONE) {
            WorkerLog w = workers.get(f.worker);
            w.firstRunStart = Math.min(w.firstRunStart, slot + f.lateness);
        }
        List<Ev> events = slots.computeIfAbsent(f.job, j -> new HashMap<>()).computeIfAbsent(slot, s -> new ArrayList<>(6));
        if (events.contains(ev)) {
            duplicates++;
            return;
        }
        events.add(ev);
    }

    /**
     * A miss the worker decided alone, whatever code it kept (a slot already late for another reason when the store
     * stopped answering keeps that code; its reason says why it was not asked).
     */
    private static boolean unilateral(String reason) {
        return reason != null && (reason.contains("lock store unreachable") || reason.contains("no majority")
                || reason.contains("waitReplicas"));
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
            // In the order written (files are read oldest first): not by time, since a host clock may step mid-life,
            // and the offset a worker last measured may predate the step.
            List<Ev> cycle = w.lifecycle;
            List<Integer> starts = new ArrayList<>();
            // Where a process begins: its config_loaded, or a worker_started not right after one (an embedded scheduler).
            List<Integer> begins = new ArrayList<>();
            for (int i = 0; i < cycle.size(); i++) {
                Type t = cycle.get(i).type();
                if (t == Type.WORKER_STARTED) {
                    starts.add(i);
                }
                if (t == Type.CONFIG_LOADED || (t == Type.WORKER_STARTED && (i == 0 || cycle.get(i - 1).type() != Type.CONFIG_LOADED))) {
                    begins.add(i);
                }
            }
            long firstSeen = w.lastSeenBefore(Long.MIN_VALUE);
            Ev firstStart = starts.isEmpty() ? null : cycle.get(starts.get(0));
            if (firstStart == null || w.firstRunStart < firstStart.ts() + offset(firstStart) - 1000) {
                // The log begins inside a life (a run started before any start of the worker): from that run to the first start.
                long until = begins.isEmpty() ? Long.MAX_VALUE : cycle.get(begins.get(0)).ts();
                long begin = w.firstRunStart != Long.MAX_VALUE ? w.firstRunStart : firstSeen;
                lives.add(life(w, cycle, 0, begins.isEmpty() ? cycle.size() : begins.get(0), begin, until, 0, true));
            }
            for (int from : starts) {
                int next = begins.stream().filter(b -> b > from).findFirst().orElse(cycle.size());
                long until = next < cycle.size() ? cycle.get(next).ts() : Long.MAX_VALUE;
                lives.add(life(w, cycle, from, next, cycle.get(from).ts(), until, offset(cycle.get(from)), false));
            }
        }
        return lives;
    }

    private static long offset(Ev lifecycle) {
        return lifecycle.lateness() == Ev.NONE ? 0 : lifecycle.lateness();
    }

    private static Life life(WorkerLog w, List<Ev> cycle, int from, int to, long start, long until, long offset, boolean begunBefore) {
        long stopping = Long.MIN_VALUE, endOffset = offset;
        boolean stopped = false;
        List<Segment> configs = new ArrayList<>();
        int threads = 0;
        for (int i = from; i < to; i++) {
            Ev e = cycle.get(i);
            if (e.type() == Type.WORKER_STOPPING && stopping == Long.MIN_VALUE) {
                stopping = e.ts();
                endOffset = e.lateness() == Ev.NONE ? offset : e.lateness();
            } else if (e.type() == Type.WORKER_STOPPED) {
                stopped = true;
            } else if (e.type() == Type.WORKER_STARTED) {
                configs.add(new Segment(start + offset, e.text(), false));
                threads = e.attempt();
            } else if (e.type() == Type.SCHEDULE_UPDATED && e.text() != null) {
                // With effective_at the worker said exactly which slots the new definitions took: those after it.
                configs.add(e.token() != Ev.NONE ? new Segment(e.token() + 1, e.text(), true) : new Segment(e.ts() + offset, e.text(), false));
            }
        }
        long lastSeen = w.lastSeenBefore(until == Long.MAX_VALUE ? Long.MAX_VALUE : until);
        long end = stopping != Long.MIN_VALUE ? stopping : lastSeen;
        return new Life(w.id, start, end, lastSeen, !stopped, offset, endOffset, begunBefore, List.copyOf(configs), threads);
    }
}
