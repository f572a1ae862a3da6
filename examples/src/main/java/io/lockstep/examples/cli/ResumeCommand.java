package io.lockstep.examples.cli;

import io.lockstep.redis.RedisAdmin;
import io.lockstep.scheduler.config.LockstepConfig;
import java.io.PrintWriter;
import java.util.List;
import java.util.Optional;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;

/** {@code resume --config FILE (--job NAME | --all)}: ends a pause; the next slot runs again. */
@Command(name = "resume", mixinStandardHelpOptions = true, description = "Ends the pause of a job (or all); its next slot runs again.")
final class ResumeCommand extends AdminCommand {

    @ArgGroup(exclusive = true, multiplicity = "1")
    PauseCommand.Which which;

    @Override
    int run(LockstepConfig config, RedisAdmin admin, PrintWriter out, PrintWriter err) {
        Optional<List<String>> jobs = which.resolve(config, err);
        if (jobs.isEmpty()) {
            return WorkerMain.BAD_INPUT;
        }
        for (String job : jobs.get()) {
            out.println(admin.resume(job) ? "resumed " + job : job + " was not paused");
        }
        return WorkerMain.OK;
    }
}
