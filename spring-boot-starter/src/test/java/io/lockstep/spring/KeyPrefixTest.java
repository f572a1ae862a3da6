package io.lockstep.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.lockstep.redis.RedisLockProvider;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * F6 of the 2026-12-04 trial: two applications on one Redis stay apart by default. An application
 * configured by properties keys its jobs under its {@code spring.application.name}; one set
 * explicitly wins; one configured by the workers' YAML keeps the YAML's prefix, which the worker
 * JARs reading the same file use too.
 */
class KeyPrefixTest {

    @RegisterExtension
    static final StarterRedis redis = new StarterRedis();

    @TempDir
    Path dir;

    private static ConfigurableApplicationContext start(String... properties) {
        return new SpringApplicationBuilder(LockstepStarterTest.App.class).web(WebApplicationType.NONE).properties(properties).run();
    }

    private static String prefix(ConfigurableApplicationContext ctx) {
        return ctx.getBean(LockstepAutoConfiguration.Setup.class).config().redis().keyPrefix();
    }

    @Test
    void eachApplicationKeysItsJobsUnderItsOwnNameUnlessToldOtherwise() throws Exception {
        try (ConfigurableApplicationContext billing = start("lockstep.redis.uri=" + redis.uri(), "spring.application.name=billing {eu}",
                "lockstep.worker.id=billing-1");
                ConfigurableApplicationContext reports = start("lockstep.redis.uri=" + redis.uri(), "spring.application.name=reports",
                        "lockstep.worker.id=reports-1")) {
            assertThat(prefix(billing)).isEqualTo("billing--eu-");
            assertThat(prefix(reports)).isEqualTo("reports");
            try (RedisLockProvider underReports = RedisLockProvider.builder().uri(redis.uri()).keyPrefix("reports").build()) {
                assertThat(underReports.liveWorkers(java.time.Duration.ofSeconds(30))).extracting(w -> w.id())
                        .as("only this application's workers in its list").containsExactly("reports-1");
            }
        }
        try (ConfigurableApplicationContext named = start("lockstep.redis.uri=" + redis.uri(), "spring.application.name=billing",
                "lockstep.redis.key-prefix=shared")) {
            assertThat(prefix(named)).as("set explicitly").isEqualTo("shared");
        }
        try (ConfigurableApplicationContext unnamed = start("lockstep.redis.uri=" + redis.uri())) {
            assertThat(prefix(unnamed)).as("no name: the worker's default").isEqualTo("lockstep");
        }
        Path yaml = dir.resolve("lockstep.yaml");
        Files.writeString(yaml, "redis:\n  uri: " + redis.uri() + "\njobs: []\n");
        try (ConfigurableApplicationContext fromYaml = start("lockstep.config=file:" + yaml, "spring.application.name=billing")) {
            assertThat(prefix(fromYaml)).as("the workers' YAML decides, as for the worker JARs that read it").isEqualTo("lockstep");
        }
    }
}
