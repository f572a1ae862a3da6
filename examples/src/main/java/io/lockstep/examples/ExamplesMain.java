package io.lockstep.examples;

import io.lockstep.worker.WorkerMain;
import java.io.PrintWriter;
import picocli.CommandLine;

/**
 * The main class of {@code examples/target/lockstep-examples.jar}: the worker's command line
 * ({@link WorkerMain}) with the example jobs on its class path, plus {@code demo}. It is the quick
 * start and what the integration tests run; production runs the distribution's {@code bin/lockstep}.
 */
public final class ExamplesMain {

    private ExamplesMain() {}

    public static void main(String[] args) {
        CommandLine cli = new CommandLine(new WorkerMain()).addSubcommand(new DemoCommand());
        System.exit(WorkerMain.execute(cli, new PrintWriter(System.out, true), new PrintWriter(System.err, true), args));
    }
}
