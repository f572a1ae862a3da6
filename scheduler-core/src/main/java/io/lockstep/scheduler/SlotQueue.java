package io.lockstep.scheduler;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * What the tick thread waits for: slots by fire (or retry) time, slots waiting for a free job
 * thread, and per job the moment to look at its runs in flight (kept by {@link RunLooks}, under
 * this queue's lock). The tick thread sleeps in {@link #awaitDue} until one of them is due; job
 * threads wake it when they free a thread. The due slots it takes out it moves on to their next
 * {@link DueSlot.Stage} and gives back through {@link #place}, which files each by its stage,
 * once. Thread-safe.
 */
final class SlotQueue {

    /** How long before its slot a scheduled slot falls due ({@link ClaimLead}); set once, before the first slot. */
    private volatile ClaimLead claimLead = ClaimLead.fixed(Preference.AHEAD);
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition wake = lock.newCondition();
    private final PriorityQueue<DueSlot> queue = new PriorityQueue<>();
    /** Due slots that found no free job thread; claimed again when one frees or their grace ends. */
    private final Waiting waiting = new Waiting();
    /** When to look at each job's runs in flight, and the dead runs being dealt with: under this queue's lock. */
    private final RunLooks looks = new RunLooks(lock, wake);
    /** Whether {@link #waiting} holds slots (read without the lock by {@link #threadFreed}). */
    private volatile boolean anyWaiting;
    /** Jobs with a catch-up slot not yet decided: their newer slots wait for it (slots start in order). */
    private final Set<String> catchingUp = new HashSet<>();
    /** A job thread freed up, or a catch-up ended, since the tick thread last looked: waiting slots may go. */
    private volatile boolean threadFreed;
    private boolean closed;

    /**
     * Sleeps until a slot is due, a thread freed up for a waiting slot, a look at runs in flight or
     * a read of the store's clock is due (it waits a second at the most); then takes every due slot
     * and of the waiting ones what can go ({@link Waiting#take}).
     *
     * @return the slots to claim now (possibly none, when only a look is due); null once closed
     */
    List<DueSlot> awaitDue(ClusterClock clock, JobThreads threads) throws InterruptedException {
        lock.lock();
        try {
            while (!closed) {
                Instant now = clock.now();
                DueSlot head = queue.peek();
                if (head != null && !head.retryAt().isAfter(now)) {
                    break;
                }
                if (!waiting.isEmpty() && threadFreed && threads.anyFree()) {
                    break;
                }
                Instant look = looks.earliestLook();
                if (look != null && !look.isAfter(now)) {
                    break;
                }
                if (clock.syncDue()) {
                    break; // the store's clock is read again on a timer, idle or not
                }
                Instant until = head == null ? now.plusSeconds(1) : head.retryAt();
                if (look != null) {
                    until = earliest(until, look);
                }
                until = waiting.earliestDeadline(until);
                if (!until.isAfter(now)) {
                    break;
                }
                long waitNanos = Math.min(Duration.between(now, until).toNanos(), TimeUnit.SECONDS.toNanos(1));
                wake.awaitNanos(waitNanos);
            }
            if (closed) {
                return null;
            }
            threadFreed = false;
            Instant now = clock.now();
            List<DueSlot> due = new ArrayList<>();
            while (!queue.isEmpty() && !queue.peek().retryAt().isAfter(now)) {
                due.add(queue.poll());
            }
            // What can go of the slots waiting for a thread (the rest keeps waiting, holding its jobs'
            // newer slots), then the older retries of every job in the batch, waiting ones included.
            due.addAll(waiting.take(now, threads.free(),
                    d -> d.kind() != DueSlot.Kind.CATCH_UP && catchingUp.contains(d.definition().name())));
            withOlderRetries(due);
            anyWaiting = !waiting.isEmpty();
            return due;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Adds to {@code due} the older slots of the same jobs that wait in the queue to be asked again
     * (a claim the store did not answer, retried every {@link Claimer#RETRY_DELAY}): a job's slots
     * start in slot order only when the claimer sees them in one batch, and a newer slot that falls
     * due before an older one's retry would otherwise be claimed, and start, first. Asking the older
     * one early asks the same question sooner. Manual runs and recoveries keep no order. Under
     * {@link #lock}.
     */
    private void withOlderRetries(List<DueSlot> due) {
        Map<String, Instant> newest = new HashMap<>();
        for (DueSlot d : due) {
            if (ordered(d)) {
                newest.merge(d.definition().name(), d.slot, (a, b) -> a.isAfter(b) ? a : b);
            }
        }
        if (newest.isEmpty() || queue.isEmpty()) {
            return;
        }
        queue.removeIf(q -> {
            Instant bound = newest.get(q.definition().name());
            boolean pull = bound != null && q.stage() == DueSlot.Stage.QUEUED && ordered(q) && q.slot.isBefore(bound);
            if (pull) {
                due.add(q);
            }
            return pull;
        });
    }

    static boolean ordered(DueSlot d) {
        return !d.recovery() && !d.manual && d.backfill == null;
    }

    /** New slots (a job's next, a catch-up plan, a manual run), each due at its {@link DueSlot#retryAt()}. */
    void addAll(Collection<DueSlot> slots) {
        lock.lock();
        try {
            queue.addAll(slots);
            wake.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Takes back slots the tick thread has moved on ({@link DueSlot}'s transitions), each filed
     * where its stage says, once: queued again by its {@link DueSlot#retryAt()}; set aside until a
     * job thread frees (claimed again then, or when its start deadline passes); or, once it has
     * left our hands (decided, staged or running), forgotten: a recovery of it is forgotten, the
     * next catch-up slot is queued (due {@code now}), and after the last one the job's newer slots
     * may go.
     *
     * @throws IllegalStateException for a slot still on its way to the store, or chained: nowhere to file it (a bug)
     */
    void place(Collection<DueSlot> slots, Instant now) {
        if (slots.isEmpty()) {
            return;
        }
        lock.lock();
        try {
            for (DueSlot d : slots) {
                switch (d.stage()) {
                    case UNSHARED, STEPPED_ASIDE, QUEUED, MISS_ONLY, REPORTED -> queue.add(d);
                    case WAITING_THREAD -> {
                        waiting.add(d);
                        anyWaiting = true;
                    }
                    case STAGED, RUNNING, DECIDED -> forget(d, now);
                    default -> throw new IllegalStateException("slot " + d.key() + " cannot be placed while " + d.stage());
                }
            }
            wake.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** {@link #place(Collection, Instant)} for one slot. */
    void place(DueSlot d, Instant now) {
        place(List.of(d), now);
    }

    /** A slot left our hands: see {@link #place}. Under {@link #lock}. */
    private void forget(DueSlot d, Instant now) {
        looks.forget(d);
        DueSlot next = d.next();
        if (next != null) {
            queue.add(next.unchain(now));
        } else if (d.kind() == DueSlot.Kind.CATCH_UP && catchingUp.remove(d.definition().name())) {
            threadFreed = true;
        }
    }

    /** A job thread freed up: wake the tick thread for the slots waiting for one (none waiting: nothing to do). */
    void threadFreed() {
        threadFreed = true;
        if (!anyWaiting) {
            return; // the common case: no lock, since at the top of a busy second a thousand job threads end at once
        }
        lock.lock();
        try {
            wake.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Wakes the tick thread for good: {@link #awaitDue} answers null from now on. */
    void close() {
        lock.lock();
        try {
            closed = true;
            wake.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Catch-up slots of these jobs are planned: their newer slots wait until the last one is decided. */
    void catchingUp(Collection<String> jobs) {
        lock.lock();
        try {
            catchingUp.addAll(jobs);
        } finally {
            lock.unlock();
        }
    }

    /** Whether an ordered slot of {@code job} older than {@code slot} waits for a thread: {@code slot} waits behind it. */
    boolean waitingBefore(String job, Instant slot) {
        lock.lock();
        try {
            return waiting.holdsOlder(job, slot);
        } finally {
            lock.unlock();
        }
    }

    boolean catchingUp(String job) {
        lock.lock();
        try {
            return catchingUp.contains(job);
        } finally {
            lock.unlock();
        }
    }

    static Instant earliest(Instant a, Instant b) {
        return a.isBefore(b) ? a : b;
    }

    /** When to look at each job's runs in flight ({@link RunLooks}), due in {@link #awaitDue} with the slots. */
    RunLooks looks() {
        return looks;
    }

    /** Sets the scheduler's {@link ClaimLead} (from its store's start window); before the first slot is queued. */
    void claimLead(ClaimLead lead) {
        this.claimLead = lead;
    }

    /** The worker's claim lead: when a scheduled slot falls due (its preferred claimer sends its claim), told how its claims fared. */
    ClaimLead lead() {
        return claimLead;
    }
}
