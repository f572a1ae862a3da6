package io.lockstep.scheduler.config;

/**
 * One thing wrong with a configuration file.
 *
 * @param file the file as given to the loader
 * @param line 1-based line of the offending node, 0 when the whole file is meant
 * @param path the YAML path, for example {@code jobs[2].cron}; empty for the whole file
 * @param message what is wrong, the rule, and the actual value
 */
public record ConfigProblem(String file, int line, String path, String message) {

    /** {@code file:line: path: message}, the one-line form printed to users ({@code file: message} when no line applies). */
    @Override
    public String toString() {
        return file + (line > 0 ? ":" + line : "") + ": " + (path.isEmpty() ? "" : path + ": ") + message;
    }
}
