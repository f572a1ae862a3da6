package io.lockstep.spring;

import io.lockstep.scheduler.LockstepException;
import io.lockstep.scheduler.config.ConfigException;
import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/** A Lockstep problem at startup, said as the worker says it: one line per problem, no stack trace to read. */
final class LockstepFailureAnalyzer extends AbstractFailureAnalyzer<LockstepException> {

    @Override
    protected FailureAnalysis analyze(Throwable rootFailure, LockstepException cause) {
        String action = cause instanceof ConfigException
                ? "Correct each Lockstep setting named above (the YAML at its line, or the @LockstepJob method)."
                : cause.getMessage() != null && cause.getMessage().contains("jedis.version")
                        ? "Set the jedis.version property as the line above says."
                        : cause instanceof io.lockstep.scheduler.lock.LockException
                                ? "Make Lockstep's Redis reachable, or set lockstep.fail-fast=false to start the application without it "
                                        + "(Lockstep then claims once Redis answers)."
                                : "Make Lockstep's Redis reachable, or declare the job's bean, as the line above says.";
        return new FailureAnalysis("Lockstep could not start:\n" + cause.getMessage(), action, cause);
    }
}
