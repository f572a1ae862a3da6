package io.lockstep.scheduler;

import java.time.Instant;

/** Thrown by {@link JobContext#checkLease()} once the lease on a slot is gone. */
public class LeaseLostException extends LockstepException {

    private final String job;
    private final Instant slot;

    public LeaseLostException(String job, Instant slot, String reason) {
        super("lease lost for job " + job + " slot " + slot + ": " + reason);
        this.job = job;
        this.slot = slot;
    }

    public String job() {
        return job;
    }

    public Instant slot() {
        return slot;
    }
}
