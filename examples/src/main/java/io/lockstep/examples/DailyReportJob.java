package io.lockstep.examples;

import io.lockstep.scheduler.Job;
import io.lockstep.scheduler.JobContext;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The first use case Lockstep was built around: a daily report that must go out once per cluster, however many workers
 * run. Lockstep's claim makes sure exactly one worker gets here for each day's slot; the job only
 * builds and "sends" the report (here: logs it).
 *
 * <pre>{@code
 * - name: daily-report
 *   cron: "0 6 * * *"
 *   zone: Europe/Lisbon
 *   class: io.lockstep.examples.DailyReportJob
 *   params: { recipients: [ops@example.com], title: Daily numbers }
 * }</pre>
 */
public class DailyReportJob implements Job {

    private static final Logger LOG = LoggerFactory.getLogger(DailyReportJob.class);

    /** The job's {@code params}, bound by Jackson; an unknown key fails the run with a clear error. */
    public record Params(List<String> recipients, String title) {
        public Params {
            recipients = recipients == null ? List.of() : List.copyOf(recipients);
            title = title == null ? "Daily report" : title;
        }
    }

    @Override
    public Class<?> paramsType() {
        return Params.class; // so that validate reports a typo in params with its line
    }

    @Override
    public void execute(JobContext context) {
        Params params = context.params(Params.class);
        if (params.recipients().isEmpty()) {
            throw new IllegalArgumentException("params.recipients is empty: nobody to send the report to");
        }
        context.checkLease(); // about to produce a side effect: make sure the slot is still ours
        LOG.atInfo().addKeyValue("event", "report_sent").addKeyValue("worker", context.workerId())
                .addKeyValue("job", context.jobName()).addKeyValue("slot", context.scheduledTime().toString())
                .addKeyValue("fencing_token", context.fencingToken()).addKeyValue("recipients", params.recipients())
                .addKeyValue("title", params.title()).log("report sent");
    }
}
