package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.ClaimedThrough;
import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.LockProvider;
import io.lockstep.scheduler.lock.WorkerInfo;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;

/**
 * Who claims a scheduled slot first, so that the workers do not all race for every slot.
 *
 * <p>Each scheduled slot (job, slot) has a preferred claimer: the live worker (same config as ours)
 * with the highest rendezvous hash of (worker, job, slot). It claims the slot {@link #AHEAD} of
 * time; the others wait until {@link #BACKOFF} after the slot. By then the preferred claimer has
 * usually said, in one small write per tick ({@link ClaimedThrough}), that it decided every slot
 * preferred to it up to some slot: the others then step aside without asking the store. When it
 * has not (stopped, killed, slow, or it sees other live workers than we do), they claim the slot
 * themselves and the claim script decides as always: exactly-once never rests on this class, only
 * the cost does. A stopped or killed preferred claimer costs its slots the backoff until its
 * heartbeat ages out of the live list, never the slot. A peer that steps aside still looks at the
 * job's runs in flight once the slot's lease would have run out (a racing peer learned of the run
 * from its losing claim's answer), so a preferred claimer that dies mid-run is recovered as before.
 *
 * <p>The word is kept honest in three ways: it covers only slots from {@code since} on, where
 * {@code since} is past every slot this worker shared out under an earlier view; it covers only up
 * to the first slot of its own not yet decided and before the first slot not yet shared out (every
 * job always has its next slot queued, so nothing unseen lies below that); and a peer trusts it
 * only for a slot it gave to this worker under the same view.
 *
 * <p>Called only from the tick thread.
 */
final class Preference {

    /** How long before its slot the preferred claimer claims it (by the store's clock); the run starts at the slot. */
    static final Duration AHEAD = Duration.ofMillis(250);
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
    /** The first slot the word covers; under the first view, the earliest slot shared. */
    private long since = Long.MAX_VALUE;
    private boolean firstView;
    private long latestShared = Long.MIN_VALUE;
    /** Own slots not decided yet: slot millis to how many. */
    private final TreeMap<Long, Integer> pending = new TreeMap<>();
    private ClaimedThrough said;

    Preference(LockProvider provider, String workerId, Supplier<List<WorkerInfo>> live, Supplier<String> configHash, Events events) {
        this.provider = provider;
        this.workerId = workerId;
        this.live = live;
        this.configHash = configHash;
        this.events = events;
    }

    /**
     * Of the due slots, those to claim now. Scheduled slots due for the first time are shared out:
     * ours are claimed now (ahead of their slot), a peer's are queued again for {@link #BACKOFF}
     * after their slot. A peer's slot due again is claimed unless that peer said it decided it;
     * then it is settled here ({@code decided}) without a word to the store.
     */
    List<DueSlot> sift(List<DueSlot> due, SlotQueue queue, Instant now) {
        List<DueSlot> claimNow = new ArrayList<>(due.size());
        List<DueSlot> recheck = null;
        boolean viewed = false;
        for (DueSlot d : due) {
            switch (d.standing) {
                case UNSHARED -> {
                    if (!viewed) {
                        look();
                        viewed = true;
                    }
                    share(d, queue, claimNow);
                }
                case PEER -> {
                    if (recheck == null) {
                        recheck = new ArrayList<>();
                    }
                    recheck.add(d);
                }
                default -> claimNow.add(d);
            }
        }
        if (recheck != null) {
            Map<String, ClaimedThrough> words = words(recheck);
            for (DueSlot d : recheck) {
                ClaimedThrough word = words.get(d.preferred);
                if (word != null && word.covers(d.view, d.slot.toEpochMilli())) {
                    events.debug("slot_stepped_aside").addKeyValue("job", d.definition().name()).addKeyValue("slot", d.slot.toString())
                            .addKeyValue("preferred", d.preferred).log("the slot's preferred claimer decided it");
                    queue.decided(d, now);
                    // We never asked the store, so it never told us of the run: look for it dead
                    // once its lease would have run out, as a peer that raced it would have.
                    queue.lookNoLaterThan(d.definition().name(), d.slot.plus(d.definition().lease()).plus(Recovery.LOOK_MARGIN));
                } else {
                    d.standing = DueSlot.Standing.NONE; // claim it like any slot from now on
                    claimNow.add(d);
                }
            }
        }
        return claimNow;
    }

