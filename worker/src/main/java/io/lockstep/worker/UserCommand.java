package io.lockstep.worker;

import io.lockstep.scheduler.config.HttpUser;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/**
 * {@code user --name NAME --role viewer|operator [--token]}: prints a line for the users file of
 * {@code worker.http.auth}. With a password (asked on the terminal, or the first line of standard
 * input) the line holds its bcrypt hash; with {@code --token} it makes a random bearer token,
 * prints it once on standard error, and the line holds its SHA-256. Neither is kept anywhere else.
 */
@Command(name = "user", mixinStandardHelpOptions = true,
        description = "Prints a users-file line for worker.http.auth: a password's bcrypt hash, or a new bearer token's SHA-256.")
final class UserCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Option(names = "--name", required = true, paramLabel = "NAME", description = "the user's name")
    String name;

    @Option(names = "--role", required = true, paramLabel = "ROLE", description = "viewer (reads) or operator (also pauses, resumes, triggers, backfills)")
    String role;

    @Option(names = "--token", description = "make a bearer token (printed once, on standard error) instead of asking a password")
    boolean token;

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        String hash;
        if (token) {
            String secret = "lst_" + ConsoleForms.newCookie() + ConsoleForms.newCookie();
            hash = ConsoleAuth.tokenHash(secret);
            err.println("bearer token for " + name + " (shown once): " + secret);
            err.flush();
        } else {
            String password;
            if (System.console() != null) {
                char[] p = System.console().readPassword("password for %s: ", name);
                password = p == null ? "" : new String(p);
            } else {
                String line = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
                password = line == null ? "" : line;
            }
            if (password.length() < 8 || password.getBytes(StandardCharsets.UTF_8).length > 72) {
                err.println("error: a password must be 8 to 72 bytes long");
                return WorkerMain.BAD_INPUT;
            }
            hash = ConsoleAuth.passwordHash(password);
        }
        String line = name + ":" + role + ":" + hash;
        try {
            HttpUser.parse(line); // the same check the worker makes of the file
        } catch (IllegalArgumentException e) {
            err.println("error: " + e.getMessage().replaceFirst("^line 1: ", ""));
            return WorkerMain.BAD_INPUT;
        }
        out.println(line);
        return WorkerMain.OK;
    }
}
