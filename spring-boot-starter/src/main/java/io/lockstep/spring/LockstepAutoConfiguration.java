package io.lockstep.spring;

import io.lockstep.redis.RedisLockProvider;
import io.lockstep.redis.RedisLocks;
import io.lockstep.scheduler.Scheduler;
import io.lockstep.scheduler.config.LockstepConfig;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.AnyNestedCondition;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import redis.clients.jedis.UnifiedJedis;

/**
 * Lockstep in a Spring Boot application (3.5 or 4.0). On when a Redis is configured for it
 * ({@code lockstep.config}, {@code lockstep.redis.uri}, or a Jedis {@code UnifiedJedis} bean of the
 * application's), off with {@code lockstep.enabled=false}. It gives:
 * <ul>
 *   <li>{@link RedisLockProvider} (on the application's Jedis client when Lockstep has no Redis of
 *       its own) and, with at least one job, {@link Scheduler}, started after the context is
 *       refreshed and drained first at shutdown ({@link LockstepLifecycle});
 *   <li>jobs as beans ({@link SpringJobFactory}, {@link LockstepJob}), checked at startup as the
 *       worker checks its file ({@link EffectiveConfig});
 *   <li>the application's {@code MeterRegistry} and {@code OpenTelemetry}, a health indicator
 *       ({@code lockstep}), the read-only {@code lockstep} actuator endpoint;
 *   <li>{@link RedisLocks} on the application's Jedis client.
 * </ul>
 */
@AutoConfiguration
@ConditionalOnProperty(prefix = "lockstep", name = "enabled", havingValue = "true", matchIfMissing = true)
@Conditional(LockstepAutoConfiguration.RedisConfigured.class)
@EnableConfigurationProperties(LockstepProperties.class)
public class LockstepAutoConfiguration {

    /** A Redis is configured for Lockstep: its YAML, its URI, or the application's Jedis client. */
    static final class RedisConfigured extends AnyNestedCondition {

        RedisConfigured() {
            super(ConfigurationPhase.REGISTER_BEAN);
        }

        @ConditionalOnProperty(prefix = "lockstep", name = "config")
        static final class File {
        }

        @ConditionalOnProperty(prefix = "lockstep.redis", name = "uri")
        static final class Uri {
        }

        @ConditionalOnBean(UnifiedJedis.class)
        static final class Jedis {
        }
    }

    /** The effective config and the annotated methods it came from. */
    record Setup(LockstepConfig config, AnnotatedJobs annotated) {
    }

    @Bean
    @ConditionalOnMissingBean
    Setup lockstepSetup(LockstepProperties properties, ConfigurableListableBeanFactory beans,
            org.springframework.core.env.Environment environment,
            org.springframework.beans.factory.ObjectProvider<io.lockstep.scheduler.JobCalendar> calendars) {
        AnnotatedJobs annotated = AnnotatedJobs.find(beans);
        ClassLoader classes = beans.getBeanClassLoader() != null ? beans.getBeanClassLoader() : getClass().getClassLoader();
        JedisVersion.check(classes); // Boot pins an older Jedis: one line naming the property, not a NoClassDefFoundError later
        // The application's JobCalendar beans, by name, for skipOn and onlyOn (as ServiceLoader's for the worker).
        return new Setup(EffectiveConfig.load(properties, annotated, classes, defaultShutdownTimeout(shutdownPhase(environment)),
                environment.getProperty("spring.application.name"), calendars.orderedStream().toList()), annotated);
    }

    /** Boot's {@code spring.lifecycle.timeout-per-shutdown-phase} (its default, 30 s, when unset). */
    static java.time.Duration shutdownPhase(org.springframework.core.env.Environment environment) {
        return environment.getProperty("spring.lifecycle.timeout-per-shutdown-phase", java.time.Duration.class, java.time.Duration.ofSeconds(30));
    }

    /**
     * The starter's {@code worker.shutdownTimeout} when the application sets none: the worker's
     * default (30 s), but short enough that the drain (the timeout, then an interrupt and 5 s) fits
     * in Boot's shutdown phase, so a default Boot application stops within it and is not warned
     * ({@code shutdown_phase_too_short}; F10 of the 2026-12-04 trial): 25 s under Boot's default
     * 30 s phase. One the application sets is kept, and warned about if it does not fit.
     */
    static java.time.Duration defaultShutdownTimeout(java.time.Duration phase) {
        java.time.Duration fits = phase.minusSeconds(5);
        java.time.Duration floor = java.time.Duration.ofSeconds(1);
        java.time.Duration worker = io.lockstep.scheduler.config.WorkerSettings.DEFAULT_SHUTDOWN_TIMEOUT;
        return fits.compareTo(worker) > 0 ? worker : fits.compareTo(floor) < 0 ? floor : fits;
    }

    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    RedisLockProvider lockstepLockProvider(Setup setup, LockstepProperties properties, ObjectProvider<UnifiedJedis> jedis) {
        UnifiedJedis application = jedis.getIfUnique();
        if (properties.getConfig() == null && !properties.getRedis().isSet() && application != null) {
            return RedisLockProvider.builder().client(application, "the application's Jedis client")
                    .keyPrefix(setup.config().redis().keyPrefix()).historyKeep(setup.config().historyKeep()).build();
        }
        return RedisLockProvider.builder().settings(setup.config().redis()).historyKeep(setup.config().historyKeep()).build();
    }

