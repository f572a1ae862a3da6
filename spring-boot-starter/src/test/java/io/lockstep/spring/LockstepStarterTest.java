package io.lockstep.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.lockstep.redis.LocalRedisServer;
import io.lockstep.redis.RedisAdmin;
import io.lockstep.redis.RedisLockProvider;
import io.lockstep.redis.RedisLocks;
import io.lockstep.scheduler.Job;
import io.lockstep.scheduler.JobContext;
import io.lockstep.scheduler.LockstepException;
import io.lockstep.scheduler.Scheduler;
import io.lockstep.scheduler.config.ConfigException;
import io.micrometer.core.instrument.MeterRegistry;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import redis.clients.jedis.RedisClient;

/**
 * The starter in real Spring Boot application contexts on a real redis-server (the same tests run
 * on Boot 3.5 here and on Boot 4.0 in the module {@code spring-boot-starter-boot4}): jobs as beans
 * and as annotated methods, two application instances running each slot once, the application's
 * MeterRegistry and OpenTelemetry, the health indicator through an outage, the actuator endpoint,
 * a graceful stop that drains before the lock provider closes, RedisLocks on the application's
 * Jedis client, and one located problem for each mistake at startup.
 */
class LockstepStarterTest {

    /** job@slot -> the workers that ran it, across every application instance of a test. */
    static final Map<String, List<String>> RUNS = new ConcurrentHashMap<>();
    static final List<String> FINISHED = new CopyOnWriteArrayList<>();

    private static LocalRedisServer redis;

    @TempDir
    Path dir;

    @BeforeAll
    static void redis() {
        redis = LocalRedisServer.start();
    }

    @AfterAll
    static void stopRedis() {
        redis.close();
    }

    @BeforeEach
    void clear() {
        RUNS.clear();
        FINISHED.clear();
    }

    static void ran(JobContext ctx) {
        RUNS.computeIfAbsent(ctx.jobName() + "@" + ctx.scheduledTime(), k -> new CopyOnWriteArrayList<>()).add(ctx.workerId());
    }

    /** An application with a job method and a job bean the YAML names. */
    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class App {

        @Bean
        Reports reports() {
            return new Reports();
        }

        @Bean("report")
        ReportJob report() {
            return new ReportJob();
        }
    }

    /** A job class the YAML names; its bean is found by the job's name. */
    static class ReportJob implements Job {
        @Override
        public void execute(JobContext ctx) {
            ran(ctx);
        }
    }

    /** A job class with no bean. */
    static class Unregistered implements Job {
        @Override
        public void execute(JobContext ctx) {
            ran(ctx);
        }
    }

    static class Reports {

        @LockstepJob(name = "tick", cron = "${tick.cron:* * * * * *}", lease = "5s", misfireGrace = "2s")
        void tick(JobContext ctx) {
            ran(ctx);
        }
    }

    private ConfigurableApplicationContext start(Class<?> app, String... properties) {
        return new SpringApplicationBuilder(app).web(WebApplicationType.NONE).properties(properties).run();
    }

    private Path yaml(String jobs) throws Exception {
        Path file = dir.resolve("lockstep.yaml");
        Files.writeString(file, "redis:\n  uri: " + redis.uri() + "\n  keyPrefix: starter-" + System.nanoTime() + "\n"
                + "worker:\n  shutdownTimeout: 5s\ndefaults:\n  lease: 5s\n  misfireGrace: 2s\njobs:\n" + jobs);
        return file;
    }

