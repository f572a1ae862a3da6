package io.lockstep.scheduler;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Per job, when this worker next asks the store about its runs in flight (a run whose lease ran
 * out without an outcome died, and is recovered), and which dead runs it is already dealing with:
 * recovering or abandoning them ({@link #startRecovery}), or disowning a claim of its own it gave up
 * on without an answer ({@link #disowning}). {@link Recovery} takes the looks that are due; claim
 * answers, a peer that left, a hand-over and a reload move them.
 *
 * <p>Apart from the {@link SlotQueue} because it is a different question (when to look for dead
 * runs, not when a slot is due), but not a different clock: the tick thread sleeps in
 * {@link SlotQueue#awaitDue} until the earliest look too. So it shares the queue's lock and its
 * wake-up condition, handed over at construction: everything here is read and changed under that
 * one lock, as when it was part of the queue. Thread-safe.
 */
final class RunLooks {

    /** The {@link SlotQueue}'s lock and condition: the tick thread waits on them for the earliest look too. */
    private final ReentrantLock lock;
    private final Condition wake;
    /** Stale runs being recovered or abandoned by this worker, by {@link DueSlot#key()}. */
    private final Set<String> recovering = new HashSet<>();
    /**
     * Slots this worker gave up on without an answer and still has to disown in the store, by
     * {@link DueSlot#key()}: an earlier claim of ours may hold them, but no run of ours does.
     */
    private final Set<String> disowning = new HashSet<>();
    /**
     * Per job, when (cluster time) to ask the store about its runs in flight: the earliest lease
     * end the store last told us of, plus {@link Recovery#LOOK_MARGIN}.
     */
    private final Looks lookAt = new Looks();

    RunLooks(ReentrantLock lock, Condition wake) {
        this.lock = lock;
        this.wake = wake;
    }

    /** Look at every one of these jobs' runs in flight at {@code at}. */
    void lookAt(Collection<String> jobs, Instant at) {
        lock.lock();
        try {
            jobs.forEach(job -> lookAt.put(job, at));
        } finally {
            lock.unlock();
        }
    }

    /**
     * Look at the job's runs in flight now: a run of it was handed over (this worker stopped it, or
     * it lost its lease under {@code recover: rerun}), so it is dead already and a rerun is due.
     */
    void lookSoon(String job) {
        lookSoon(java.util.List.of(job));
    }

    /** {@link #lookSoon(String)} for each of these jobs (a peer left: its runs may have been handed over). */
    void lookSoon(Collection<String> jobs) {
        lock.lock();
        try {
            jobs.forEach(job -> lookAt.put(job, Instant.EPOCH));
            wake.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** What a look at a job's runs in flight found: when the earliest lease still ahead ends (0: none). */
    void noteRuns(String job, long runningUntilMillis) {
        noteRuns(job, runningUntilMillis, 0);
    }

    /**
     * What a claim answer said of a job's runs in flight: when their earliest lease ends (0: none in
     * flight), by the store's clock at {@code serverNowMillis}. A lease end already past is a run that
     * died; while this worker already asks for its rerun (answered busy, say), it is not looked at
     * again on every answer.
     */
    void noteRuns(String job, long runningUntilMillis, long serverNowMillis) {
        lock.lock();
        try {
            if (runningUntilMillis < serverNowMillis && runningUntilMillis != 0 && recoveringAny(job)) {
                return; // a run that died, whose rerun we already ask for: no look would tell us more
            }
            if (runningUntilMillis == 0) {
                lookAt.remove(job);
            } else {
                lookAt.put(job, Instant.ofEpochMilli(runningUntilMillis).plus(Recovery.LOOK_MARGIN));
            }
        } finally {
            lock.unlock();
        }
    }

    private boolean recoveringAny(String job) {
        String prefix = job + "@";
        for (String key : recovering) {
            if (key.startsWith(prefix)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Look at the job's runs in flight at {@code at}, unless a look is due sooner: a worker that
     * stepped aside for a slot heard nothing of its run from the store, so it looks once the run's
     * lease would have run out (the look reschedules itself while runs are in flight).
     */
    void lookNoLaterThan(String job, Instant at) {
        lock.lock();
        try {
            lookAt.putEarlier(job, at);
        } finally {
            lock.unlock();
        }
    }

    /** The jobs whose look is due at {@code now}. */
    List<String> looksDue(Instant now) {
        lock.lock();
        try {
            return lookAt.due(now);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Marks a stale run as being dealt with by this worker; false when it already is, or when it is
     * a claim of ours that we are disowning (it never ran: the disown settles it).
     */
    boolean startRecovery(DueSlot d) {
        lock.lock();
        try {
            return !disowning.contains(d.key()) && recovering.add(d.key());
        } finally {
            lock.unlock();
        }
    }

    /** This worker gave up on {@code d} without an answer and will disown it. */
    void disowning(DueSlot d) {
        lock.lock();
        try {
            disowning.add(d.key());
        } finally {
            lock.unlock();
        }
    }

    /** A slot left the queue's hands ({@link SlotQueue#place}): it is no longer recovered nor disowned here. Under the lock. */
    void forget(DueSlot d) {
        recovering.remove(d.key());
        disowning.remove(d.key());
    }

    /** The earliest moment some job's runs in flight are due a look, or null. Under the lock. */
    Instant earliestLook() {
        return lookAt.earliest();
    }

    /**
     * Per job the instant of its next look, ordered by instant as well, so that the tick thread
     * finds the earliest and the due ones without a pass over every job: it asks on every wake-up,
     * and with a thousand jobs those passes were a tenth of a worker's CPU. Under the lock.
     */
    private static final class Looks {
        private final Map<String, Instant> byJob = new HashMap<>();
        private final java.util.TreeMap<Instant, Set<String>> byTime = new java.util.TreeMap<>();

        void put(String job, Instant at) {
            Instant before = byJob.put(job, at);
            if (before != null) {
                unindex(job, before);
            }
            byTime.computeIfAbsent(at, k -> new HashSet<>()).add(job);
        }

        /** {@link #put}, unless a look at the job is due sooner already. */
        void putEarlier(String job, Instant at) {
            Instant before = byJob.get(job);
            if (before == null || at.isBefore(before)) {
                put(job, at);
            }
        }

        void remove(String job) {
            Instant before = byJob.remove(job);
            if (before != null) {
                unindex(job, before);
            }
        }

        private void unindex(String job, Instant at) {
            Set<String> jobs = byTime.get(at);
            jobs.remove(job);
            if (jobs.isEmpty()) {
                byTime.remove(at);
            }
        }

        Instant earliest() {
            return byTime.isEmpty() ? null : byTime.firstKey();
        }

        List<String> due(Instant now) {
            List<String> names = new ArrayList<>();
            for (Set<String> jobs : byTime.headMap(now, true).values()) {
                names.addAll(jobs);
            }
            return names;
        }
    }
}
