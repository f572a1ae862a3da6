package io.lockstep.scheduler.lock;

/**
 * A worker's word to its peers that it decided every slot preferred to it: every scheduled slot
 * from {@code since} to {@code through} (epoch ms, both included) that rendezvous hashing over the
 * live workers of {@code view} gives to this worker has a decision in the store (claimed, skipped or
 * recorded as missed). A peer that agrees on the view then steps aside for those slots without
 * asking the store; any doubt (another view, a slot outside the range, no word at all) and it
 * claims the slot itself after the backoff, and the claim script decides as always.
 *
 * @param view the live workers the slots were shared among (a hash of their ids and config)
 * @param since the first slot this word covers: no slot from here on was shared under another view
 * @param through the last slot it covers: this worker has no slot of its own up to here undecided,
 *     and none unshared
 */
public record ClaimedThrough(String view, long since, long through) {

    /** Whether this word covers a slot that {@code view} gives to its writer. */
    public boolean covers(String view, long slotMillis) {
        return this.view.equals(view) && since <= slotMillis && slotMillis <= through;
    }

    /** The form stored: {@code view since through}. */
    public String encode() {
        return view + " " + since + " " + through;
    }

    /** {@link #encode()} read back; null for anything else. */
    public static ClaimedThrough decode(String text) {
        if (text == null) {
            return null;
        }
        String[] f = text.split(" ");
        if (f.length != 3) {
            return null;
        }
        try {
            return new ClaimedThrough(f[0], Long.parseLong(f[1]), Long.parseLong(f[2]));
        } catch (NumberFormatException e) {
            return null;
        }
    }
}
