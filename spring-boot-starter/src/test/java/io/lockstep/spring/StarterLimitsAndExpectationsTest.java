package io.lockstep.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.sun.net.httpserver.HttpServer;
import io.lockstep.scheduler.JobDefinition;
import io.lockstep.scheduler.config.ConfigException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;

/**
 * Issue 36's limits and expectations from a Spring Boot application: {@code @LockstepJob(uses,
 * expectSucceededWithin, expectSuccessEvery)} with {@code lockstep.limits.*} and
 * {@code lockstep.alerts.*}, or with the YAML's {@code limits:}; the same checks as the YAML's keys,
 * each mistake one located line.
 */
class StarterLimitsAndExpectationsTest {

    @RegisterExtension
    static final StarterRedis redis = new StarterRedis();

    @TempDir
    Path dir;

    static final AtomicInteger RUNNING = new AtomicInteger();
    static final AtomicInteger MOST_AT_ONCE = new AtomicInteger();
    static final AtomicInteger RUNS = new AtomicInteger();

    @BeforeEach
    void clear() {
        RUNNING.set(0);
        MOST_AT_ONCE.set(0);
        RUNS.set(0);
    }

    /** Two per-second jobs of 400 ms that share a limit of 1, and one that always fails with an expectation. */
    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class App {

        @Bean
        SharedDb sharedDb() {
            return new SharedDb();
        }
    }

    static class SharedDb {

        @LockstepJob(name = "db-a", cron = "* * * * * *", uses = {"${db.limit:db}"}, lease = "5s", misfireGrace = "3s")
        void a() throws InterruptedException {
            hold();
        }

        @LockstepJob(name = "db-b", cron = "* * * * * *", uses = {"db"}, lease = "5s", misfireGrace = "3s")
        void b() throws InterruptedException {
            hold();
        }

        @LockstepJob(name = "failing", cron = "* * * * * *", expectSucceededWithin = "1s", lease = "5s", misfireGrace = "2s")
        void failing() {
            throw new IllegalStateException("made to fail");
        }

        /** The run's own work: 400 ms, counting how many runs of the limit are inside it at once. */
        private static void hold() throws InterruptedException {
            int now = RUNNING.incrementAndGet();
            MOST_AT_ONCE.accumulateAndGet(now, Math::max);
            try {
                Thread.sleep(400);
            } finally {
                RUNNING.decrementAndGet();
                RUNS.incrementAndGet();
            }
        }
    }

    private static ConfigurableApplicationContext start(Class<?> app, String... properties) {
        return new SpringApplicationBuilder(app).web(WebApplicationType.NONE).properties(properties).run();
    }

