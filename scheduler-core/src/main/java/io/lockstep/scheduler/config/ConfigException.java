package io.lockstep.scheduler.config;

import io.lockstep.scheduler.LockstepException;
import java.util.List;
import java.util.stream.Collectors;

/** A configuration file is not valid; carries every problem found, not just the first. */
public class ConfigException extends LockstepException {

    private final List<ConfigProblem> problems;

    public ConfigException(List<ConfigProblem> problems) {
        super(problems.stream().map(ConfigProblem::toString).collect(Collectors.joining("\n")));
        this.problems = List.copyOf(problems);
    }

    /** Every problem, in file order. */
    public List<ConfigProblem> problems() {
        return problems;
    }
}
