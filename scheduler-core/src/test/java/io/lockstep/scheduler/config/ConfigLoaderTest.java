package io.lockstep.scheduler.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lockstep.scheduler.CatchUp;
import io.lockstep.scheduler.JobDefinition;
import io.lockstep.scheduler.Recover;
import io.lockstep.scheduler.Retry;
import io.lockstep.scheduler.Overlap;
import java.time.Duration;
import java.time.ZoneId;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ConfigLoaderTest {

    private static final ConfigLoader LOADER = ConfigLoader.defaults().checkingClasses(false)
            .withEnvironment(Map.of("REDIS_URI", "redis://:s3cret@redis.internal:6380", "WORKER", "w-7"));

    private static List<ConfigProblem> problems(String yaml) {
        try {
            LOADER.load("jobs.yaml", yaml);
        } catch (ConfigException e) {
            return e.problems();
        }
        throw new AssertionError("expected the config to be rejected");
    }

    @Test
    void defaultsApplyAndJobsOverrideThem() {
        LockstepConfig config = LOADER.load("jobs.yaml", """
                redis:
                  uri: ${REDIS_URI}
                worker:
                  id: ${WORKER:-}
                  threads: 3
                defaults:
                  zone: Europe/Lisbon
                  lease: 45s
                jobs:
                  - name: a
                    cron: "0 6 * * *"
                    class: x.A
                  - name: b.c-d_e
                    cron: "@hourly"
                    class: x.B
                    zone: UTC
                    lease: PT2M
                    misfireGrace: 1500ms
                    overlap: allow
                    timeout: 1h
                    enabled: false
                    params: { recipients: [ops@example.com], retries: 3, ratio: 0.5, dry: true }
                """);
        assertThat(((RedisSettings.Standalone) config.redis().endpoint()).uri()).isEqualTo("redis://:s3cret@redis.internal:6380");
        assertThat(config.redis().keyPrefix()).isEqualTo("lockstep");
        assertThat(config.redis().timeout()).isEqualTo(Duration.ofSeconds(2));
        assertThat(config.worker()).isEqualTo(new WorkerSettings("w-7", 3, Duration.ofSeconds(30)));

        JobDefinition a = config.jobs().get(0);
        assertThat(a.schedule().zone()).isEqualTo(ZoneId.of("Europe/Lisbon"));
        assertThat(a.lease()).isEqualTo(Duration.ofSeconds(45));
        assertThat(a.misfireGrace()).isEqualTo(Duration.ofSeconds(10));
        assertThat(a.overlap()).isEqualTo(Overlap.SKIP);
        assertThat(a.timeout()).isZero();
        assertThat(a.enabled()).isTrue();

        JobDefinition b = config.jobs().get(1);
        assertThat(b.schedule().zone()).isEqualTo(ZoneId.of("UTC"));
        assertThat(b.lease()).isEqualTo(Duration.ofMinutes(2));
        assertThat(b.misfireGrace()).isEqualTo(Duration.ofMillis(1500));
        assertThat(b.overlap()).isEqualTo(Overlap.ALLOW);
        assertThat(b.timeout()).isEqualTo(Duration.ofHours(1));
        assertThat(b.enabled()).isFalse();
        assertThat(b.params()).containsEntry("recipients", List.of("ops@example.com"))
                .containsEntry("retries", 3).containsEntry("ratio", 0.5).containsEntry("dry", true);
    }

    @Test
    void policiesForWhenThingsGoWrongHaveDefaultsAndInheritFromDefaults() {
        LockstepConfig config = LOADER.load("jobs.yaml", """
                defaults:
                  retry: { maxAttempts: 3, backoff: 2s }
                  recover: rerun
                jobs:
                  - name: a
                    cron: "@daily"
                    class: x.A
                  - name: b
                    cron: "@daily"
                    class: x.B
                    overlap: replace
                    retry: { maxAttempts: 5, maxBackoff: 1m }
                    recover: none
                    catchUp: latest
                    catchUpWindow: 6h
                """);
        JobDefinition a = config.jobs().get(0);
        assertThat(a.retry()).isEqualTo(new Retry(3, Duration.ofSeconds(2), Duration.ofSeconds(30)));
        assertThat(a.recover()).isEqualTo(Recover.RERUN);
        assertThat(a.catchUp()).isEqualTo(CatchUp.NONE);
        assertThat(a.catchUpWindow()).isEqualTo(Duration.ofHours(1));
        JobDefinition b = config.jobs().get(1);
        assertThat(b.overlap()).isEqualTo(Overlap.REPLACE);
        assertThat(b.retry()).isEqualTo(new Retry(5, Duration.ofSeconds(2), Duration.ofMinutes(1)));
        assertThat(b.recover()).isEqualTo(Recover.NONE);
        assertThat(b.catchUp()).isEqualTo(CatchUp.LATEST);
        assertThat(b.catchUpWindow()).isEqualTo(Duration.ofHours(6));
        assertThat(b.retry().delayAfter(1)).isEqualTo(Duration.ofSeconds(2));
        assertThat(b.retry().delayAfter(3)).isEqualTo(Duration.ofSeconds(8));
        assertThat(b.retry().delayAfter(9)).isEqualTo(Duration.ofMinutes(1));

        JobDefinition plain = LOADER.load("jobs.yaml", "jobs: [ { name: a, cron: \"@daily\", class: x.A } ]").jobs().get(0);
        assertThat(plain.retry()).isEqualTo(Retry.NONE);
        assertThat(plain.recover()).isEqualTo(Recover.NONE);
        assertThat(plain.catchUp()).isEqualTo(CatchUp.NONE);
    }

    @Test
    void cronTakesAListAndHAndJitterAreHashedFromTheNameOrTheSeed() {
        LockstepConfig config = LOADER.load("jobs.yaml", """
                defaults: { jitter: 5m }
                jobs:
                  - name: report
                    cron: ["0 0 9 * * MON-FRI", "0 0 12 * * SAT"]
                    class: x.A
                  - name: sync-a
                    cron: "H * * * *"
                    class: x.A
                    jitter: 0s
                  - name: sync-b
                    cron: "0 * * * *"
                    class: x.A
                    jitterSeed: sync-a
                """);
        Map<String, JobDefinition> jobs = new java.util.HashMap<>();
        config.jobs().forEach(j -> jobs.put(j.name(), j));
        var report = jobs.get("report").schedule();
        assertThat(report.expressions()).containsExactly("0 0 9 * * MON-FRI", "0 0 12 * * SAT");
        assertThat(report.jitter()).isEqualTo(Duration.ofMinutes(5));
        assertThat(report.offset()).isEqualTo(io.lockstep.scheduler.cron.CronSchedule.of(List.of("0 9 * * *"), ZoneId.of("UTC"), "x")
                .withJitter(Duration.ofMinutes(5), "report").offset()); // the name's hash, whatever the expressions
        var syncA = jobs.get("sync-a").schedule();
        assertThat(syncA.expanded()).isEqualTo(io.lockstep.scheduler.cron.CronSchedule.of(List.of("H * * * *"), ZoneId.of("UTC"), "sync-a").expanded());
        assertThat(syncA.offset()).isZero();
        assertThat(jobs.get("sync-b").schedule().offset()).as("the seed, not the name")
                .isEqualTo(io.lockstep.scheduler.cron.CronSchedule.of(List.of("0 * * * *"), ZoneId.of("UTC"), "sync-a")
                        .withJitter(Duration.ofMinutes(5), "sync-a").offset());
    }

    @Test
    void aBadScheduleIsOneLocatedProblemEach() {
        List<ConfigProblem> problems = problems("""
                defaults: { jitter: 2m }
                jobs:
                  - name: a
                    cron: []
                    class: x.A
                  - name: b
                    cron: "* * * * *"
                    class: x.A
                  - name: c
                    cron: "H(0-99) * * * *"
                    class: x.A
                    jitter: 0s
                  - name: d
                    cron: "0 * * * *"
                    class: x.A
                    jitter: 2h
                  - name: e
                    cron: "@hourly"
                    class: x.A
                    jitter: 300ms
                """);
        assertThat(problems).extracting(ConfigProblem::toString).containsExactly(
                "jobs.yaml:4: jobs[0].cron: is an empty list; give at least one cron expression",
                "jobs.yaml:7: jobs[1].cron: fires more often than defaults.jitter allows (set jitter: 0s on this job for none): "
                        + "a jitter of 2m is longer than the schedule's period of 1m (the shortest gap between two fires), "
                        + "so a slot would move past the next one",
                "jobs.yaml:10: jobs[2].cron: H(0-99) in the minute of \"H(0-99) * * * *\" must be a range within 0-59",
                "jobs.yaml:16: jobs[3].jitter: a jitter of 2h is longer than the schedule's period of 1h (the shortest gap "
                        + "between two fires), so a slot would move past the next one",
                "jobs.yaml:20: jobs[4].jitter: must be at least 1s (or 0s for none), but was 300ms");
    }

    @Test
    void calendarsAreNamedDaysAndWindowsThatJobsSkipOnOrRunOnlyOn(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws java.io.IOException {
        java.nio.file.Files.writeString(dir.resolve("holidays.ics"), "BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART;VALUE=DATE:20261225\n"
                + "DTEND;VALUE=DATE:20261226\nEND:VEVENT\nEND:VCALENDAR\n");
        java.nio.file.Files.writeString(dir.resolve("freeze.txt"), "# the year-end freeze\n2026-12-28..2026-12-31\n");
        io.lockstep.scheduler.JobCalendar payroll = new io.lockstep.scheduler.JobCalendar() {
            public String name() {
                return "payroll";
            }

            public boolean contains(java.time.Instant instant) {
                return false;
            }
        };
        LockstepConfig config = LOADER.withCalendars(List.of(payroll)).load(dir.resolve("jobs.yaml").toString(), """
                defaults: { zone: Europe/Lisbon }
                calendars:
                  holidays: { dates: ["2027-01-01"], file: holidays.ics }
                  freeze: { file: freeze.txt, zone: UTC }
                  office: { weekly: ["MON-FRI 09:00-17:00"] }
                jobs:
                  - name: report
                    cron: "@hourly"
                    class: x.A
                    skipOn: [holidays, freeze, payroll]
                    onlyOn: [office]
                """);
        var calendars = config.jobs().get(0).calendars();
        assertThat(calendars.skipOn()).extracting(io.lockstep.scheduler.JobCalendar::name).containsExactly("holidays", "freeze", "payroll");
        assertThat(calendars.excludes(java.time.Instant.parse("2026-12-25T10:00:00Z"), (c, e) -> { })).contains("skipOn holidays");
        assertThat(calendars.excludes(java.time.Instant.parse("2027-01-01T10:00:00Z"), (c, e) -> { })).contains("skipOn holidays");
        assertThat(calendars.excludes(java.time.Instant.parse("2026-12-29T10:00:00Z"), (c, e) -> { })).contains("skipOn freeze");
        assertThat(calendars.excludes(java.time.Instant.parse("2026-12-04T08:59:59Z"), (c, e) -> { })).contains("onlyOn office");
        assertThat(calendars.excludes(java.time.Instant.parse("2026-12-04T09:00:00Z"), (c, e) -> { })).isEmpty();
        assertThat(calendars.excludes(java.time.Instant.parse("2026-12-05T10:00:00Z"), (c, e) -> { })).as("a Saturday").contains("onlyOn office");
    }

    @Test
    void theConsolesUsersComeFromAFileOfNameRoleHashLinesAndABadLineIsOneLocatedProblem(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
            throws java.io.IOException {
        String bcrypt = "$2a$10$" + "a".repeat(53);
        String sha = "sha256:" + "0".repeat(64);
        java.nio.file.Files.writeString(dir.resolve("users.txt"), "# who may use the console\nalice:operator:" + bcrypt + "\n\nrobot:viewer:" + sha + "\n");
        java.nio.file.Files.writeString(dir.resolve("bad.txt"), "alice:operator:" + bcrypt + "\nbob:admin:" + bcrypt + "\n");
        String yaml = """
                worker:
                  http:
                    port: 8080
                    auth: { users: %s }
                jobs:
                  - { name: a, cron: "@hourly", class: x.A }
                """;
        LockstepConfig config = LOADER.load(dir.resolve("jobs.yaml").toString(), yaml.formatted("users.txt"));
        assertThat(config.worker().httpUsers()).extracting(HttpUser::name, HttpUser::role, HttpUser::token)
                .containsExactly(org.assertj.core.groups.Tuple.tuple("alice", "operator", false), org.assertj.core.groups.Tuple.tuple("robot", "viewer", true));
        assertThat(config.worker().toString()).as("no hash in a log line").doesNotContain(bcrypt).doesNotContain(sha);
        assertThat(LOADER.load(dir.resolve("jobs.yaml").toString(), yaml.formatted("users.txt").replace("    auth: { users: users.txt }\n", ""))
                .worker().httpUsers()).as("no auth: read-only").isEmpty();

        for (String[] c : List.of(new String[] {"bad.txt", "bad.txt: line 2: the role of bob must be viewer or operator, but was \"admin\""},
                new String[] {"none.txt", "none.txt: file not found"})) {
            assertThatThrownBy(() -> LOADER.load(dir.resolve("jobs.yaml").toString(), yaml.formatted(c[0])))
                    .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.problems()).extracting(ConfigProblem::toString)
                            .containsExactly(dir.resolve("jobs.yaml") + ":4: worker.http.auth.users: " + dir.resolve(c[0]).toString()
                                    .replace(c[0], "") + c[1]));
        }
        assertThatThrownBy(() -> HttpUser.parse("alice:operator:plaintext-password")).hasMessage("line 1: the hash of alice must be a "
                + "bcrypt hash ($2a$, $2b$ or $2y$, 60 characters) or sha256:<64 lowercase hex> of a bearer token (lockstep user prints one)")
                .hasMessageNotContaining("plaintext-password".substring(3));
        assertThatThrownBy(() -> HttpUser.parse("a:viewer:" + sha + "\na:operator:" + sha)).hasMessage("line 2: a is named twice");
        assertThatThrownBy(() -> HttpUser.parse("a:viewer:" + bcrypt + "\nb:operator:" + bcrypt.replace("$10$", "$12$")))
                .as("one cost for all: a wrong password's time must not tell names apart")
                .hasMessage("line 2: the bcrypt cost of b is 12, but line 1's is 10: every password of the file must use one cost "
                        + "(lockstep user hashes at 10)");
        assertThatThrownBy(() -> HttpUser.parse("a:viewer:" + bcrypt.replace("$10$", "$05$")))
                .hasMessage("line 1: the bcrypt cost of a must be 10 to 14, but was 5 (lockstep user hashes at 10)");
        assertThatThrownBy(() -> HttpUser.parse("ops@host:viewer:" + sha)).as("not a CLI operator's <user>@<host>")
                .hasMessage("line 1: the name must be 1 to 64 letters, digits or . _ -");
    }

    @Test
    void aBadCalendarOrAnUnknownOneIsOneLocatedProblemEach() {
        List<ConfigProblem> problems = problems("""
                calendars:
                  holidays: { dates: ["2026-02-30"] }
                  office: { weekly: ["MON-FRY 09:00-17:00"] }
                  empty: {}
                  missing: { file: no-such-file.txt }
                jobs:
                  - name: a
                    cron: "@hourly"
                    class: x.A
                    skipOn: [holidys]
                """);
        assertThat(problems).extracting(ConfigProblem::toString).containsExactly(
                "jobs.yaml:2: calendars.holidays.dates: invalid date \"2026-02-30\" (use YYYY-MM-DD, or FROM..TO for a range)",
                "jobs.yaml:3: calendars.office.weekly: unknown day \"FRY\" in \"MON-FRY 09:00-17:00\" (use MON TUE WED THU FRI SAT SUN)",
                "jobs.yaml:4: calendars.empty: is empty: give dates, a file or weekly windows",
                "jobs.yaml:5: calendars.missing.file: " + java.nio.file.Path.of("no-such-file.txt").toAbsolutePath() + ": file not found");
        // Checking classes (validate, run), an unknown name is a problem; without (the operator commands, audit), it may be an
        // application's calendar in the jobs JAR, named and not asked.
        List<ConfigProblem> strict = new java.util.ArrayList<>();
        try {
            ConfigLoader.defaults().load("jobs.yaml", """
                    calendars:
                      holidays: { dates: ["2026-12-25"] }
                    jobs:
                      - name: a
                        cron: "@hourly"
                        class: io.lockstep.scheduler.config.NoSuchClass
                        skipOn: [holidys]
                    """);
        } catch (ConfigException e) {
            strict.addAll(e.problems());
        }
        assertThat(strict).extracting(ConfigProblem::toString).contains("jobs.yaml:7: jobs[0].skipOn[0]: unknown calendar \"holidys\""
                + " (defined: holidays, or register a JobCalendar) (did you mean \"holidays\"?)");
    }

    @Test
    void expectationsAndAlertsAreReadAndEachBadOneIsOneLocatedProblemThatNeverEchoesAWebhook() {
        LockstepConfig config = LOADER.load("jobs.yaml", """
                alerts:
                  webhooks: ["https://hooks.example/T0/secret-token"]
                  timeout: 2s
                  retries: 1
                jobs:
                  - name: nightly
                    cron: "0 0 2 * * *"
                    class: x.A
                    expect: { succeededWithin: 15m, successEvery: 26h }
                  - name: plain
                    cron: "@hourly"
                    class: x.A
                """);
        assertThat(config.jobs().get(0).expect()).isEqualTo(new io.lockstep.scheduler.Expect(java.time.Duration.ofMinutes(15),
                java.time.Duration.ofHours(26)));
        assertThat(config.jobs().get(1).expect()).isEqualTo(io.lockstep.scheduler.Expect.NONE);
        assertThat(config.alerts().webhooks()).containsExactly(java.net.URI.create("https://hooks.example/T0/secret-token"));
        assertThat(config.alerts().timeout()).isEqualTo(java.time.Duration.ofSeconds(2));
        assertThat(config.alerts().retries()).isEqualTo(1);

        List<ConfigProblem> problems = problems("""
                alerts:
                  webhooks: ["ftp://hooks.example/secret-a", "https://hooks.example/secret b"]
                  timeout: 10m
                  retries: 11
                jobs:
                  - name: a
                    cron: "@hourly"
                    class: x.A
                    expect: { succeededWithin: 8d, successEvry: 1h }
                  - name: b
                    cron: "@hourly"
                    class: x.A
                    expect: { succeededWithin: soon, successEvery: 500ms }
                  - name: c
                    cron: "@hourly"
                    class: x.A
                    runOn: every-worker
                    expect: { successEvery: 2h }
                  - name: d
                    cron: "@hourly"
                    class: x.A
                    expect: {}
                """);
        assertThat(problems).extracting(ConfigProblem::toString).containsExactly(
                "jobs.yaml:2: alerts.webhooks[0]: must be an http:// or https:// URL with a host",
                "jobs.yaml:2: alerts.webhooks[1]: is not a URL (at index 28)",
                "jobs.yaml:3: alerts.timeout: must be between 100ms and 1m, but was 10m",
                "jobs.yaml:4: alerts.retries: must be between 0 and 10, but was 11",
                "jobs.yaml:9: jobs[0].expect.successEvry: unknown key \"successEvry\" (did you mean \"successEvery\"?)",
                "jobs.yaml:9: jobs[0].expect.succeededWithin: must be between 1s and 7d, but was 8d",
                "jobs.yaml:13: jobs[1].expect.succeededWithin: must be a duration like 250ms, 30s, 5m, 1h, 1d or PT30S, but was \"soon\"",
                "jobs.yaml:13: jobs[1].expect.successEvery: must be between 1s and 31d, but was 500ms",
                "jobs.yaml:18: jobs[2].expect: is not available on a job that runs on every worker",
                "jobs.yaml:22: jobs[3].expect: needs succeededWithin, successEvery or both (like succeededWithin: 15m)");
        assertThat(problems).extracting(ConfigProblem::toString).noneMatch(p -> p.contains("secret"));
        assertThat(problems("""
                alerts: https://hooks.example/T0/secret-token
                jobs:
                  - name: a
                    cron: "@hourly"
                    class: x.A
                """)).extracting(ConfigProblem::toString).containsExactly(
                "jobs.yaml:1: alerts: must be a mapping, like { webhooks: [https://hooks.example/...] }");
        assertThat(LOADER.load("jobs.yaml", """
                alerts: { webhooks: ["https://user:pw@hooks.example/T0/secret-token?key=secret-key"] }
                jobs:
                  - name: a
                    cron: "@hourly"
                    class: x.A
                """).toString()).as("a config printed names its webhooks by host").doesNotContain("secret").doesNotContain("pw")
                .contains("https://hooks.example");
        assertThat(problems("""
                history: { keep: 0 }
                jobs:
                  - name: a
                    cron: "@hourly"
                    class: x.A
                    expect: { successEvery: 2h }
                """)).extracting(ConfigProblem::toString).containsExactly(
                "jobs.yaml:6: jobs[0].expect: needs the jobs' history, but history.keep is 0: expectations are judged from it");
    }

    @Test
    void limitsAndUsesAreReadAndEachBadOneIsOneLocatedProblem() {
        LockstepConfig config = LOADER.load("jobs.yaml", """
                limits: { reporting-db: 2, mail: 5 }
                jobs:
                  - name: report
                    cron: "@hourly"
                    class: x.A
                    uses: [reporting-db, mail]
                  - name: plain
                    cron: "@hourly"
                    class: x.A
                """);
        assertThat(config.jobs().get(0).uses()).containsExactly(Map.entry("mail", 5), Map.entry("reporting-db", 2));
        assertThat(config.jobs().get(1).uses()).isEmpty();
        List<ConfigProblem> problems = problems("""
                limits: { reporting-db: 0, Mail: 2, ok: many }
                jobs:
                  - name: a
                    cron: "@hourly"
                    class: x.A
                    uses: [reportng-db, ok, ok]
                """);
        assertThat(problems).extracting(ConfigProblem::toString).containsExactly(
                "jobs.yaml:1: limits.reporting-db: must be between 1 and 1000 runs at once, but was 0",
                "jobs.yaml:1: limits.Mail: a limit's name must match [a-z0-9][a-z0-9._-]*, but was \"Mail\"",
                "jobs.yaml:1: limits.ok: must be a whole number, but was \"many\"",
                "jobs.yaml:6: jobs[0].uses[0]: unknown limit \"reportng-db\" (defined: none; add limits: { reportng-db: 2 } at the top)",
                "jobs.yaml:6: jobs[0].uses[1]: unknown limit \"ok\" (defined: none; add limits: { ok: 2 } at the top)",
                "jobs.yaml:6: jobs[0].uses[2]: unknown limit \"ok\" (defined: none; add limits: { ok: 2 } at the top)");
        assertThat(problems("""
                limits: { reporting-db: 2 }
                jobs:
                  - name: a
                    cron: "@hourly"
                    class: x.A
                    uses: [reportng-db]
                """)).extracting(ConfigProblem::toString).containsExactly(
                "jobs.yaml:6: jobs[0].uses[0]: unknown limit \"reportng-db\" (defined: reporting-db) (did you mean \"reporting-db\"?)");
    }

    @Test
    void runOnLabelsAndWorkerLabelsAreReadAndABadLabelIsOneLocatedProblem() {
        LockstepConfig config = LOADER.load("jobs.yaml", """
                worker: { labels: [gpu, region-eu] }
                jobs:
                  - name: render
                    cron: "@hourly"
                    class: x.A
                    runOn: { labels: [gpu] }
                """);
        assertThat(config.worker().labels()).containsExactlyInAnyOrder("gpu", "region-eu");
        assertThat(config.jobs().get(0).runOn().labels()).containsExactly("gpu");
        assertThat(config.jobs().get(0).runOn().allows(Set.of("gpu", "x"))).isTrue();
        assertThat(config.jobs().get(0).runOn().allows(Set.of("x"))).isFalse();
        List<ConfigProblem> problems = problems("""
                worker: { labels: [GPU] }
                jobs:
                  - name: a
                    cron: "@hourly"
                    class: x.A
                    runOn: every-node
                  - name: b
                    cron: "@hourly"
                    class: x.A
                    runOn: { labels: ["region eu"], tags: [x] }
                """);
        assertThat(problems).extracting(ConfigProblem::toString).containsExactly(
                "jobs.yaml:1: worker.labels[0]: a label must match [a-z0-9][a-z0-9._-]* (like gpu or region-eu), but was \"GPU\"",
                "jobs.yaml:6: jobs[0].runOn: must be every-worker or a mapping { labels: [...], everyWorker: true|false }, but was \"every-node\"",
                "jobs.yaml:10: jobs[1].runOn.tags: unknown key \"tags\" (allowed: everyWorker, labels)",
                "jobs.yaml:10: jobs[1].runOn.labels[0]: a label must match [a-z0-9][a-z0-9._-]* (like gpu or region-eu), but was \"region eu\"");
    }

    @Test
    void badPolicyValuesAreProblemsWithTheirLines() {
        List<ConfigProblem> problems = problems("""
                jobs:
                  - name: a
                    cron: "@daily"
                    class: x.A
                    recover: retry
                    catchUp: everything
                    catchUpWindow: 30d
                    retry: { maxAttempts: 0 }
                  - name: b
                    cron: "@daily"
                    class: x.A
                    retry: { maxAttemps: 2, backoff: 10s, maxBackoff: 1s }
                """);
        assertThat(problems).extracting(ConfigProblem::toString).containsExactly(
                "jobs.yaml:5: jobs[0].recover: must be none or rerun, but was \"retry\"",
                "jobs.yaml:6: jobs[0].catchUp: must be none, latest or all, but was \"everything\"",
                "jobs.yaml:7: jobs[0].catchUpWindow: must be at most 7d, but was 30d",
                "jobs.yaml:8: jobs[0].retry.maxAttempts: must be between 1 and 100, but was 0",
                "jobs.yaml:12: jobs[1].retry.maxAttemps: unknown key \"maxAttemps\" (did you mean \"maxAttempts\"?)",
                "jobs.yaml:12: jobs[1].retry.maxBackoff: must be at least backoff (10s), but was 1s");
    }

    @Test
    void theEffectiveConfigNeverShowsThePassword() {
        LockstepConfig config = LOADER.load("jobs.yaml", """
                redis: { uri: "${REDIS_URI}", password: hunter2 }
                jobs: [ { name: a, cron: "@daily", class: x.A } ]
                """);
        assertThat(config.redis().toString()).doesNotContain("s3cret").doesNotContain("hunter2");
        assertThat(config.redis().describe()).isEqualTo("redis://redis.internal:6380");
    }

    @Test
    void everyProblemIsCollectedWithItsLineAndPath() {
        List<ConfigProblem> problems = problems("""
                worker:
                  threds: 4
                jobs:
                  - name: a
                    cron: "not a cron"
                    class: x.A
                  - name: a
                    cron: "@daily"
                    class: x.A
                    lease: 200ms
                """);
        assertThat(problems).extracting(ConfigProblem::toString).containsExactly(
                "jobs.yaml:2: worker.threds: unknown key \"threds\" (did you mean \"threads\"?)",
                "jobs.yaml:5: jobs[0].cron: cron expression must have 5 or 6 fields or be a macro, but was \"not a cron\" (3 fields)",
                "jobs.yaml:7: jobs[1].name: duplicate job name \"a\" (first at line 4)",
                "jobs.yaml:10: jobs[1].lease: must be at least 1s, but was 200ms");
    }

    /** A job class that counts its constructions. */
    public static final class Counted implements io.lockstep.scheduler.Job {
        static final java.util.concurrent.atomic.AtomicInteger BUILT = new java.util.concurrent.atomic.AtomicInteger();

        public record Params(int copies) {}

        public Counted() {
            BUILT.incrementAndGet();
        }

        @Override
        public void execute(io.lockstep.scheduler.JobContext context) {}

        @Override
        public Class<?> paramsType() {
            return Params.class;
        }
    }

    @Test
    void loadingRunsEachJobsConstructorOnceAndNoneWhenAFactoryBuildsThem() throws Exception {
        String yaml = "jobs: [ { name: a, cron: \"@daily\", class: " + Counted.class.getName() + ", params: { copies: 2 } } ]\n";
        int before = Counted.BUILT.get();
        ConfigLoader.defaults().load("jobs.yaml", yaml);
        assertThat(Counted.BUILT.get() - before).as("constructions to check the class and its params").isEqualTo(1);
        ConfigLoader.defaults().builtByReflection(false).load("jobs.yaml", yaml);
        assertThat(Counted.BUILT.get() - before).as("an application's factory builds the jobs: the loader builds none").isEqualTo(1);
    }

    @Test
    void pausedInTheYamlPointsToEnabledFalseAndToThePauseCommand() {
        List<ConfigProblem> problems = problems("""
                jobs:
                  - name: a
                    cron: "@daily"
                    class: x.A
                    paused: true
                """);
        assertThat(problems).extracting(ConfigProblem::toString).containsExactly(
                "jobs.yaml:5: jobs[0].paused: unknown key \"paused\" (a job that must not run: \"enabled: false\"; to stop it for a "
                        + "while without a deploy: \"lockstep pause --job NAME\", then \"lockstep resume\")");
    }

    @Test
    void theStartCheckProbeJobNameIsReserved() {
        // Every worker claims, marks and fences a probe slot of this job at start (StartCheck in
        // scheduler-redis): a real job of this name would have its marks moved by every start.
        assertThat(problems("""
                jobs:
                  - name: a
                    cron: "@daily"
                    class: x.A
                  - name: lockstep-preflight
                    cron: "@daily"
                    class: x.A
                """)).extracting(ConfigProblem::toString).containsExactly(
                "jobs.yaml:5: jobs[1].name: \"lockstep-preflight\" is reserved: every worker claims a probe slot of it "
                        + "at start; choose another name");
        assertThat(JobDefinition.PREFLIGHT_NAME).isEqualTo("lockstep-preflight");
    }

    @Test
    void anUnsetVariableWithoutDefaultIsAProblem() {
        assertThat(problems("""
                redis: { uri: "${NOPE}" }
                jobs: [ { name: a, cron: "@daily", class: x.A } ]
                """)).extracting(ConfigProblem::toString).containsExactly(
                "jobs.yaml:1: redis.uri: environment variable NOPE is not set (write ${NOPE:-default} to give a default)");
    }

    @Test
    void invalidYamlIsOneProblemWithItsLine() {
        assertThatThrownBy(() -> LOADER.load("jobs.yaml", "jobs:\n  - name: a\n   cron: [\n"))
                .isInstanceOf(ConfigException.class)
                .hasMessageStartingWith("jobs.yaml:")
                .hasMessageContaining("invalid YAML");
    }

    @Test
    void durationsReadEveryDocumentedForm() {
        assertThat(ConfigLoader.parseDuration("250ms")).contains(Duration.ofMillis(250));
        assertThat(ConfigLoader.parseDuration("30s")).contains(Duration.ofSeconds(30));
        assertThat(ConfigLoader.parseDuration("5m")).contains(Duration.ofMinutes(5));
        assertThat(ConfigLoader.parseDuration("1h")).contains(Duration.ofHours(1));
        assertThat(ConfigLoader.parseDuration("1d")).contains(Duration.ofDays(1));
        assertThat(ConfigLoader.parseDuration("PT30S")).contains(Duration.ofSeconds(30));
        assertThat(ConfigLoader.parseDuration("30 seconds")).isEmpty();
        assertThat(ConfigLoader.parseDuration("-5s")).isEmpty();
    }

    @Test
    void aCronThatCanNeverFireIsAProblem() {
        assertThat(problems("""
                jobs:
                  - name: never
                    cron: "0 0 30 2 *"
                    class: x.A
                """)).extracting(ConfigProblem::toString).containsExactly(
                "jobs.yaml:3: jobs[0].cron: never fires: no date matches \"0 0 30 2 *\" (for example a 30th of February)");
    }

    @Test
    void aLeaseShorterThanTwiceTheRedisTimeoutIsAProblem() {
        assertThat(problems("""
                redis: { uri: "redis://127.0.0.1:6379", timeout: 2s }
                jobs:
                  - name: short
                    cron: "@daily"
                    class: x.A
                    lease: 3s
                  - name: inherits
                    cron: "@daily"
                    class: x.A
                """)).extracting(ConfigProblem::toString).containsExactly(
                "jobs.yaml:6: jobs[0].lease: must be at least twice redis.timeout (2s) so that a renewal that times out "
                        + "still ends before the lease does, but was 3s");
    }

    @Test
    void sentinelClusterAndTlsAreReadWithTheirFiles(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        java.nio.file.Files.writeString(dir.resolve("ca.pem"), "x");
        LockstepConfig sentinel = LOADER.load("jobs.yaml", """
                redis:
                  sentinel: { master: mymaster, nodes: [10.0.0.1:26379, "10.0.0.2:26379"], password: s-pw }
                  user: worker
                  password: w-pw
                  tls: { caCert: %s }
                jobs: [ { name: a, cron: "@daily", class: x.A } ]
                """.formatted(dir.resolve("ca.pem")));
        assertThat(sentinel.redis().endpoint()).isEqualTo(new RedisSettings.Sentinel("mymaster",
                List.of("10.0.0.1:26379", "10.0.0.2:26379"), java.util.Optional.empty(), java.util.Optional.of("s-pw")));
        assertThat(sentinel.redis().tls()).isEqualTo(new RedisSettings.Tls(true, java.util.Optional.of(dir.resolve("ca.pem")),
                java.util.Optional.empty(), java.util.Optional.empty()));
        assertThat(sentinel.redis().toString()).doesNotContain("s-pw").doesNotContain("w-pw");
        LockstepConfig cluster = LOADER.load("jobs.yaml", """
                redis: { cluster: { nodes: [10.0.0.1:7000] } }
                jobs: [ { name: a, cron: "@daily", class: x.A } ]
                """);
        assertThat(cluster.redis().endpoint()).isEqualTo(new RedisSettings.Cluster(List.of("10.0.0.1:7000")));
        assertThat(cluster.redis().describe()).isEqualTo("cluster via 10.0.0.1:7000");
        assertThat(cluster.redis().waitReplicas()).isZero();
        LockstepConfig waiting = LOADER.load("jobs.yaml", "redis: { waitReplicas: 1, waitTimeout: 50ms }\njobs: [ { name: a, cron: \"@daily\", class: x.A } ]\n");
        assertThat(waiting.redis().waitReplicas()).isEqualTo(1);
        assertThat(waiting.redis().waitTimeout()).isEqualTo(Duration.ofMillis(50));
        assertThat(LOADER.load("jobs.yaml", "redis: { uri: \"rediss://h:6380\" }\njobs: [ { name: a, cron: \"@daily\", class: x.A } ]\n")
                .redis().tls().enabled()).isTrue();
    }

    @Test
    void redisModeMistakesAreProblemsWithTheirLines() {
        assertThat(problems("""
                redis:
                  uri: redis://h:6379
                  cluster: { nodes: [h:7000] }
                  tls: { clientCert: nope.pem }
                jobs: [ { name: a, cron: "@daily", class: x.A } ]
                """)).extracting(ConfigProblem::toString).containsExactly(
                "jobs.yaml:3: redis.cluster: give exactly one of uri, sentinel, cluster or redlock, but uri and cluster are both set",
                "jobs.yaml:4: redis.tls.clientCert: cannot read " + java.nio.file.Path.of("nope.pem").toAbsolutePath(),
                "jobs.yaml:4: redis.tls.clientKey: is required with clientCert (mutual TLS needs both the certificate and its key)");
        assertThat(problems("""
                redis:
                  sentinel: { nodes: [h, "h:99999"] }
                jobs: [ { name: a, cron: "@daily", class: x.A } ]
                """)).extracting(ConfigProblem::toString).containsExactly(
                "jobs.yaml:2: redis.sentinel.master: is required",
                "jobs.yaml:2: redis.sentinel.nodes[0]: must be host:port with a port from 1 to 65535, but was \"h\"",
                "jobs.yaml:2: redis.sentinel.nodes[1]: must be host:port with a port from 1 to 65535, but was \"h:99999\"");
        assertThat(problems("redis: { timeout: 1s, waitReplicas: 1, waitTimeout: 2s }\n"
                + "jobs: [ { name: a, cron: \"@daily\", class: x.A, lease: 5s } ]\n")).extracting(ConfigProblem::toString).containsExactly(
                "jobs.yaml:1: redis.waitTimeout: must be at least 1ms and less than redis.timeout (1s), or every wait would time out "
                        + "the client first, but was 2s");
    }

    @Test
    void redlockIsReadWithItsDefaultsAndItsMistakesAreProblems() throws Exception {
        LockstepConfig redlock = LOADER.load("jobs.yaml", """
                redis:
                  redlock: { nodes: [10.0.0.1:6379, 10.0.0.2:6379, 10.0.0.3:6379] }
                jobs: [ { name: a, cron: "@daily", class: x.A } ]
                """);
        assertThat(redlock.redis().endpoint()).isEqualTo(new RedisSettings.Redlock(
                List.of("10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"), Duration.ofMillis(200), java.util.Optional.empty()));
        assertThat(redlock.redis().describe()).isEqualTo("redlock over 10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379");
        assertThat(((RedisSettings.Redlock) LOADER.load("jobs.yaml", """
                redis: { redlock: { nodes: [a:1, b:1, c:1], nodeTimeout: 50ms, quarantine: 0s } }
                jobs: [ { name: a, cron: "@daily", class: x.A } ]
                """).redis().endpoint()).quarantine()).contains(Duration.ZERO);
        assertThat(problems("""
                redis:
                  redlock: { nodes: [a:1, b:1], nodeTimeout: 3s }
                  waitReplicas: 1
                jobs: [ { name: a, cron: "@daily", class: x.A } ]
                """)).extracting(ConfigProblem::toString).containsExactly(
                "jobs.yaml:2: redis.redlock.nodes: needs at least 3 independent masters (5 is usual), but lists 2",
                "jobs.yaml:2: redis.redlock.nodeTimeout: must be less than redis.timeout (2s), but was 3s",
                "jobs.yaml:3: redis.waitReplicas: does not go with redlock: its masters stand alone, each decision needs a majority "
                        + "of them instead");
        assertThat(problems("""
                redis: { redlock: { nodes: [a:1, a:1, b:1] } }
                jobs: [ { name: a, cron: "@daily", class: x.A } ]
                """)).extracting(ConfigProblem::toString).containsExactly(
                "jobs.yaml:1: redis.redlock.nodes: lists a master twice: each must be a separate server");
        assertThat(((RedisSettings.Redlock) LOADER.load("jobs.yaml", """
                redis: { redlock: { nodes: [a:1, b:1, c:1], durable: [b:1] } }
                jobs: [ { name: a, cron: "@daily", class: x.A } ]
                """).redis().endpoint()).durable()).containsExactly("b:1");
        assertThat(problems("""
                redis: { redlock: { nodes: [a:1, b:1, c:1], durable: [d:1] } }
                jobs: [ { name: a, cron: "@daily", class: x.A } ]
                """)).extracting(ConfigProblem::toString).containsExactly(
                "jobs.yaml:1: redis.redlock.durable[0]: \"d:1\" is not one of redis.redlock.nodes");
    }

    /** A job that declares its params type. */
    public static final class LabelJob implements io.lockstep.scheduler.Job {
        /** Its params. */
        public record Params(String label, int copies) {}

        @Override
        public void execute(io.lockstep.scheduler.JobContext context) {
        }

        @Override
        public Class<?> paramsType() {
            return Params.class;
        }
    }

    @Test
    void paramsAreBoundToTheTypeTheJobDeclaresSoATypoIsAConfigError() {
        ConfigLoader checking = ConfigLoader.defaults();
        String job = LabelJob.class.getName();
        try {
            checking.load("jobs.yaml", "jobs:\n  - name: a\n    cron: \"@daily\"\n    class: " + job + "\n    params:\n"
                    + "      lable: Daily\n      copies: 2\n  - name: b\n    cron: \"@daily\"\n    class: " + job + "\n"
                    + "    params: { label: x, copies: many }\n");
            throw new AssertionError("expected the config to be rejected");
        } catch (ConfigException e) {
            assertThat(e.problems()).extracting(ConfigProblem::toString).containsExactly(
                    "jobs.yaml:6: jobs[0].params.lable: unknown key \"lable\" (did you mean \"label\"?)",
                    "jobs.yaml:11: jobs[1].params.copies: must be a whole number, but was a string (\"many\")");
        }
        checking.load("jobs.yaml", "jobs: [ { name: a, cron: \"@daily\", class: " + job + ", params: { label: x, copies: 2 } } ]\n");
    }

    @Test
    void aMisfireGraceTooShortToStartAnythingIsRefusedWithTheReason() {
        assertThat(problems("jobs: [ { name: a, cron: \"@daily\", class: x.A, misfireGrace: 0s } ]\n"))
                .extracting(ConfigProblem::toString).singleElement().asString()
                .startsWith("jobs.yaml:1: jobs[0].misfireGrace: must be at least 1s: a slot starts some milliseconds after its time");
    }

    @Test
    void theRedisDescriptionNamesTheUserThatIsActuallyUsed() {
        assertThat(LOADER.load("jobs.yaml", "redis: { uri: \"redis://alice:pw@h:6379\", user: bob }\n"
                + "jobs: [ { name: a, cron: \"@daily\", class: x.A } ]\n").redis().describe()).isEqualTo("redis://h:6379 as user bob");
        assertThat(LOADER.load("jobs.yaml", "redis: { uri: \"redis://alice:pw@h:6379\" }\n"
                + "jobs: [ { name: a, cron: \"@daily\", class: x.A } ]\n").redis().describe()).isEqualTo("redis://h:6379 as user alice");
    }
}
