package io.lockstep.scheduler;

import java.time.Duration;

/**
 * How long before its slot the preferred claimer sends its claim, adapted to how long an instant's
 * claims take to be decided.
 *
 * <p>A claim the store decides within its start window ({@link
 * io.lockstep.scheduler.lock.LockProvider#startWindow()}) is the run's start, and the slot costs two
 * calls; the lead starts {@link #LEAD_MARGIN} inside the window for that (50 ms for Redis's 65). But when an
 * instant holds more claims than the store decides within the window (at 1,000 slots a second one
 * Redis spends about 50 ms on them), the last of them are decided after their slot, and their runs
 * start late. So after each instant the lead is moved: when the instant's last answer was in this
 * worker's hands less than {@link #MARGIN_MILLIS} before its slot, it grows by the shortfall (up to
 * {@link Preference#AHEAD}); when even the last had more than three margins to spare, it shrinks
 * back toward the window by half the excess. Claims then decided earlier than the window are staged
 * and cost a start call each: the slot's timeliness comes first, its third call second. The lead
 * never changes what a claim is allowed to do, only when it is sent.
 *
 * <p>Fixed (not adapted) for a store that stages every claim made ahead (the lead is then
 * {@link Preference#AHEAD}), or when the system property {@code lockstep.claimLeadMillis} sets it.
 * {@link #observe} is called from the tick thread only; {@link #current} from any.
 */
final class ClaimLead {

    /** How long before its slot an instant's last claim should be decided, at the least. */
    static final long MARGIN_MILLIS = 10;
    /** How far inside the store's start window the claims are first sent: room for the request's way there. */
    static final Duration LEAD_MARGIN = Duration.ofMillis(15);

    private final long baseMillis;
    private final boolean adaptive;
    private volatile long leadMillis;
    /** The instant whose answers are being gathered (epoch ms), and the least time to spare among them. */
    private long instant = Long.MIN_VALUE;
    private long worst = Long.MAX_VALUE;

    private ClaimLead(long baseMillis, boolean adaptive) {
        this.baseMillis = baseMillis;
        this.adaptive = adaptive;
        this.leadMillis = baseMillis;
    }

    /** A lead that never moves. */
    static ClaimLead fixed(Duration lead) {
        return new ClaimLead(lead.toMillis(), false);
    }

    /**
     * The lead for a store with this start window: {@link #LEAD_MARGIN} inside it, adapted; or
     * {@link Preference#AHEAD}, fixed, for a store that stages every claim made ahead (a zero
     * window). The system property {@code lockstep.claimLeadMillis} (0 to {@link Preference#AHEAD})
     * fixes it instead, for the tests that stage claims on purpose.
     */
    static ClaimLead forWindow(Duration startWindow) {
        Long set = Long.getLong("lockstep.claimLeadMillis");
        if (set != null) {
            return new ClaimLead(Math.max(0, Math.min(Preference.AHEAD.toMillis(), set)), false);
        }
        if (startWindow.isZero()) {
            return fixed(Preference.AHEAD);
        }
        return new ClaimLead(Math.max(0, startWindow.minus(LEAD_MARGIN).toMillis()), true);
    }

    Duration current() {
        return Duration.ofMillis(leadMillis);
    }

    /**
     * An answer to one of this worker's claims made ahead of {@code slotMillis}, in hand
     * {@code spareMillis} before the slot (negative: after it). The answers of one instant come
     * before those of the next (a straggler of an earlier instant is ignored); the first answer of a
     * later instant settles the one before.
     */
    void observe(long slotMillis, long spareMillis) {
        if (!adaptive || slotMillis < instant) {
            return;
        }
        if (slotMillis > instant) {
            if (instant != Long.MIN_VALUE) {
                settle();
            }
            instant = slotMillis;
            worst = Long.MAX_VALUE;
        }
        worst = Math.min(worst, spareMillis);
    }

    private void settle() {
        long lead = leadMillis;
        if (worst < MARGIN_MILLIS) {
            lead = Math.min(Preference.AHEAD.toMillis(), lead + (MARGIN_MILLIS - worst));
        } else if (worst > 3 * MARGIN_MILLIS) {
            lead = Math.max(baseMillis, lead - (worst - 3 * MARGIN_MILLIS) / 2);
        }
        leadMillis = lead;
    }
}
