package io.lockstep.scheduler;

import java.util.function.Supplier;

/**
 * What the requests for one {@link DueSlot} carry from one to the next: its token, the same on
 * every request so that the repeat of one whose reply was lost is answered alike (a new one only
 * after a Redlock split); when the first request since the store last said the slot was not decided
 * yet was sent (the store decided it no earlier: where the run's reading of the store's clock
 * starts, {@link SlotRun#storeClock}); and how many {@code BUSY} answers came in a row (the
 * back-off of {@link ClaimAnswers}).
 *
 * <p>Apart from DueSlot because this is the slot's conversation with the store, not where the slot
 * stands on its way to a decision: no stage reads it and no transition changes it. Owned by the
 * tick thread, as its slot is.
 */
final class SlotAsks {

    private String token;
    private long askedSinceNanos;
    /** {@code BUSY} answers so far ({@link #busyAnswered}). */
    private int busyAnswers;

    /** The slot's token, the same on every request (a lost reply's repeat is answered alike); drawn on its first one. */
    String token(Supplier<String> draw) {
        if (token == null) {
            token = draw.get();
        }
        return token;
    }

    /** A request for the slot was sent at {@code sentNanos} (monotonic). */
    void asked(long sentNanos) {
        if (askedSinceNanos == 0) {
            askedSinceNanos = sentNanos;
        }
    }

    /**
     * When the first request since the store last said the slot was not decided yet was sent
     * (monotonic nanos): the store decided the slot no earlier, though a repeat after a lost reply
     * is answered later. 0 before any.
     */
    long askedSinceNanos() {
        return askedSinceNanos;
    }

    /** How many {@code BUSY} answers came before this one (from 0): the back-off of {@link ClaimAnswers}. */
    int busyAnswered() {
        return busyAnswers++;
    }

    /** The store answered that the slot is not decided yet (busy, early): a decision comes with a later request. */
    void undecided() {
        askedSinceNanos = 0;
    }

    /** Redlock gave back what a split vote wrote: the next request draws a new token, so that a give-back landing late undoes nothing of it. */
    void newToken() {
        token = null;
        askedSinceNanos = 0;
    }
}