    @Bean(destroyMethod = "close")
    @ConditionalOnSingleCandidate(UnifiedJedis.class)
    @ConditionalOnMissingBean
    RedisLocks lockstepRedisLocks(UnifiedJedis jedis) {
        return RedisLocks.on(jedis);
    }

    /** The scheduler, when the application declares at least one job. */
    @Configuration(proxyBeanMethods = false)
    @Conditional(JobsDeclared.class)
    static class SchedulerConfiguration {

        @Bean
        @ConditionalOnMissingBean
        Scheduler lockstepScheduler(Setup setup, RedisLockProvider provider, ConfigurableListableBeanFactory beans,
                ObjectProvider<MeterRegistry> meters, ObjectProvider<LockstepSchedulerCustomizer> customizers,
                org.springframework.core.env.Environment environment) {
            LockstepConfig c = setup.config();
            java.time.Duration phase = shutdownPhase(environment);
            if (c.worker().shutdownTimeout().plusSeconds(5).compareTo(phase) > 0) {
                org.slf4j.LoggerFactory.getLogger("io.lockstep.events").atWarn().addKeyValue("event", "shutdown_phase_too_short")
                        .addKeyValue("shutdown_timeout_ms", c.worker().shutdownTimeout().toMillis())
                        .addKeyValue("phase_timeout_ms", phase.toMillis())
                        .log("spring.lifecycle.timeout-per-shutdown-phase is shorter than Lockstep's shutdownTimeout + 5 s: Boot "
                                + "reports the phase timed out while running jobs drain (the beans still wait for the drain)");
            }
            Scheduler.Builder builder = Scheduler.builder(provider)
                    .workerId(c.worker().id())
                    .threads(c.worker().threads())
                    .labels(c.worker().labels())
                    .shutdownTimeout(c.worker().shutdownTimeout())
                    .jobs(c.jobs())
                    .alerts(c.alerts())
                    .jobFactory(new SpringJobFactory(beans, "lockstepScheduler", setup.annotated()))
                    .closeJobs(false); // the jobs are beans: the context closes them, after the drain
            MeterRegistry registry = meters.getIfUnique();
            if (registry != null) {
                builder.meterRegistry(registry);
                provider.bindMetrics(registry); // on Redlock, lockstep.redlock.master per master (as the worker JAR)
            }
            customizers.orderedStream().forEach(c2 -> c2.customize(builder));
            return builder.build();
        }

        @Bean
        LockstepLifecycle lockstepLifecycle(Scheduler scheduler, LockstepProperties properties) {
            return new LockstepLifecycle(scheduler, properties.isFailFast());
        }

        @Bean
        @ConditionalOnClass(name = "org.springframework.boot.actuate.endpoint.annotation.Endpoint")
        @ConditionalOnMissingBean
        LockstepEndpoint lockstepEndpoint(Setup setup, RedisLockProvider provider, Scheduler scheduler, LockstepProperties properties) {
            return new LockstepEndpoint(setup.config(), provider, scheduler, properties.getEndpoint().getOperatorRole());
        }

        @Configuration(proxyBeanMethods = false)
        @ConditionalOnClass(name = "org.springframework.boot.actuate.health.HealthIndicator")
        static class Boot3Health {

            @Bean
            @ConditionalOnMissingBean(name = "lockstepHealthIndicator")
            Boot3HealthIndicator lockstepHealthIndicator(Scheduler scheduler, LockstepProperties properties) {
                return new Boot3HealthIndicator(scheduler, properties.getHealth().isStrict());
            }
        }

        @Configuration(proxyBeanMethods = false)
        @ConditionalOnClass(name = "org.springframework.boot.health.contributor.HealthIndicator")
        static class Boot4Health {

            @Bean
            @ConditionalOnMissingBean(name = "lockstepHealthIndicator")
            Boot4HealthIndicator lockstepHealthIndicator(Scheduler scheduler, LockstepProperties properties) {
                return new Boot4HealthIndicator(scheduler, properties.getHealth().isStrict());
            }
        }

        @Configuration(proxyBeanMethods = false)
        @ConditionalOnClass(name = "io.opentelemetry.api.OpenTelemetry")
        static class Tracing {

            @Bean
            LockstepTracing lockstepTracing(ObjectProvider<io.opentelemetry.api.OpenTelemetry> otel) {
                return new LockstepTracing(otel.getIfUnique());
            }
        }
    }
}
