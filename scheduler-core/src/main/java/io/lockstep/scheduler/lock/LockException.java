package io.lockstep.scheduler.lock;

import io.lockstep.scheduler.LockstepException;

/**
 * A lock store could not answer: connection refused, timeout, authentication, or a reply it did not
 * expect. The scheduler treats every such failure as "not claimed" (fail closed).
 */
public class LockException extends LockstepException {

    private final String target;

    /**
     * @param target what was being talked to, for example {@code redis 127.0.0.1:6379} (never with
     *     credentials)
     */
    public LockException(String target, String message, Throwable cause) {
        super(message, cause);
        this.target = target;
    }

    /** What was being talked to, for example {@code redis 127.0.0.1:6379}. */
    public String target() {
        return target;
    }
}
