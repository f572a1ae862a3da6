package io.lockstep.scheduler.lock;

import java.time.Instant;
import java.util.Objects;

/**
 * What the store says of one slot ({@link LockProvider#slotStates}): the evidence a worker that
 * stepped aside for a slot reads after the backoff, instead of racing for it. A store may answer
 * from the slot's record or from marks that say as much (Redis reads its group's marks: one command
 * for many slots, and {@link Kind#RUNNING} for a claim made ahead as for a run).
 *
 * @param kind where the slot stands
 * @param leaseEndMillis for {@link Kind#STAGED} and {@link Kind#RUNNING}: when, by the store's
 *     clock, the run's lease ends unless renewed or started (epoch ms); otherwise 0
 */
public record SlotState(Kind kind, long leaseEndMillis) {

    public SlotState {
        Objects.requireNonNull(kind, "kind");
    }

    /** Where a slot stands. */
    public enum Kind {
        /** No record: nobody decided it (yet). Claim it. */
        NONE,
        /** Claimed ahead and not started yet: look at it once its short lease would have run out. */
        STAGED,
        /** A run holds it: look at it once its lease would have run out. */
        RUNNING,
        /** Decided and closed (done, missed, skipped, abandoned, replaced): nothing to do. */
        DECIDED
    }

    /** A slot of a job, as {@link LockProvider#slotStates} asks for it. */
    public record Ref(String job, Instant slot) {
        public Ref {
            Objects.requireNonNull(job, "job");
            Objects.requireNonNull(slot, "slot");
        }
    }

    public static final SlotState NONE = new SlotState(Kind.NONE, 0);
    public static final SlotState DECIDED = new SlotState(Kind.DECIDED, 0);

    /** The state a record with {@code state} (null: no record) and a running-index score (0: none) stands for. */
    public static SlotState of(String state, long leaseEndMillis) {
        if (state == null || state.isEmpty()) {
            return NONE;
        }
        return switch (state) {
            case "claimed" -> leaseEndMillis > 0 ? new SlotState(Kind.STAGED, leaseEndMillis) : DECIDED;
            case "running" -> leaseEndMillis > 0 ? new SlotState(Kind.RUNNING, leaseEndMillis) : DECIDED;
            default -> DECIDED;
        };
    }
}