    @Test
    void annotatedJobsShareALimitFromThePropertiesAndABreachReachesTheirWebhook() throws Exception {
        List<String> posted = new CopyOnWriteArrayList<>();
        HttpServer hook = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        hook.createContext("/hook", exchange -> {
            posted.add(new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
            exchange.sendResponseHeaders(204, -1);
            exchange.close();
        });
        hook.start();
        try (ConfigurableApplicationContext ctx = start(App.class, "lockstep.redis.uri=" + redis.uri(),
                "lockstep.redis.key-prefix=limits-" + System.nanoTime(), "lockstep.worker.id=one", "lockstep.worker.threads=4",
                "lockstep.limits.db=1", "lockstep.alerts.webhooks[0]=http://127.0.0.1:" + hook.getAddress().getPort() + "/hook",
                "lockstep.alerts.retries=0", "lockstep.alerts.timeout=2s")) {
            Map<String, JobDefinition> jobs = jobs(ctx);
            assertThat(jobs.get("db-a").uses()).containsExactly(Map.entry("db", 1));
            assertThat(jobs.get("failing").expect().succeededWithin()).isEqualTo(Duration.ofSeconds(1));
            // Both jobs fall due each second on 4 threads: without the limit they would run side by side.
            await().atMost(Duration.ofSeconds(20)).until(() -> RUNS.get() >= 6
                    && posted.stream().anyMatch(p -> p.contains("\"expectation_breached\"") && p.contains("\"failing\"")));
            assertThat(MOST_AT_ONCE.get()).as("runs of the limit db (1) at once").isEqualTo(1);
            assertThat(posted).filteredOn(p -> p.contains("\"expectation_breached\""))
                    .allSatisfy(p -> assertThat(p).contains("\"job\":\"failing\"", "\"expectation\":\"succeededWithin\""));
        } finally {
            hook.stop(0);
        }
    }

    /** A job of the limit that does not fall due while the test runs: the YAML's limit, read, not run. */
    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class NightlyApp {

        @Bean
        Nightly nightly() {
            return new Nightly();
        }
    }

    static class Nightly {

        @LockstepJob(name = "nightly", cron = "0 0 2 1 1 *", uses = {"db"})
        void report() {
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class UnknownLimitApp {

        @Bean
        UnknownLimit unknownLimit() {
            return new UnknownLimit();
        }
    }

    static class UnknownLimit {

        @LockstepJob(name = "report", cron = "0 0 2 * * *", uses = {"dbb"})
        void report() {
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class BadExpectationApp {

        @Bean
        BadExpectation badExpectation() {
            return new BadExpectation();
        }
    }

    static class BadExpectation {

        @LockstepJob(name = "report", cron = "0 0 2 * * *", expectSuccessEvery = "soon")
        void report() {
        }
    }

    @Test
    void theYamlsLimitsServeAnnotatedJobsAndEachMistakeIsOneLocatedLine() throws Exception {
        Path file = dir.resolve("lockstep.yaml");
        Files.writeString(file, "redis:\n  uri: " + redis.uri() + "\n  keyPrefix: limits-file-" + System.nanoTime() + "\n"
                + "limits:\n  db: 2\n");
        try (ConfigurableApplicationContext ctx = start(NightlyApp.class, "lockstep.config=file:" + file, "lockstep.worker.id=file")) {
            assertThat(jobs(ctx).get("nightly").uses()).as("the file's limit").containsExactly(Map.entry("db", 2));
        }

        assertThatThrownBy(() -> start(UnknownLimitApp.class, "lockstep.redis.uri=" + redis.uri(), "lockstep.limits.db=1"))
                .rootCause().isInstanceOf(ConfigException.class)
                .hasMessageContaining("@LockstepJob on " + UnknownLimit.class.getName() + ".report()")
                .hasMessageContaining("uses").hasMessageContaining("dbb").hasMessageContaining("db").hasMessageNotContaining("\n");
        assertThatThrownBy(() -> start(BadExpectationApp.class, "lockstep.redis.uri=" + redis.uri()))
                .rootCause().isInstanceOf(ConfigException.class)
                .hasMessageContaining("@LockstepJob on " + BadExpectation.class.getName() + ".report()")
                .hasMessageContaining("expect.successEvery").hasMessageNotContaining("\n");
        assertThatThrownBy(() -> start(NightlyApp.class, "lockstep.config=file:" + file, "lockstep.limits.db=1"))
                .rootCause().isInstanceOf(ConfigException.class)
                .hasMessageContaining("lockstep.limits").hasMessageContaining(file.toString()).hasMessageNotContaining("\n");
        assertThatThrownBy(() -> start(NightlyApp.class, "lockstep.config=file:" + file, "lockstep.alerts.webhooks[0]=http://127.0.0.1:1/x"))
                .rootCause().isInstanceOf(ConfigException.class)
                .hasMessageContaining("lockstep.alerts").hasMessageNotContaining("127.0.0.1:1").hasMessageNotContaining("\n");
    }

    private static Map<String, JobDefinition> jobs(ConfigurableApplicationContext ctx) {
        return ctx.getBean(LockstepAutoConfiguration.Setup.class).config().jobs().stream()
                .collect(java.util.stream.Collectors.toMap(JobDefinition::name, j -> j));
    }
}
