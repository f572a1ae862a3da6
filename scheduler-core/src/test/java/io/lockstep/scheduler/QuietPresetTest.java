package io.lockstep.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.joran.JoranConfigurator;
import io.lockstep.scheduler.lock.InMemoryLockProvider;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The quiet logging preset: the shipped config/logback.xml with {@code LOCKSTEP_LOG_DETAIL=WARN}
 * keeps INFO to each run's start and outcome. The claim race's detail is logged on its own logger,
 * which the preset silences and the default keeps.
 */
class QuietPresetTest {

    private static final Path SHIPPED = Path.of("../config/logback.xml");

    @RegisterExtension
    final SchedulerHarness harness = new SchedulerHarness();

    /** The shipped file, loaded into a context of its own with {@code detail} as LOCKSTEP_LOG_DETAIL (null: unset). */
    private static LoggerContext shipped(String detail) throws Exception {
        LoggerContext context = new LoggerContext();
        if (detail != null) {
            context.putProperty("LOCKSTEP_LOG_DETAIL", detail);
        }
        JoranConfigurator configurator = new JoranConfigurator();
        configurator.setContext(context);
        configurator.doConfigure(SHIPPED.toFile());
        return context;
    }

    @Test
    void theShippedConfigKeepsTheClaimDetailByDefaultAndThePresetTurnsItOff() throws Exception {
        LoggerContext byDefault = shipped(null);
        assertThat(byDefault.getLogger(Events.CLAIMS_LOGGER).getEffectiveLevel()).isEqualTo(Level.INFO);
        LoggerContext quiet = shipped("WARN");
        assertThat(quiet.getLogger(Events.CLAIMS_LOGGER).getEffectiveLevel()).isEqualTo(Level.WARN);
        assertThat(quiet.getLogger(Events.LOGGER).getEffectiveLevel()).isEqualTo(Level.INFO);
        byDefault.stop();
        quiet.stop();
    }

    @Test
    void withThePresetARunLogsItsStartAndItsOutcomeAtInfoAndNothingElse() throws Exception {
        LoggerContext quiet = shipped("WARN");
        JobDefinition job = new JobDefinition("quiet", io.lockstep.scheduler.cron.CronSchedule.of("* * * * * *", java.time.ZoneOffset.UTC),
                Job.class.getName(), Map.of(), Duration.ofSeconds(5), Duration.ofSeconds(2), Overlap.SKIP, Duration.ZERO, true);
        harness.start(Scheduler.builder(InMemoryLockProvider.create()).workerId("w").job(job).jobFactory(d -> ctx -> {}));
        await().atMost(Duration.ofSeconds(10)).until(() -> harness.events().named("slot_released").size() >= 2);
        List<Map<String, Object>> events = harness.events().all();
        String slot = (String) harness.events().named("slot_released").get(0).get("slot");
        List<Map<String, Object>> ofTheSlot = events.stream().filter(e -> slot.equals(e.get("slot"))).toList();
        assertThat(ofTheSlot).extracting(e -> e.get("event")).contains("slot_claimed", "job_started", "job_succeeded", "slot_released");
        // What the preset lets through at INFO, judged by the shipped config's levels per logger.
        Set<Object> kept = ofTheSlot.stream()
                .filter(e -> quiet.getLogger((String) e.get("logger")).getEffectiveLevel()
                        .isGreaterOrEqual(Level.INFO) && Level.toLevel((String) e.get("level")).isGreaterOrEqual(
                                quiet.getLogger((String) e.get("logger")).getEffectiveLevel()))
                .map(e -> e.get("event")).collect(Collectors.toSet());
        assertThat(kept).containsExactlyInAnyOrder("job_started", "job_succeeded");
        quiet.stop();
    }
}
