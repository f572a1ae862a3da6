package io.lockstep.examples.cli;

import io.lockstep.worker.WorkerMain;
import java.io.PrintWriter;
import java.io.StringWriter;

/** One worker command run in this JVM ({@link WorkerMain#execute}): its exit code and what it printed. */
public record CliRun(int exit, String out, String err) {

    public static CliRun of(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int exit = WorkerMain.execute(new PrintWriter(out, true), new PrintWriter(err, true), args);
        return new CliRun(exit, out.toString(), err.toString());
    }
}
