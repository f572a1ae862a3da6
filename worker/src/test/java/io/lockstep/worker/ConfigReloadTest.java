package io.lockstep.worker;

import static org.assertj.core.api.Assertions.assertThat;

import io.lockstep.scheduler.Job;
import io.lockstep.scheduler.JobContext;
import io.lockstep.scheduler.Scheduler;
import io.lockstep.scheduler.config.HttpUser;
import io.lockstep.scheduler.config.LockstepConfig;
import io.lockstep.scheduler.lock.InMemoryLockProvider;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A reload's users file ({@code worker.http.auth.users}): put in force whatever becomes of the
 * jobs, so that a job the scheduler refuses does not keep a revoked user in; once only.
 */
class ConfigReloadTest {

    @TempDir
    Path dir;

    /** A job that does nothing. */
    public static class Noop implements Job {
        @Override
        public void execute(JobContext ctx) {
        }
    }

    private Path write(String users, String jobExtra) throws Exception {
        Files.writeString(dir.resolve("users.txt"), users);
        Path config = dir.resolve("jobs.yaml");
        Files.writeString(config, "worker:\n  http:\n    auth:\n      users: users.txt\n"
                + "jobs:\n  - { name: report, cron: \"0 0 3 * * *\", class: " + Noop.class.getName() + jobExtra + " }\n");
        return config;
    }

    @Test
    void aChangedUsersFileIsPutInForceEvenWhenTheReloadedJobsAreRefused() throws Exception {
        String alice = "alice:operator:" + ConsoleAuth.passwordHash("alice-password") + "\n";
        String bob = "bob:operator:" + ConsoleAuth.passwordHash("bob-password") + "\n";
        Path config = write(alice + bob, "");
        StringWriter problems = new StringWriter();
        LockstepConfig loaded = Configs.load(config, new PrintWriter(problems), true, false).orElseThrow();
        List<List<HttpUser>> applied = new ArrayList<>();
        try (Scheduler scheduler = Scheduler.builder(InMemoryLockProvider.create()).workerId("w").jobs(loaded.jobs()).build();
             ConfigReload reload = new ConfigReload(config, scheduler, false, loaded, applied::add)) {
            // bob revoked, in the same save as a job the scheduler refuses: an expectation on a store that judges none
            write(alice, ", expect: { successEvery: 26h }");
            reload.reload("SIGHUP");
            assertThat(applied).as("the users put in force").singleElement()
                    .satisfies(users -> assertThat(users).extracting(HttpUser::name).containsExactly("alice"));
            assertThat(scheduler.definitions()).singleElement().satisfies(d -> assertThat(d.expect().any()).as("the jobs refused").isFalse());

            reload.reload("SIGHUP"); // the same file again: the users are in force already
            assertThat(applied).hasSize(1);

            Files.writeString(dir.resolve("users.txt"), "alice:operator:not-a-hash\n");
            reload.reload("SIGHUP"); // a users file that does not load: nothing changes
            assertThat(applied).hasSize(1);
        }
        assertThat(problems.toString()).isEmpty();
    }
}