    /** A slot of ours was decided. */
    void decided(DueSlot d) {
        if (d.standing == DueSlot.Standing.OWN) {
            d.standing = DueSlot.Standing.NONE;
            pending.computeIfPresent(d.slot.toEpochMilli(), (k, n) -> n == 1 ? null : n - 1);
        }
    }

    /**
     * After a tick (the followers queued): tells the peers up to which slot ours are decided, when
     * that moved. Nothing before the earliest slot still queued unshared is left unseen.
     */
    void tell(SlotQueue queue) {
        if (view == null || workers.size() < 2) {
            return; // alone: nobody waits for our word (and the queue is not scanned)
        }
        Instant firstUnshared = queue.earliestUnshared();
        long through = Long.MAX_VALUE;
        if (!pending.isEmpty()) {
            through = pending.firstKey() - 1;
        }
        if (firstUnshared != null) {
            through = Math.min(through, firstUnshared.toEpochMilli() - 1);
        }
        through = Math.min(through, latestShared);
        if (through < since) {
            return;
        }
        ClaimedThrough word = new ClaimedThrough(view, since, through);
        if (word.equals(said)) {
            return;
        }
        try {
            provider.claimedThrough(workerId, word, WorkerInfo.HEARTBEAT_TTL);
            said = word;
        } catch (LockException e) {
            // The peers then claim our slots themselves after the backoff: it costs work, never a slot.
            events.debug("claimed_through_failed").addKeyValue("error", Events.describe(e)).log("could not tell peers which slots are decided");
        }
    }

    private void share(DueSlot d, SlotQueue queue, List<DueSlot> claimNow) {
        long slot = d.slot.toEpochMilli();
        String preferred = workers.size() < 2 ? workerId : preferred(d.definition().name(), slot);
        latestShared = Math.max(latestShared, slot);
        if (firstView) {
            since = Math.min(since, slot);
        }
        if (preferred.equals(workerId)) {
            d.standing = DueSlot.Standing.OWN;
            pending.merge(slot, 1, Integer::sum);
            claimNow.add(d);
        } else {
            d.standing = DueSlot.Standing.PEER;
            d.preferred = preferred;
            d.view = view;
            queue.requeue(d, d.slot.plus(BACKOFF));
        }
    }

    /** Reads the live workers that run our config; a new view starts a new word past every slot shared so far. */
    private void look() {
        String ours = configHash.get();
        List<String> ids = new ArrayList<>();
        for (WorkerInfo w : live.get()) {
            if (w.configHash().equals(ours)) {
                ids.add(w.id());
            }
        }
        if (!ids.contains(workerId)) {
            ids.add(workerId); // before the first heartbeat's answer
        }
        ids.sort(null);
        String next = Fingerprints.hash(Map.of("workers", String.join(",", ids), "config", ours));
        if (next.equals(view)) {
            return;
        }
        // The first view covers what this process shared (all of it after its start); a later one
        // starts past every slot shared before, which peers may have been given under the old view.
        firstView = view == null;
        since = firstView ? Long.MAX_VALUE : latestShared + 1;
        view = next;
        workers = List.copyOf(ids);
        workerHashes = new long[ids.size()];
        for (int i = 0; i < ids.size(); i++) {
            workerHashes[i] = hash(ids.get(i));
        }
    }

    /** Rendezvous (highest random weight) hashing: the worker whose hash mixed with the slot's is highest. */
    String preferred(String job, long slot) {
        long key = mix(hash(job) ^ mix(slot));
        int best = 0;
        long bestScore = Long.MIN_VALUE;
        for (int i = 0; i < workerHashes.length; i++) {
            long score = mix(workerHashes[i] ^ key);
            if (score > bestScore) {
                bestScore = score;
                best = i;
            }
        }
        return workers.get(best);
    }

    private Map<String, ClaimedThrough> words(List<DueSlot> slots) {
        List<String> ids = slots.stream().map(d -> d.preferred).distinct().toList();
        try {
            return provider.claimedThrough(ids);
        } catch (LockException e) {
            return new HashMap<>(); // no word: claim them all
        }
    }

    private static long hash(String s) {
        long h = 0xcbf29ce484222325L; // FNV-1a, then mixed
        for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
            h = (h ^ b) * 0x100000001b3L;
        }
        return mix(h);
    }

    /** MurmurHash3's 64-bit finalizer: every input bit moves every output bit. */
    private static long mix(long z) {
        z = (z ^ (z >>> 33)) * 0xff51afd7ed558ccdL;
        z = (z ^ (z >>> 33)) * 0xc4ceb53fe1a85ec3L;
        return z ^ (z >>> 33);
    }
}