    @Test
    void twoApplicationInstancesRunEachSlotOnceWithTheirJobBeansMetricsHealthAndEndpoint() throws Exception {
        Path config = yaml("  - { name: report, cron: \"* * * * * *\", class: " + ReportJob.class.getName() + " }\n");
        try (ConfigurableApplicationContext a = start(App.class, "lockstep.config=file:" + config, "lockstep.worker.id=instance-a");
             ConfigurableApplicationContext b = start(App.class, "lockstep.config=file:" + config, "lockstep.worker.id=instance-b")) {
            Instant from = Instant.now().plusSeconds(1);
            // Slots are shared by a hash of (worker, job, slot): over a few slots one instance can win them
            // all (CI saw it, about 1 run in 30), so wait until each has run one.
            await().atMost(Duration.ofSeconds(20)).until(() -> RUNS.keySet().stream()
                    .filter(k -> k.startsWith("tick@") && Instant.parse(k.substring(5)).isAfter(from)).count() >= 4
                    && RUNS.keySet().stream().anyMatch(k -> k.startsWith("report@"))
                    && RUNS.values().stream().flatMap(List::stream).collect(Collectors.toSet()).size() == 2);
            assertThat(RUNS).allSatisfy((slot, workers) -> assertThat(workers).as(slot).hasSize(1));
            assertThat(RUNS.values().stream().flatMap(List::stream).collect(Collectors.toSet())).as("both instances ran slots")
                    .containsExactlyInAnyOrder("instance-a", "instance-b");

            assertThat(a.getBean(MeterRegistry.class).find("lockstep.runs").tag("job", "tick").counters()).isNotEmpty();
            assertThat(healthOf(a)).isEqualTo("UP");
            Map<String, Object> status = a.getBean(LockstepEndpoint.class).status();
            assertThat(status.get("jobs").toString()).contains("name=tick", "name=report");
            assertThat(status.get("workers").toString()).contains("instance-b");
            assertThat(a.getBeansOfType(RedisLocks.class)).as("no Jedis bean of the application: no RedisLocks").isEmpty();
        }
    }

    static String healthOf(ConfigurableApplicationContext ctx) throws Exception {
        Object indicator = ctx.getBean("lockstepHealthIndicator");
        Object health = indicator.getClass().getInterfaces()[0].getMethod("health").invoke(indicator);
        Object status = health.getClass().getMethod("getStatus").invoke(health);
        return (String) status.getClass().getMethod("getCode").invoke(status);
    }

    /** A job that takes a while, to stop the application in the middle of it. */
    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class SlowApp {

        @Bean
        Slow slow() {
            return new Slow();
        }
    }

    static class Slow {

        /** While set, a run waits for it instead of sleeping: the test holds a run in flight across close(). */
        static volatile java.util.concurrent.CountDownLatch HOLD;
        /** The slots whose runs waited for {@link #HOLD}. */
        static final List<String> HELD = new CopyOnWriteArrayList<>();

        @LockstepJob(name = "slow", cron = "* * * * * *", overlap = "skip", lease = "5s")
        void work(JobContext ctx) throws InterruptedException {
            ran(ctx);
            java.util.concurrent.CountDownLatch hold = HOLD;
            if (hold != null) {
                HELD.add(ctx.scheduledTime().toString());
                hold.await(30, java.util.concurrent.TimeUnit.SECONDS); // the test opens it once close() has begun
            } else {
                Thread.sleep(1_500);
            }
            FINISHED.add(ctx.scheduledTime().toString());
        }
    }

