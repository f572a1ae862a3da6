package io.lockstep.worker;

import java.io.PrintWriter;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The worker's command line, {@code bin/lockstep} in the distribution: {@code run}, {@code validate},
 * and the operator commands {@code status}, {@code history}, {@code trigger}, {@code pause},
 * {@code resume}, and {@code audit}. Exit codes: 0 clean, 1 runtime failure (Redis unreachable), 2 bad config or
 * usage, 3 a triggered run did not succeed, 4 an audit found a guarantee broken.
 */
@Command(name = "lockstep", mixinStandardHelpOptions = true, versionProvider = WorkerMain.Version.class, scope = CommandLine.ScopeType.INHERIT,
        description = "Runs cron jobs exactly once per slot across a cluster of workers coordinated through Redis.",
        subcommands = {RunCommand.class, ValidateCommand.class, StatusCommand.class, HistoryCommand.class,
                TriggerCommand.class, BackfillCommand.class, PauseCommand.class, ResumeCommand.class, DrainCommand.class, AuditCommand.class, UserCommand.class, CommandLine.HelpCommand.class})
public final class WorkerMain implements Runnable {

    public static final int OK = 0;
    public static final int RUNTIME_FAILURE = 1;
    public static final int BAD_INPUT = 2;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    public static void main(String[] args) {
        System.exit(execute(new PrintWriter(System.out, true), new PrintWriter(System.err, true), args));
    }

    /** Runs a command with the given streams and answers its exit code; for tests and embedding. */
    public static int execute(PrintWriter out, PrintWriter err, String... args) {
        return execute(new CommandLine(new WorkerMain()), out, err, args);
    }

    /**
     * Runs a command of {@code cli} (this command line, maybe with more subcommands added, as the
     * examples' {@code demo}) with the worker's exit codes and error handling.
     */
    public static int execute(CommandLine cli, PrintWriter out, PrintWriter err, String... args) {
        cli.setOut(out);
        cli.setErr(err);
        cli.setExitCodeExceptionMapper(e -> e instanceof CommandLine.ParameterException ? BAD_INPUT : RUNTIME_FAILURE);
        cli.setParameterExceptionHandler((e, a) -> {
            err.println("error: " + e.getMessage());
            err.println("usage: " + e.getCommandLine().getCommandSpec().qualifiedName() + " --help");
            return BAD_INPUT;
        });
        cli.setExecutionExceptionHandler((e, commandLine, parseResult) -> {
            // A bug, not a user mistake: the one place a stack trace may appear.
            err.println("error: unexpected failure: " + e);
            e.printStackTrace(err);
            return RUNTIME_FAILURE;
        });
        return cli.execute(args);
    }

    /** {@code --version}: the version in the JAR's manifest (Implementation-Version). */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String v = WorkerMain.class.getPackage().getImplementationVersion();
            return new String[] {"lockstep " + (v != null ? v : "(development build)"), "Java " + System.getProperty("java.version")};
        }
    }

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }
}
