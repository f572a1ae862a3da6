package io.lockstep.scheduler.lock;

/**
 * What a run saved of its progress ({@code JobContext.checkpoint}), kept with its slot's record so
 * that a rerun of the slot (after its worker died, stalled or handed it over at shutdown) resumes
 * from it. Written only by the run that holds the slot (fenced by its owner token), so a run that
 * lost its lease can no longer overwrite what its rerun saved.
 *
 * @param value what the job saved (its own encoding; at most {@link #MAX_LENGTH} bytes in UTF-8)
 * @param fencingToken the fencing token of the run that saved it
 * @param sequence how many checkpoints that run had saved, this one included: with the token, orders
 *     the copies of several stores (Redlock keeps the latest any majority member holds)
 */
public record Checkpoint(String value, long fencingToken, long sequence) {

    /** The longest value a checkpoint keeps, in UTF-8 bytes: it lives in the slot's record, read and written whole. */
    public static final int MAX_LENGTH = 64 * 1024;

    /** Whether this checkpoint was saved after {@code other} (a later run, or later in the same run). */
    public boolean after(Checkpoint other) {
        return other == null || fencingToken > other.fencingToken
                || (fencingToken == other.fencingToken && sequence > other.sequence);
    }
}
