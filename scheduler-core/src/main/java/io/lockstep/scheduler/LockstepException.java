package io.lockstep.scheduler;

/** The root of every exception Lockstep throws. Unchecked. */
public class LockstepException extends RuntimeException {

    public LockstepException(String message) {
        super(message);
    }

    public LockstepException(String message, Throwable cause) {
        super(message, cause);
    }
}
