package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.LockProvider;
import io.lockstep.scheduler.lock.SlotState;
import io.lockstep.scheduler.lock.WorkerInfo;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Who claims a scheduled slot first, so that the workers do not all race for every slot.
 *
 * <p>Each scheduled slot (job, slot) has a preferred claimer: the live worker (same config as ours)
 * with the highest rendezvous hash of (worker, job, slot). It claims the slot its {@link ClaimLead} ahead
 * of time (the run's start, handed to the pool at the slot: see {@link Starter}); the others wait until
 * {@link #BACKOFF} after the slot and then read what the store says of the slots they
 * stepped aside for, in one round trip ({@link LockProvider#slotStates}): evidence, not a word.
 * <ul>
 *   <li>decided: nothing to do;</li>
 *   <li>claimed ahead, or running: nothing to do now, but look at the job's runs once that lease
 *       would have run out, so that a claim whose worker died before its start (a short lease), or
 *       a run whose worker died (the job's lease), is recovered as when we had raced it;</li>
 *   <li>no record (the preferred claimer is stopped, killed, slow, or sees other live workers than
 *       we do): claim it ourselves, and the claim script decides as always.</li>
 * </ul>
 * Exactly-once never rests on this class, only the cost does: a stopped or killed preferred
 * claimer costs its slots the backoff until its heartbeat ages out of the live list, never the
 * slot. It works the same on every store, Redlock included (its records count by majority).
 *
 * <p>Called only from the tick thread.
 */
final class Preference {

    /** How long before its slot the store may decide the preferred claimer's claim (by its clock); the run starts at the slot. */
    static final Duration AHEAD = JobDefinition.CLAIM_AHEAD;
    /** How long after its slot the other workers look at whether the preferred claimer decided it. */
    static final Duration BACKOFF = Duration.ofMillis(100);

    private final LockProvider provider;
    private final String workerId;
    private final Supplier<List<WorkerInfo>> live;
    private final Supplier<String> configHash;
    private final Events events;

    /** The view slots were last shared under, its workers and their hashes (null before the first). */
    private String view;
    private List<String> workers = List.of();
    private long[] workerHashes = new long[0];
    /** The labels of each of {@link #workers}, for jobs that run only on some ({@link RunOn}). */
    private List<java.util.Set<String>> workerLabels = List.of();

    Preference(LockProvider provider, String workerId, Supplier<List<WorkerInfo>> live, Supplier<String> configHash, Events events) {
        this.provider = provider;
        this.workerId = workerId;
        this.live = live;
        this.configHash = configHash;
        this.events = events;
    }

    /**
     * Of the due slots, those to claim now. Scheduled slots due for the first time
     * ({@link DueSlot.Stage#UNSHARED}) are shared out: ours are claimed now (ahead of their slot), a
     * peer's are queued again for {@link #BACKOFF} after their slot ({@link DueSlot.Stage#STEPPED_ASIDE}).
     * A peer's slot due again is claimed when the store has no record of it, and settled here
     * ({@link DueSlot.Stage#DECIDED}) when it has one, with a look at the job's runs when a lease
     * holds it. What is not claimed now goes back to the queue, once.
     */
    List<DueSlot> sift(List<DueSlot> due, SlotQueue queue, Instant now) {
        List<DueSlot> claimNow = new ArrayList<>(due.size());
        List<DueSlot> back = new ArrayList<>();
        try {
            List<DueSlot> recheck = null;
            boolean viewed = false;
            for (DueSlot d : due) {
                switch (d.stage()) {
                    case UNSHARED -> {
                        if (!viewed) {
                            look();
                            viewed = true;
                        }
                        share(d, claimNow, back);
                    }
                    case STEPPED_ASIDE -> {
                        if (recheck == null) {
                            recheck = new ArrayList<>();
                        }
                        recheck.add(d);
                    }
                    default -> claimNow.add(d);
                }
            }
            if (recheck != null) {
                List<SlotState> states = states(recheck);
                for (int i = 0; i < recheck.size(); i++) {
                    DueSlot d = recheck.get(i);
                    SlotState state = states == null ? SlotState.NONE : states.get(i);
                    if (state.kind() == SlotState.Kind.NONE) {
                        d.takeOver(); // claim it like any slot from now on
                        claimNow.add(d);
                        continue;
                    }
                    events.debug("slot_stepped_aside").addKeyValue("job", d.definition().name()).addKeyValue("slot", d.slot.toString())
                            .addKeyValue("preferred", d.preferred()).addKeyValue("record", state.kind().name().toLowerCase(java.util.Locale.ROOT))
                            .log("the slot's record shows it claimed or decided");
                    d.decided();
                    back.add(d);
                    if (state.kind() != SlotState.Kind.DECIDED) {
                        // We never raced it, so no claim answer told us of its run: look for it dead once
                        // its lease (short, while it is not started) would have run out.
                        queue.looks().lookNoLaterThan(d.definition().name(), Instant.ofEpochMilli(state.leaseEndMillis()).plus(Recovery.LOOK_MARGIN));
                    }
                }
            }
        } catch (RuntimeException e) {
            // A bug or a misbehaving dependency part way: no slot is dropped. Those not sifted yet
            // are claimed now, as when the store cannot be read: the claim script decides.
            events.error("tick_failed").addKeyValue("error", Events.describe(e)).setCause(e)
                    .log("unexpected failure sharing out due slots; claiming the rest now");
            java.util.Set<DueSlot> sifted = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
            sifted.addAll(claimNow);
            sifted.addAll(back);
            for (DueSlot d : due) {
                if (sifted.contains(d)) {
                    continue;
                }
                switch (d.stage()) {
                    case UNSHARED -> d.ours();
                    case STEPPED_ASIDE -> d.takeOver();
                    case DECIDED -> {
                        back.add(d); // decided, then the failure: forgotten as decided
                        continue;
                    }
                    default -> { }
                }
                claimNow.add(d);
            }
        } finally {
            queue.place(back, now); // even when the store threw: what was moved on is filed
        }
        return claimNow;
    }

    /**
     * What the store says of these slots, or null when it cannot be read (then they are all
     * claimed, and the claim script decides): a {@link LockException}, or anything else it threw (a
     * client bug), which must not drop the slots.
     */
    private List<SlotState> states(List<DueSlot> slots) {
        try {
            return provider.slotStates(slots.stream().map(d -> new SlotState.Ref(d.definition().name(), d.slot)).toList());
        } catch (LockException e) {
            return null;
        } catch (RuntimeException e) {
            events.error("tick_failed").addKeyValue("error", Events.describe(e)).setCause(e)
                    .log("unexpected failure reading the slots' records; claiming them, the store decides");
            return null;
        }
    }

    private void share(DueSlot d, List<DueSlot> claimNow, List<DueSlot> back) {
        long slot = d.slot.toEpochMilli();
        RunOn runOn = d.definition().runOn();
        // An every-worker job's instance is this worker's alone: no peer claims it.
        String preferred = workers.size() < 2 || runOn.everyWorker() ? workerId : preferred(d.definition().name(), slot, runOn);
        if (preferred.equals(workerId)) {
            d.ours();
            claimNow.add(d);
        } else {
            d.stepAside(preferred, d.slot.plus(BACKOFF));
            back.add(d);
        }
    }

    /** Reads the live workers that run our config (the view the rendezvous hash is taken over). */
    private void look() {
        String ours = configHash.get();
        Map<String, java.util.Set<String>> byId = new java.util.TreeMap<>();
        for (WorkerInfo w : live.get()) {
            if (w.configHash().equals(ours) && !w.draining()) { // a stopping worker claims nothing new
                byId.put(w.id(), w.labels());
            }
        }
        byId.putIfAbsent(workerId, java.util.Set.of()); // before the first heartbeat's answer (our labels: the jobs we may run)
        List<String> ids = List.copyOf(byId.keySet());
        String next = Fingerprints.hash(Map.of("workers", String.join(",", ids), "config", ours, "labels", byId.values().toString()));
        if (next.equals(view)) {
            return;
        }
        view = next;
        workers = ids;
        workerLabels = List.copyOf(byId.values());
        workerHashes = new long[ids.size()];
        for (int i = 0; i < ids.size(); i++) {
            workerHashes[i] = hash(ids.get(i));
        }
    }

    /** Rendezvous (highest random weight) hashing: the worker whose hash mixed with the slot's is highest. */
    String preferred(String job, long slot) {
        return preferred(job, slot, RunOn.ANY);
    }

    /**
     * The same among the workers that may run the job ({@link RunOn}: those with its labels, by
     * their heartbeats); this worker when none of them is known (it then claims ahead only if it may
     * run the job itself: a slot it may not run never reaches here).
     */
    String preferred(String job, long slot, RunOn runOn) {
        long key = mix(hash(job) ^ mix(slot));
        int best = -1;
        long bestScore = Long.MIN_VALUE;
        for (int i = 0; i < workerHashes.length; i++) {
            if (!runOn.labels().isEmpty() && !workers.get(i).equals(workerId) && !runOn.allows(workerLabels.get(i))) {
                continue;
            }
            long score = mix(workerHashes[i] ^ key);
            if (score > bestScore) {
                bestScore = score;
                best = i;
            }
        }
        return best < 0 ? workerId : workers.get(best);
    }

    static long hash(String s) {
        long h = 0xcbf29ce484222325L; // FNV-1a, then mixed
        for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
            h = (h ^ b) * 0x100000001b3L;
        }
        return mix(h);
    }

    /** MurmurHash3's 64-bit finalizer: every input bit moves every output bit. */
    static long mix(long z) {
        z = (z ^ (z >>> 33)) * 0xff51afd7ed558ccdL;
        z = (z ^ (z >>> 33)) * 0xc4ceb53fe1a85ec3L;
        return z ^ (z >>> 33);
    }
}