    @Test
    void aStopDrainsTheRunningJobThenClosesTheProviderAndTheHealthFollowsRedis() throws Exception {
        String prefix = "drain-" + System.nanoTime();
        ConfigurableApplicationContext ctx = start(SlowApp.class, "lockstep.redis.uri=" + redis.uri(), "lockstep.redis.key-prefix=" + prefix,
                "lockstep.worker.id=drainer", "lockstep.worker.shutdown-timeout=10s", "lockstep.health.strict=true");
        String held;
        try {
            await().atMost(Duration.ofSeconds(10)).until(() -> "UP".equals(healthOf(ctx)));
            redis.pause(); // SIGSTOP: Redis stops answering
            try {
                await().atMost(Duration.ofSeconds(15)).until(() -> "OUT_OF_SERVICE".equals(healthOf(ctx)));
            } finally {
                redis.resume();
            }
            await().atMost(Duration.ofSeconds(15)).until(() -> "UP".equals(healthOf(ctx)));
            Slow.HELD.clear();
            Slow.HOLD = new java.util.concurrent.CountDownLatch(1);
            held = await().atMost(Duration.ofSeconds(10)).until(() -> Slow.HELD.stream().findFirst(), java.util.Optional::isPresent)
                    .orElseThrow();
        } catch (Exception | Error e) {
            ctx.close();
            throw e;
        }
        // close() while the run is held: it must begin stopping, wait for the run, write its outcome,
        // and only then close the provider and return.
        io.lockstep.scheduler.Scheduler scheduler = ctx.getBean(io.lockstep.scheduler.Scheduler.class);
        Thread closer = new Thread(ctx::close, "test-close");
        closer.start();
        try {
            await().atMost(Duration.ofSeconds(10)).until(() -> scheduler.health().reason().equals("stopping"));
            assertThat(closer.isAlive()).as("close() waits for the run in flight").isTrue();
            assertThat(FINISHED).as("the held run has not finished yet").doesNotContain(held);
        } finally {
            Slow.HOLD.countDown();
            Slow.HOLD = null;
        }
        closer.join(Duration.ofSeconds(30).toMillis());
        assertThat(closer.isAlive()).as("close() returned").isFalse();
        assertThat(FINISHED).as("the run in flight finished before close() returned").contains(held);
        String last = held;
        try (RedisLockProvider provider = RedisLockProvider.builder().uri(redis.uri()).keyPrefix(prefix).build()) {
            // (Its slot's history may also hold a claim handed back unstarted and its recovery, after the Redis pause.)
            assertThat(RedisAdmin.of(provider).history("slow", 20)).filteredOn(r -> r.slot().toString().equals(last))
                    .filteredOn(r -> r.outcome().equals("succeeded")).as("the held run's outcome, written before the provider closed")
                    .hasSize(1);
        }
    }

    /** An application with its own Jedis client and its own OpenTelemetry. */
    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(Reports.class)
    static class JedisApp {

        static final InMemorySpanExporter SPANS = InMemorySpanExporter.create();

        @Bean(destroyMethod = "close")
        RedisClient jedis() {
            return RedisClient.create(redis.host(), redis.port());
        }

