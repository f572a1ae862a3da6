package io.lockstep.scheduler.lock;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * The periods in which a job was disabled in the cluster, as the store kept them: what a worker
 * starting with the job enabled reads so that it does not catch up the slots that passed while
 * the job was switched off ({@code enabled: false}) and then switched on by a restart. A reload
 * that re-enables a job starts it at its next slot; a restart must agree.
 *
 * <p>Only positive evidence counts. One worker per config (the first live one by id of those that
 * run it) stamps every {@link #STAMP_EVERY} each job of its config as enabled or disabled, and
 * every worker stamps its own at its start, at each reload and at its stop
 * ({@link LockProvider#stampInForce}). A period out of force runs from a disabled stamp to the last
 * disabled stamp of an unbroken run of them (stamps at most {@link #GAP} apart, none enabled among
 * them), starting no sooner than {@link #GAP} after the job's last enabled stamp: so disabled and
 * enabled stamps interleaved (a rollout, two configs that disagree) never make one, and such slots
 * are owed. Anything else is owed
 * and caught up by the job's {@code catchUp} as before: a period with no worker running, a config
 * whose workers were all down while others ran, a job <em>removed</em> from the config (not
 * disabled) and re-added, a store that lost the stamps. The store keeps the latest closed period
 * and the current one.
 *
 * @param off the periods the job was out of force, oldest first (empty: none kept)
 */
public record InForce(List<Period> off) {

    /** How often the keeper of a config stamps its jobs. */
    public static final Duration STAMP_EVERY = Duration.ofSeconds(30);
    /**
     * Disabled stamps further apart than this do not make one period (the cluster, or the config's
     * keeper, was gone between them), and a period starts no earlier than this after the job's last
     * enabled stamp: four stamps' worth, so that a keeper handed over (a heartbeat ttl) and a slow
     * store never make a job in force look off. A larger value costs extra catch-up, never a slot.
     */
    public static final Duration GAP = Duration.ofMinutes(2);
    /** A job not stamped for this long is forgotten, and its marks with it once it decided nothing for as long. */
    public static final Duration KEEP = Duration.ofDays(7);

    /** One period out of force, both ends included. */
    public record Period(Instant from, Instant to) {
        boolean contains(Instant t) {
            return !t.isBefore(from) && !t.isAfter(to);
        }
    }

    public InForce {
        off = List.copyOf(off);
    }

    /** Whether {@code slot} passed while the job was out of force (so it is not owed). */
    public boolean outOfForce(Instant slot) {
        return off.stream().anyMatch(p -> p.contains(slot));
    }

    /**
     * The periods from a job's stamps as a store keeps them (epoch ms; null: none): the current run
     * of disabled stamps (where it starts, its last stamp) and the latest closed period. A run whose
     * start (its first stamp, or {@link #GAP} after the last enabled one) it has not reached yet is
     * no period.
     */
    public static InForce fromStamps(Long offSince, Long lastOff, Long closedFrom, Long closedTo) {
        List<Period> periods = new ArrayList<>(2);
        if (closedFrom != null && closedTo != null && closedFrom <= closedTo) {
            periods.add(new Period(Instant.ofEpochMilli(closedFrom), Instant.ofEpochMilli(closedTo)));
        }
        if (offSince != null && lastOff != null && offSince <= lastOff) {
            periods.add(new Period(Instant.ofEpochMilli(offSince), Instant.ofEpochMilli(lastOff)));
        }
        return new InForce(periods);
    }

    /**
     * What several copies agree on (Redlock's masters): a slot is out of force only where every
     * copy says so; a copy that kept nothing makes everything owed.
     */
    public static InForce agreed(List<InForce> copies) {
        if (copies.isEmpty()) {
            return new InForce(List.of());
        }
        List<Period> common = copies.get(0).off();
        for (InForce other : copies.subList(1, copies.size())) {
            List<Period> next = new ArrayList<>();
            for (Period a : common) {
                for (Period b : other.off()) {
                    Instant from = a.from().isAfter(b.from()) ? a.from() : b.from();
                    Instant to = a.to().isBefore(b.to()) ? a.to() : b.to();
                    if (!from.isAfter(to)) {
                        next.add(new Period(from, to));
                    }
                }
            }
            common = next;
        }
        return new InForce(common);
    }
}
