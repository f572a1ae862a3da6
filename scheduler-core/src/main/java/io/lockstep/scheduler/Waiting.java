package io.lockstep.scheduler;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The slots that wait for a free job thread ({@link DueSlot.Stage#WAITING_THREAD}), oldest first,
 * and the jobs they hold back. The tick thread takes from here only what can go now: every slot
 * past its start deadline (only its miss is asked for then) and, of the others, the oldest as many
 * as there are free threads; the rest stay. A job with an ordered slot here holds its newer slots
 * back ({@link #holdsOlder}): they wait behind it, since a job's slots start in order (guarantee 10).
 *
 * <p>So a backlog (a start under load, a stall) costs a tick one pass over it when a thread frees,
 * not a shuffle, a sort and a claim batch of all of it each time: handing every waiting slot back at
 * every freed thread made a worker that fell behind at 5,000 slots/s spend its tick thread on that
 * and stay behind. Not thread-safe: used under {@link SlotQueue}'s lock, from the tick thread.
 */
final class Waiting {

    private final List<DueSlot> slots = new ArrayList<>();
    /**
     * A lower bound of (start deadline - slot) over the waiting slots: a slot at or after
     * {@code now - minSlack} cannot have passed its deadline, so a pass over the sorted slots stops
     * there. Only lowered while slots wait; reset when none does.
     */
    private Duration minSlack;
    /** The ordered slots waiting, per job (slot to how many: a multiset). */
    private final Map<String, TreeMap<Instant, Integer>> byJob = new HashMap<>();
    private boolean sorted = true;

    void add(DueSlot d) {
        slots.add(d);
        sorted = false;
        Duration slack = Duration.between(d.slot, d.startDeadline());
        if (minSlack == null || slack.compareTo(minSlack) < 0) {
            minSlack = slack;
        }
        if (SlotQueue.ordered(d)) {
            byJob.computeIfAbsent(d.definition().name(), job -> new TreeMap<>()).merge(d.slot, 1, Integer::sum);
        }
    }

    boolean isEmpty() {
        return slots.isEmpty();
    }

    int size() {
        return slots.size();
    }

    /** Whether an ordered slot of {@code job} older than {@code slot} waits here: {@code slot} must wait behind it. */
    boolean holdsOlder(String job, Instant slot) {
        TreeMap<Instant, Integer> waitingSlots = byJob.get(job);
        return waitingSlots != null && waitingSlots.firstKey().isBefore(slot);
    }

    /** The earliest start deadline among the waiting slots ({@code fallback} when none is earlier). */
    Instant earliestDeadline(Instant fallback) {
        sort();
        Instant earliest = fallback;
        for (DueSlot d : slots) {
            if (!d.slot.plus(minSlack).isBefore(earliest)) {
                break; // every later slot's deadline is later still
            }
            Instant deadline = d.startDeadline();
            if (deadline.isBefore(earliest)) {
                earliest = deadline;
            }
        }
        return earliest;
    }

    private void sort() {
        if (!sorted) {
            slots.sort(Comparator.comparing(d -> d.slot)); // stable
            sorted = true;
        }
    }

    /**
     * Takes what can go now: every slot past its start deadline, and the oldest {@code free} others
     * that may start (oldest slot first; of one instant, in the order they came). A slot of a job in
     * {@code held} (one that catches up: its scheduled slots wait for the catch-up) is passed over
     * without using a thread, and so are its job's newer slots, so that a blocked job cannot keep
     * the threads from the others.
     */
    List<DueSlot> take(Instant now, int free, java.util.function.Predicate<DueSlot> held) {
        sort();
        List<DueSlot> taken = new ArrayList<>();
        List<DueSlot> passedOver = new ArrayList<>(); // stay, from the part looked at
        java.util.Set<String> heldJobs = new java.util.HashSet<>();
        int threads = free;
        int looked = 0;
        Instant mayBeExpired = slots.isEmpty() ? now : now.minus(minSlack); // slots before this may have passed their deadline
        for (DueSlot d : slots) {
            if (threads <= 0 && !d.slot.isBefore(mayBeExpired)) {
                break; // no thread to hand out, and nothing from here on has expired
            }
            looked++;
            boolean expired = now.isAfter(d.startDeadline());
            if (!expired && SlotQueue.ordered(d) && (heldJobs.contains(d.definition().name()) || held.test(d))) {
                heldJobs.add(d.definition().name()); // its newer slots wait behind it
                passedOver.add(d);
                continue;
            }
            if (expired || threads > 0) {
                if (!expired) {
                    threads--;
                }
                taken.add(d);
                if (SlotQueue.ordered(d)) {
                    TreeMap<Instant, Integer> waitingSlots = byJob.get(d.definition().name());
                    waitingSlots.computeIfPresent(d.slot, (slot, n) -> n > 1 ? n - 1 : null);
                    if (waitingSlots.isEmpty()) {
                        byJob.remove(d.definition().name());
                    }
                }
            } else {
                passedOver.add(d);
            }
        }
        slots.subList(0, looked).clear();
        slots.addAll(0, passedOver); // still oldest first
        if (slots.isEmpty()) {
            minSlack = null;
        }
        return taken;
    }
}