        @Bean(destroyMethod = "close")
        OpenTelemetrySdk openTelemetry() {
            return OpenTelemetrySdk.builder()
                    .setTracerProvider(SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(SPANS)).build()).build();
        }
    }

    /**
     * F10 of the 2026-12-04 trial: a default Boot application was warned that its shutdown phase (30 s)
     * is shorter than Lockstep's drain (shutdownTimeout 30 s + 5 s). Unset, the starter's
     * shutdownTimeout now fits in the phase; one the application sets is kept.
     */
    @Test
    void unsetTheShutdownTimeoutFitsInBootsShutdownPhase() {
        String redisProps = "lockstep.redis.uri=" + redis.uri();
        String prefix = "lockstep.redis.key-prefix=starter-" + System.nanoTime();
        try (ConfigurableApplicationContext ctx = start(App.class, redisProps, prefix)) {
            assertThat(ctx.getBean(LockstepAutoConfiguration.Setup.class).config().worker().shutdownTimeout())
                    .as("Boot's default phase of 30 s, less the 5 s after the interrupt").isEqualTo(Duration.ofSeconds(25));
        }
        try (ConfigurableApplicationContext ctx = start(App.class, redisProps, prefix, "spring.lifecycle.timeout-per-shutdown-phase=2m")) {
            assertThat(ctx.getBean(LockstepAutoConfiguration.Setup.class).config().worker().shutdownTimeout())
                    .as("a longer phase: the worker's own default").isEqualTo(Duration.ofSeconds(30));
        }
        try (ConfigurableApplicationContext ctx = start(App.class, redisProps, prefix, "lockstep.worker.shutdown-timeout=40s")) {
            assertThat(ctx.getBean(LockstepAutoConfiguration.Setup.class).config().worker().shutdownTimeout())
                    .as("set by the application: kept (and warned about)").isEqualTo(Duration.ofSeconds(40));
        }
    }

    @Test
    void onTheApplicationsJedisClientLockstepRunsItsJobsTracesThemAndLendsItsLockApi() {
        JedisApp.SPANS.reset();
        try (ConfigurableApplicationContext ctx = start(JedisApp.class, "lockstep.worker.id=jedis-app")) {
            assertThat(ctx.getBean(RedisLockProvider.class).describe()).contains("the application's Jedis client");
            RedisLocks locks = ctx.getBean(RedisLocks.class);
            assertThat(locks.tryAcquire("starter-lock", Duration.ofSeconds(5))).isPresent();
            assertThat(locks.tryAcquire("starter-lock", Duration.ofSeconds(5))).as("held").isEmpty();
            await().atMost(Duration.ofSeconds(10)).until(() -> JedisApp.SPANS.getFinishedSpanItems().stream()
                    .anyMatch(s -> s.getName().equals("lockstep.run tick")));
        }
    }

    /** Issue 37: on Redlock the starter shows each master's state as the worker JAR does, in the application's registry. */
    @Test
    void onRedlockTheApplicationsRegistryShowsEachMasterAsked() throws Exception {
        List<LocalRedisServer> masters = List.of(LocalRedisServer.start(), LocalRedisServer.start(), LocalRedisServer.start());
        try {
            Path file = dir.resolve("lockstep-redlock.yaml");
            Files.writeString(file, "redis:\n  redlock:\n    nodes: [" + String.join(", ", masters.stream()
                    .map(m -> m.uri().replace("redis://", "")).toList()) + "]\n    quarantine: 0s\n  keyPrefix: starter-redlock\n"
                    + "worker:\n  shutdownTimeout: 5s\ndefaults:\n  lease: 5s\n  misfireGrace: 2s\njobs:\n"
                    + "  - { name: report, cron: \"* * * * * *\", class: " + ReportJob.class.getName() + " }\n");
            try (ConfigurableApplicationContext ctx = start(App.class, "lockstep.config=file:" + file, "lockstep.worker.id=redlock-app")) {
                await().atMost(Duration.ofSeconds(20)).until(() -> RUNS.keySet().stream().anyMatch(k -> k.startsWith("report@")));
                var gauges = ctx.getBean(MeterRegistry.class).find("lockstep.redlock.master").gauges();
                assertThat(gauges).hasSize(3).allSatisfy(g -> assertThat(g.value()).as(g.getId().getTag("master")).isEqualTo(1.0));
            }
        } finally {
            masters.forEach(LocalRedisServer::close);
        }
    }

    /** A JobCalendar bean (even seconds) that an annotated job skips on. */
    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class CalendarApp {

        static final List<java.time.Instant> SLOTS = new CopyOnWriteArrayList<>();

        @Bean
        io.lockstep.scheduler.JobCalendar evenSeconds() {
            return new io.lockstep.scheduler.JobCalendar() {
                public String name() {
                    return "even-seconds";
                }

                public boolean contains(java.time.Instant instant) {
                    return instant.getEpochSecond() % 2 == 0;
                }
            };
        }

        @Bean
        Odd odd() {
            return new Odd();
        }
    }

    static class Odd {

        @LockstepJob(name = "odd", cron = "* * * * * *", lease = "5s", misfireGrace = "2s", skipOn = {"even-seconds"})
        void work(JobContext ctx) {
            CalendarApp.SLOTS.add(ctx.scheduledTime());
        }
    }

    @Test
    void aJobCalendarBeanExcludesTheSlotsOfAJobThatSkipsOnIt() throws Exception {
        CalendarApp.SLOTS.clear();
        try (ConfigurableApplicationContext ctx = start(CalendarApp.class, "lockstep.redis.uri=" + redis.uri(),
                "lockstep.redis.key-prefix=calendar-" + System.nanoTime(), "lockstep.worker.id=cal")) {
            await().atMost(Duration.ofSeconds(15)).until(() -> CalendarApp.SLOTS.size() >= 3);
            assertThat(CalendarApp.SLOTS).allSatisfy(slot -> assertThat(slot.getEpochSecond() % 2).as("%s", slot).isEqualTo(1));
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class BadCronApp {

        @Bean
        BadCron badCron() {
            return new BadCron();
        }
    }

    static class BadCron {

        @LockstepJob(name = "broken", cron = "61 * * * * *")
        void broken() {
        }
    }

    @Test
    void eachMistakeStopsTheApplicationAtStartupWithOneLocatedLine() throws Exception {
        assertThatThrownBy(() -> start(BadCronApp.class, "lockstep.redis.uri=" + redis.uri()))
                .rootCause().isInstanceOf(ConfigException.class)
                .hasMessageContaining("@LockstepJob on " + BadCron.class.getName() + ".broken()").hasMessageContaining("cron").hasMessageNotContaining("\n");

        Path noBean = yaml("  - { name: orphan, cron: \"* * * * * *\", class: " + Unregistered.class.getName() + " }\n");
        assertThatThrownBy(() -> start(SlowApp.class, "lockstep.config=file:" + noBean))
                .rootCause().isInstanceOf(LockstepException.class)
                .hasMessageContaining("job orphan").hasMessageContaining("no bean of class " + Unregistered.class.getName()).hasMessageNotContaining("\n");

        assertThatThrownBy(() -> start(SlowApp.class, "lockstep.config=file:" + noBean, "lockstep.redis.uri=" + redis.uri()))
                .rootCause().isInstanceOf(ConfigException.class).hasMessageContaining("not both").hasMessageNotContaining("\n");

        Path badLine = yaml("  - { name: tick2, cron: \"* * * * * *\", class: " + ReportJob.class.getName() + ", overlap: sometimes }\n");
        assertThatThrownBy(() -> start(SlowApp.class, "lockstep.config=file:" + badLine))
                .rootCause().isInstanceOf(ConfigException.class).hasMessageContaining(badLine.toString() + ":").hasMessageContaining("overlap").hasMessageNotContaining("\n");

        // F2 of the 2026-12-04 trial: Lockstep runs on the Jedis 6 and 7 that Boot 3.5 and 4.0 pin (GeneratedBootAppIT
        // runs such applications); an older line, with neither client class Lockstep builds, fails at startup in one
        // line naming the property to set. A class loader without them stands for it.
        ClassLoader jedisTooOld = new ClassLoader(getClass().getClassLoader()) {
            @Override
            protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
                if (java.util.Arrays.asList(JedisVersion.CLIENT_CLASSES).contains(name)) {
                    throw new ClassNotFoundException(name);
                }
                return super.loadClass(name, resolve);
            }
        };
        assertThat(JedisVersion.problem(getClass().getClassLoader())).isEmpty();
        assertThat(JedisVersion.problem("6.0.0")).isEmpty();
        assertThat(JedisVersion.problem("7.0.0")).isEmpty();
        assertThat(JedisVersion.problem("5.2.0")).get(org.assertj.core.api.InstanceOfAssertFactories.STRING)
                .contains("Jedis 5.2.0").contains("set the property jedis.version to " + JedisVersion.ADVISED);
        assertThatThrownBy(() -> new SpringApplicationBuilder(SlowApp.class).resourceLoader(new org.springframework.core.io.DefaultResourceLoader(jedisTooOld))
                .web(WebApplicationType.NONE).properties("lockstep.redis.uri=" + redis.uri()).run())
                .rootCause().isInstanceOf(LockstepException.class).hasMessageContaining("Lockstep runs on Jedis 6, 7 and 8")
                .hasMessageContaining("set the property jedis.version to " + JedisVersion.ADVISED).hasMessageNotContaining("\n");

        try (ConfigurableApplicationContext off = start(SlowApp.class, "lockstep.redis.uri=" + redis.uri(), "lockstep.enabled=false")) {
            assertThat(off.getBeansOfType(Scheduler.class)).isEmpty();
            assertThat(off.getBeansOfType(RedisLockProvider.class)).isEmpty();
        }
        assertThat(RUNS).as("nothing ran").isEmpty();
    }
}
