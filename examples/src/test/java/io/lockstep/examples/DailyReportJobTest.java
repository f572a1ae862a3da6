package io.lockstep.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.lockstep.scheduler.JobDefinition;
import io.lockstep.scheduler.Overlap;
import io.lockstep.scheduler.Scheduler;
import io.lockstep.scheduler.cron.CronSchedule;
import io.lockstep.scheduler.lock.InMemoryLockProvider;
import java.time.Duration;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.slf4j.event.KeyValuePair;

/** The daily report, scheduled every second here so that it runs now: it reads its typed params. */
class DailyReportJobTest {

    @Test
    void theReportGoesToTheRecipientsFromItsParamsOncePerSlot() {
        Logger logger = (Logger) LoggerFactory.getLogger(DailyReportJob.class);
        ListAppender<ILoggingEvent> sent = new ListAppender<>();
        sent.start();
        logger.addAppender(sent);
        JobDefinition report = new JobDefinition("daily-report", CronSchedule.of("* * * * * *", ZoneOffset.UTC),
                DailyReportJob.class.getName(), Map.of("recipients", List.of("ops@example.com", "cfo@example.com"),
                "title", "Numbers"), Duration.ofSeconds(5), Duration.ofSeconds(2), Overlap.SKIP, Duration.ZERO, true);
        InMemoryLockProvider store = InMemoryLockProvider.create();
        try (Scheduler a = Scheduler.builder(store).workerId("a").job(report).build();
             Scheduler b = Scheduler.builder(store).workerId("b").job(report).build()) {
            a.start();
            b.start();
            await().atMost(Duration.ofSeconds(10)).until(() -> reports(sent).size() >= 3);
        } finally {
            logger.detachAppender(sent);
        }
        List<Map<String, Object>> reports = reports(sent);
        assertThat(reports).allSatisfy(r -> assertThat(r)
                .containsEntry("recipients", List.of("ops@example.com", "cfo@example.com"))
                .containsEntry("title", "Numbers"));
        assertThat(reports.stream().map(r -> r.get("slot")).distinct()).hasSameSizeAs(reports);
    }

    /**
     * The reports logged so far. The scheduler's job threads append while the test reads: Logback's
     * appenders add under the appender's own lock, so the list is read under the same lock.
     */
    private static List<Map<String, Object>> reports(ListAppender<ILoggingEvent> sent) {
        synchronized (sent) {
            return sent.list.stream().map(DailyReportJobTest::fields).toList();
        }
    }

    private static Map<String, Object> fields(ILoggingEvent e) {
        Map<String, Object> map = new java.util.HashMap<>();
        for (KeyValuePair kv : e.getKeyValuePairs()) {
            map.put(kv.key, kv.value);
        }
        return map;
    }
}
