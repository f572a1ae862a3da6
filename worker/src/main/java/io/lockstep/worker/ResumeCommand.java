package io.lockstep.worker;

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

    @picocli.CommandLine.Option(names = "--json", description = "one JSON document: {\"resumed\":[...],\"notPaused\":[...]}")
    boolean json;

    @Override
    int run(LockstepConfig config, RedisAdmin admin, PrintWriter out, PrintWriter err) {
        Optional<List<String>> jobs = which.resolve(config, err);
        if (jobs.isEmpty()) {
            return WorkerMain.BAD_INPUT;
        }
        com.fasterxml.jackson.databind.node.ObjectNode result = new com.fasterxml.jackson.databind.ObjectMapper().createObjectNode();
        com.fasterxml.jackson.databind.node.ArrayNode resumed = result.putArray("resumed");
        com.fasterxml.jackson.databind.node.ArrayNode notPaused = result.putArray("notPaused");
        for (String job : jobs.get()) {
            boolean was = admin.resume(job, PauseCommand.operator());
            (was ? resumed : notPaused).add(job);
            if (!json) {
                out.println(was ? "resumed " + job : job + " was not paused");
            }
        }
        if (json) {
            out.println(result);
        }
        return WorkerMain.OK;
    }
}
