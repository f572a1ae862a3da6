package io.lockstep.examples.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.lockstep.redis.LocalRedisServer;
import io.lockstep.worker.WorkerMain;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code lockstep backfill} against a real redis-server, with no worker running: each bad input is
 * one line naming what is wrong, exit 2, and nothing is stored; a dry run says what it would run;
 * a backfill asked for shows in {@code status}, a second one for the job is refused while it runs,
 * and {@code --cancel} ends it.
 */
class BackfillCommandTest {

    private static LocalRedisServer redis;

    @TempDir
    Path dir;

    @BeforeAll
    static void startRedis() {
        redis = LocalRedisServer.start();
    }

    @AfterAll
    static void stopRedis() {
        redis.close();
    }

    private String config(String prefix) throws IOException {
        Path file = dir.resolve("jobs.yaml");
        Files.writeString(file, "redis:\n  uri: " + redis.uri() + "\n  keyPrefix: " + prefix + "\ndefaults:\n  misfireGrace: 2s\njobs:\n"
                + "  - name: report\n    cron: \"0 * * * * *\"\n    class: com.acme.jobs.ReportJob\n"
                + "  - name: everywhere\n    cron: \"0 * * * * *\"\n    class: com.acme.jobs.ReportJob\n    runOn: every-worker\n");
        return file.toString();
    }

    private static String iso(Instant t) {
        return t.toString();
    }

    @Test
    void badInputIsOneLineNamingItAndStoresNothing() throws IOException {
        String file = config("bad");
        Instant now = Instant.now().truncatedTo(ChronoUnit.MINUTES);
        record Case(String[] args, String says) {}
        Case[] cases = {
            new Case(new String[] {"report", "--from", iso(now.minus(Duration.ofHours(1))), "--to", iso(now.plus(Duration.ofHours(1)))},
                    "is in the future"),
            new Case(new String[] {"report", "--from", iso(now.minus(Duration.ofDays(8))), "--to", iso(now.minus(Duration.ofDays(7)))},
                    "is older than what the store can tell of report's slots"),
            new Case(new String[] {"report", "--from", iso(now.minus(Duration.ofHours(1))), "--to", iso(now.minus(Duration.ofHours(2)))},
                    "is before --from"),
            new Case(new String[] {"report", "--from", "yesterday", "--to", iso(now)}, "--from must be an ISO-8601 instant"),
            new Case(new String[] {"report", "--from", iso(now.minus(Duration.ofHours(1))), "--to", iso(now.minusSeconds(60)), "--rate", "fast"},
                    "--rate must be a number of slots a second"),
            new Case(new String[] {"report", "--from", iso(Instant.now().minusSeconds(2)), "--to", iso(Instant.now().minusMillis(200))},
                    "has no slot from"), // at most one slot, and within misfireGrace: the schedule's
            new Case(new String[] {"everywhere", "--from", iso(now.minus(Duration.ofHours(1))), "--to", iso(now.minusSeconds(60))},
                    "runs on every worker"),
            new Case(new String[] {"nope", "--from", iso(now.minus(Duration.ofHours(1))), "--to", iso(now.minusSeconds(60))},
                    "no job named \"nope\""),
            new Case(new String[] {"report", "--to", iso(now)}, "backfill needs JOB, --from and --to"),
        };
        for (Case c : cases) {
            String[] args = new String[c.args().length + 4];
            args[0] = "backfill";
            args[1] = "--config";
            args[2] = file;
            args[3] = "--detach"; // should one be accepted, the test fails at once instead of following it
            System.arraycopy(c.args(), 0, args, 4, c.args().length);
            CliRun run = CliRun.of(args);
            assertThat(run.exit()).as("%s: %s%s", String.join(" ", c.args()), run.out(), run.err()).isEqualTo(WorkerMain.BAD_INPUT);
            assertThat(run.err().strip()).as("%s", String.join(" ", c.args())).startsWith("error: ").contains(c.says())
                    .doesNotContain("\n").doesNotContain("Exception");
        }
        CliRun status = CliRun.of("status", "--config", file, "--json");
        assertThat(status.out()).as("nothing stored").contains("\"backfills\":[]");
    }

    @Test
    void aDryRunSaysWhatItWouldRunAndABackfillShowsInStatusUntilCancelled() throws IOException {
        String file = config("asked");
        Instant now = Instant.now().truncatedTo(ChronoUnit.MINUTES);
        String from = iso(now.minus(Duration.ofMinutes(30)));
        String to = iso(now.minus(Duration.ofMinutes(1)));

        CliRun dry = CliRun.of("backfill", "--config", file, "report", "--from", from, "--to", to, "--rate", "2/s", "--dry-run");
        assertThat(dry.exit()).as(dry.err()).isZero();
        assertThat(dry.out()).contains("dry run: report has 30 slot(s)").contains("0 already decided").contains("would run 30 at most 2/s");
        assertThat(CliRun.of("status", "--config", file, "--json").out()).as("a dry run stores nothing").contains("\"backfills\":[]");

        CliRun asked = CliRun.of("backfill", "--config", file, "report", "--from", from, "--to", to, "--rate", "2/s", "--detach");
        assertThat(asked.exit()).as(asked.err()).isZero();
        assertThat(asked.out()).contains("30 slot(s)").contains("30 to run at most 2/s");
        CliRun again = CliRun.of("backfill", "--config", file, "report", "--from", from, "--to", to, "--detach");
        assertThat(again.exit()).isEqualTo(WorkerMain.BAD_INPUT);
        assertThat(again.err()).contains("report has a backfill running").contains("lockstep backfill --cancel report");
        assertThat(CliRun.of("status", "--config", file).out()).contains("backfills (1)").contains("waiting for a worker");

        CliRun cancel = CliRun.of("backfill", "--config", file, "--cancel", "report");
        assertThat(cancel.exit()).as(cancel.err()).isZero();
        assertThat(cancel.out()).contains("cancelled the backfill");
        assertThat(CliRun.of("status", "--config", file, "--json").out()).contains("\"state\":\"cancelled\"");
        CliRun after = CliRun.of("backfill", "--config", file, "report", "--from", from, "--to", to, "--detach");
        assertThat(after.exit()).as("a cancelled backfill no longer holds the job: %s", after.err()).isZero();
        assertThat(CliRun.of("backfill", "--config", file, "--cancel", "report").exit()).isZero();
    }
}
