package io.lockstep.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.lockstep.redis.LocalRedisServer;
import io.lockstep.scheduler.Scheduler;
import io.lockstep.scheduler.lock.LockException;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * F7 of the 2026-12-04 trial: a Boot application is not hostage to the scheduler's Redis. With
 * {@code lockstep.fail-fast=false} it starts while Redis is down and Lockstep claims once Redis
 * answers; the {@code lockstep} health indicator says UP with {@code claiming: false} meanwhile (so a
 * load balancer keeps the instance), OUT_OF_SERVICE only under {@code lockstep.health.strict=true}.
 * By default a Redis down at start still fails the start, nothing half-started.
 */
class StarterWithoutRedisTest {

    private static ConfigurableApplicationContext start(String... properties) {
        return new SpringApplicationBuilder(LockstepStarterTest.App.class).web(WebApplicationType.NONE)
                .properties(properties).run();
    }

    @SuppressWarnings("unchecked")
    private static java.util.Map<String, Object> details(ConfigurableApplicationContext ctx) throws Exception {
        Object indicator = ctx.getBean("lockstepHealthIndicator");
        Object health = indicator.getClass().getInterfaces()[0].getMethod("health").invoke(indicator);
        return (java.util.Map<String, Object>) health.getClass().getMethod("getDetails").invoke(health);
    }

    @Test
    void withFailFastOffTheApplicationStartsWithoutRedisAndClaimsOnceItAnswers() throws Exception {
        LockstepStarterTest.RUNS.clear();
        LocalRedisServer redis = LocalRedisServer.start();
        redis.kill(); // down before the application starts
        String prefix = "nofailfast-" + System.nanoTime();
        try (ConfigurableApplicationContext ctx = start("lockstep.redis.uri=" + redis.uri(), "lockstep.redis.key-prefix=" + prefix,
                "lockstep.redis.timeout=500ms", "lockstep.fail-fast=false", "lockstep.worker.id=patient");
                ConfigurableApplicationContext strict = start("lockstep.redis.uri=" + redis.uri(), "lockstep.redis.key-prefix=" + prefix,
                        "lockstep.redis.timeout=500ms", "lockstep.fail-fast=false", "lockstep.health.strict=true",
                        "lockstep.worker.id=strict")) {
            assertThat(ctx.isRunning()).as("the application started").isTrue();
            assertThat(LockstepStarterTest.healthOf(ctx)).as("not strict: the scheduler's Redis does not decide the application's health")
                    .isEqualTo("UP");
            assertThat(details(ctx)).containsEntry("claiming", false);
            assertThat(LockstepStarterTest.healthOf(strict)).isEqualTo("OUT_OF_SERVICE");
            assertThat(ctx.getBean(Scheduler.class).health().ready()).isFalse();
            assertThat(LockstepStarterTest.RUNS).as("nothing runs without its claim").isEmpty();

            redis.restart();
            await().atMost(Duration.ofSeconds(30)).until(() -> ctx.getBean(Scheduler.class).health().ready());
            await().atMost(Duration.ofSeconds(15)).until(() -> LockstepStarterTest.RUNS.keySet().stream().anyMatch(k -> k.startsWith("tick@")));
            assertThat(details(ctx)).containsEntry("claiming", true);
            await().atMost(Duration.ofSeconds(15)).until(() -> "UP".equals(LockstepStarterTest.healthOf(strict)));
            assertThat(LockstepStarterTest.RUNS.values()).as("each slot once across the two").allSatisfy(w -> assertThat(w).hasSize(1));
        } finally {
            redis.close();
        }
    }

    @Test
    void byDefaultARedisDownAtStartFailsTheStart() {
        LocalRedisServer redis = LocalRedisServer.start();
        redis.kill();
        try {
            assertThatThrownBy(() -> start("lockstep.redis.uri=" + redis.uri(), "lockstep.redis.timeout=500ms").close())
                    .satisfies(e -> assertThat(org.assertj.core.util.Throwables.getRootCause(e)).isNotNull())
                    .satisfies(e -> {
                        Throwable c = e;
                        while (c != null && !(c instanceof LockException)) {
                            c = c.getCause();
                        }
                        assertThat(c).as("a LockException in the cause chain of %s", e).isNotNull();
                    });
        } finally {
            redis.close();
        }
    }
}
