package io.lockstep.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lockstep.redis.LocalRedisServer;
import io.lockstep.scheduler.Scheduler;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The starter as an application's own test sees it: {@code @SpringBootTest} with the Redis URI
 * as a property and a {@link LockstepJob} method, nothing else.
 */
@SpringBootTest(classes = StarterSpringBootTest.App.class, properties = "lockstep.worker.id=boot-test")
@org.springframework.test.annotation.DirtiesContext // closed (drained) after this class, not at the JVM's exit
class StarterSpringBootTest {

    /** Stopped by its shutdown hook at the JVM's exit: after the context, whose stop still talks to it. */
    static final LocalRedisServer REDIS = LocalRedisServer.start();

    @org.springframework.boot.SpringBootConfiguration
    @org.springframework.boot.autoconfigure.EnableAutoConfiguration
    @org.springframework.context.annotation.Import(LockstepStarterTest.Reports.class)
    static class App {
    }

    @DynamicPropertySource
    static void redis(DynamicPropertyRegistry registry) {
        registry.add("lockstep.redis.uri", REDIS::uri);
        registry.add("lockstep.redis.key-prefix", () -> "boot-test");
    }

    @Autowired
    Scheduler scheduler;


    @Test
    void theAnnotatedJobRunsOnTheApplicationsScheduler() {
        assertThat(scheduler.workerId()).isEqualTo("boot-test");
        await().atMost(Duration.ofSeconds(10)).until(() -> LockstepStarterTest.RUNS.entrySet().stream()
                .anyMatch(e -> e.getKey().startsWith("tick@") && e.getValue().contains("boot-test")));
        assertThat(scheduler.health().ready()).isTrue();
    }
}
