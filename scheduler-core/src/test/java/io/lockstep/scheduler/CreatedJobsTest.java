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

    /** A job of an application's factory whose params are typed. */
    public record Limits(int maxRows) {}

    @Test
    void paramsOfAJobBuiltByAFactoryAreCheckedWhenTheSchedulerIsBuiltAndWhatWasBuiltIsClosed() {
        JobDefinition typo = new JobDefinition("report", DAILY, Job.class.getName(), java.util.Map.of("max_rows", 5),
                java.time.Duration.ofSeconds(30), java.time.Duration.ofSeconds(10), Overlap.SKIP, java.time.Duration.ZERO, true);
        class Typed implements Job {
            @Override
            public void execute(JobContext context) {}

            @Override
            public Class<?> paramsType() {
                return Limits.class;
            }
        }
        class TypedClosing extends Typed implements AutoCloseable {
            @Override
            public void close() {
                log.add("close report");
            }
        }
        Scheduler.Builder builder = Scheduler.builder(InMemoryLockProvider.create()).workerId("w").job(job("a")).job(typo)
                .jobFactory(d -> d.name().equals("a") ? new Closing("a", false) : new TypedClosing());
        assertThatThrownBy(builder::build).isInstanceOf(io.lockstep.scheduler.config.ConfigException.class)
                .hasMessage("job report: params.max_rows: unknown key \"max_rows\" (did you mean \"maxRows\"?)");
        assertThat(log).as("the jobs built, the refused one too, are closed, newest first").containsExactly("close report", "close a");
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
    void aFactoryThatThrowsSomethingElseOrReturnsNothingIsOneErrorNamingTheJob() {
        assertThatThrownBy(() -> Scheduler.builder(InMemoryLockProvider.create()).workerId("w").job(job("a")).job(job("b"))
                .jobFactory(d -> {
                    if (d.name().equals("b")) {
                        throw new IllegalStateException("no bean named b");
                    }
                    return new Closing("a", false);
                }).build())
                .isInstanceOf(LockstepException.class).hasMessageContaining("job b: the job factory").hasMessageContaining("no bean named b");
        assertThat(log).containsExactly("close a");
        assertThatThrownBy(() -> Scheduler.builder(InMemoryLockProvider.create()).workerId("w").job(job("c")).jobFactory(d -> null).build())
                .isInstanceOf(LockstepException.class).hasMessageContaining("job c: the job factory").hasMessageContaining("returned no job");
    }

    @Test
    void aJobWhoseCloseThrowsAnErrorDoesNotKeepTheOthersOpen() {
        try (CapturedEvents events = new CapturedEvents()) {
            Scheduler withError = Scheduler.builder(InMemoryLockProvider.create()).workerId("w2").job(job("x")).job(job("y"))
                    .jobFactory(d -> d.name().equals("x") ? new Closing("x", false) : new ErrorOnClose()).build();
            withError.start();
            withError.close();
            assertThat(log).containsExactly("close y (error)", "close x");
            assertThat(events.named("job_close_failed")).singleElement().satisfies(e -> assertThat(e).containsEntry("job", "y"));
        }
    }

    /** A job whose close fails with an Error, not an Exception. */
    private final class ErrorOnClose implements Job, AutoCloseable {
        @Override
        public void execute(JobContext context) {}

        @Override
        public void close() {
            log.add("close y (error)");
            throw new AssertionError("pool in a broken state");
        }
    }

    /**
     * A run that ignores its interrupt past the shutdown timeout and its grace still executes when
     * the scheduler closes: its job is not closed under it; the others are.
     */
    @Test
    void aJobWhoseRunStillExecutesAfterTheDrainIsNotClosedUnderIt() throws InterruptedException {
        java.util.concurrent.CountDownLatch running = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        final class Stubborn implements Job, AutoCloseable {
            @Override
            public void execute(JobContext context) {
                running.countDown();
                while (true) {
                    try {
                        release.await();
                        return;
                    } catch (InterruptedException ignored) {
                        // ignores its interrupt, as a job stuck in a library call would
                    }
                }
            }

            @Override
            public void close() {
                log.add("close stubborn");
            }
        }
        try (CapturedEvents events = new CapturedEvents()) {
            Scheduler scheduler = Scheduler.builder(InMemoryLockProvider.create()).workerId("w")
                    .job(JobDefinition.of("stubborn", CronSchedule.of("* * * * * *", ZoneOffset.UTC), Job.class)).job(job("quiet"))
                    .shutdownTimeout(java.time.Duration.ofMillis(100))
                    .jobFactory(d -> d.name().equals("stubborn") ? new Stubborn() : new Closing("quiet", false)).build();
            scheduler.start();
            org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(5)).until(() -> running.getCount() == 0);
            scheduler.close();
            assertThat(log).containsExactly("close quiet");
            assertThat(events.named("job_close_skipped")).singleElement().satisfies(e -> assertThat(e).containsEntry("job", "stubborn"));
        } finally {
            release.countDown();
        }
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
