package io.lockstep.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lockstep.scheduler.cron.CronSchedule;
import io.lockstep.scheduler.lock.InMemoryLockProvider;
import java.time.ZoneOffset;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/** The scheduler closes the jobs its factory made: once each, newest first, after the drain; and when the factory fails part way. */
class CreatedJobsTest {

    private static final CronSchedule DAILY = CronSchedule.of("0 0 6 * * *", ZoneOffset.UTC);

    private final List<String> log = new CopyOnWriteArrayList<>();

    /** A job holding a resource. */
    private final class Closing implements Job, AutoCloseable {
        private final String name;
        private final boolean failsToClose;

        Closing(String name, boolean failsToClose) {
            this.name = name;
            this.failsToClose = failsToClose;
        }

        @Override
        public void execute(JobContext context) {}

        @Override
        public void close() {
            log.add("close " + name);
            if (failsToClose) {
                throw new IllegalStateException("pool already gone");
            }
        }
    }

    private static JobDefinition job(String name) {
        return JobDefinition.of(name, DAILY, Job.class);
    }

    @Test
    void closeClosesEachJobOnceNewestFirstAndGoesOnPastOneThatThrows() {
        Closing shared = new Closing("shared", false);
        try (CapturedEvents events = new CapturedEvents()) {
            Scheduler scheduler = Scheduler.builder(InMemoryLockProvider.create()).workerId("w")
                    .job(job("a")).job(job("b")).job(job("c")).job(job("d"))
                    .jobFactory(d -> switch (d.name()) {
                        case "a" -> new Closing("a", false);
                        case "b" -> new Closing("b", true);
                        default -> shared; // one instance for two jobs
                    })
                    .build();
            scheduler.start();
            assertThat(log).isEmpty();
            scheduler.close();
            assertThat(log).containsExactly("close shared", "close b", "close a");
            assertThat(events.named("job_close_failed")).singleElement()
                    .satisfies(e -> assertThat(e).containsEntry("job", "b").extractingByKey("error").asString().contains("pool already gone"));
            scheduler.close();
            assertThat(log).as("close is idempotent").hasSize(3);
        }
    }

    @Test
    void aFactoryThatFailsPartWayHasWhatItMadeSoFarClosed() {
        assertThatThrownBy(() -> Scheduler.builder(InMemoryLockProvider.create()).workerId("w")
                .job(job("a")).job(job("b")).job(job("c"))
                .jobFactory(d -> {
                    if (d.name().equals("c")) {
                        throw new LockstepException("job c: the database is unreachable");
                    }
                    return new Closing(d.name(), false);
                })
                .build()).isInstanceOf(LockstepException.class).hasMessageContaining("database is unreachable");
        assertThat(log).containsExactly("close b", "close a");
    }

    @Test
    void jobsOwnedByTheEmbedderAreLeftOpen() {
        Scheduler scheduler = Scheduler.builder(InMemoryLockProvider.create()).workerId("w").job(job("a"))
                .jobFactory(d -> new Closing("a", false)).closeJobs(false).build();
        scheduler.start();
        scheduler.close();
        assertThat(log).isEmpty();
    }
}
