package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.lockstep.examples.cli.CliRun;
import io.lockstep.redis.TcpProxy;
import io.lockstep.scheduler.SlotCoverage;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A randomized fault campaign (issue 32), in the manner of Jepsen's nemesis schedules: a seeded
 * {@link Random} draws 3-5 worker JVMs and a schedule of faults and operator actions over a real
 * redis-server, the schedule is printed whole (one line per step, with its time offset), carried
 * out against the running cluster, healed, and the run is checked afterwards from the workers' own
 * logs: {@code lockstep audit} (every check, over the whole run) and {@link SlotCoverage} (no slot
 * silent) over the windows in which no fault was on.
 *
 * <p>What it draws ({@link Kind}): SIGKILL and a restart under the same id; SIGSTOP past the lease,
 * then SIGCONT; a worker's link to Redis cut, or its replies lost (each worker reaches Redis
 * through its own {@link TcpProxy}); Redis itself stopped (SIGSTOP) and resumed; one worker's wall
 * clock stepped an hour either way (libfaketime, as in {@link ClockJumpIT}; skipped with a message
 * where libfaketime is missing, never failed for); a job paused then resumed, and a manual run
 * triggered, through the CLI; a reload on one worker that changes one job's cron, misfireGrace or
 * lease, rolled back by a second reload (a canary: one worker at a time differs, so the cluster's
 * config is one period again when the audit reads it, as the audit requires); one worker's job
 * threads all taken by a long job ({@link io.lockstep.examples.it.jobs.BusyJob}). Beside the per-second jobs
 * run a job of two crons that skips on an application's calendar ({@code vocab}, {@link io.lockstep.examples.it.jobs.EvenMinutes})
 * and one of {@code H} with a jitter ({@code hashed}); the audit judges them (the calendar check among the rest).
 * (An every-worker job is not in it: a worker killed and never back leaves its own instance's last slots
 * unverifiable, which {@code --strict} would fail; {@code ScheduleVocabularyIT} covers it through a restart.)
 *
 * <p>What it never draws together, so as to stay inside the guarantees' stated assumptions: at
 * most a minority of the workers hurt at once (a kill, stop, link fault, clock step, canary reload
 * or busy spell each hurts one worker; one fault per worker at a time, 8 s apart on one worker;
 * a reload waits for a restarted worker to be up, since a SIGHUP before its handler would end it);
 * one Redis stall at a time, never beside a CLI
 * command (the CLI would wait on it), a clock step (the audit's {@code lease-stop} reads one
 * worker's own clock) or a restart (a stall waits until every worker has started: on 0.2.0 a
 * worker whose start meets a Redis stopped for a few seconds can exit 1 with "unexpected failure:
 * java.lang.ClassCastException" from {@code RedisMembers.read}, seen with seed 4 and outside the
 * campaign); Redis is never killed nor flushed (Lockstep relies on it keeping its keys).
 *
 * <p>{@code -Dcampaign.seed=N} replays a schedule exactly (the same workers and steps at the same
 * offsets, given the same length: the seeds RELIABILITY lists before 2026-12-05 ran 2.5 minutes,
 * {@code -Dcampaign.minutes=2.5}); {@code -Dcampaign.minutes=N} runs longer (default 2 minutes of
 * schedule, part of {@code mvn verify}, whose whole suite must stay well under 20 minutes); {@code -Dcampaign.workers=N} (3-5) overrides the drawn worker count. A
 * failing run names its seed and keeps its logs in {@code target/campaign-failures/seed-N}.
 */
class FaultCampaignIT {

    /**
     * The options the campaign passes to {@code lockstep audit}, the one place to add one (e.g.
     * {@code "--strict"}, which makes unverified slots fail too).
     */
    static final List<String> AUDIT_ARGS = List.of("--strict");

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int JOBS = 6;
    private static final int BUSY_JOBS = 3;
    private static final String LEASE = "3s";
    private static final String GRACE = "2s";
    /**
     * After a fault is healed, how long before {@link SlotCoverage} holds the cluster to "no slot
     * silent" again: misfireGrace + 1 s, the time the slots that fell due during the fault have to
     * be decided (run, or reported missed by the workers that could not claim them). The audit
     * checks every slot of the run, these included.
     */
    private static final Duration SETTLE = Duration.ofSeconds(3);
    /** The least time between two faults on one worker: a restarted JVM is up by then. */
    private static final Duration SAME_WORKER_GAP = Duration.ofSeconds(8);
    private static final Duration DEFAULT_LENGTH = Duration.ofSeconds(120);
    private static final Duration TAIL = Duration.ofSeconds(8);

    @TempDir
    Path dir;

    // ------------------------------------------------------------------ the schedule

    /** One drawn fault or operator action: on {@code worker} (-1: none), from {@code at} for {@code length}. */
    record Fault(Kind kind, int worker, Duration at, Duration length, String variant) {

        Duration end() {
            return at.plus(length);
        }

        String describe() {
            return kind + (worker >= 0 ? " " + workerId(worker) : "") + (variant.isEmpty() ? "" : " " + variant);
        }
    }

    /** A step of the schedule: a fault applied or healed at an offset from the start. */
    record Step(Duration at, boolean apply, Fault fault) {

        @Override
        public String toString() {
            return String.format("%+8.1f s  %-5s %s%s", at.toMillis() / 1000.0, apply ? "apply" : "heal", fault.describe(),
                    apply && !fault.length().isZero() ? String.format(" (for %.1f s)", fault.length().toMillis() / 1000.0) : "");
        }
    }

    /** The whole drawn campaign: a pure function of the seed, the length and the worker count. */
    record Schedule(long seed, int workers, Duration length, List<Fault> faults) {

        static Schedule draw(long seed, Duration length, Optional<Integer> workersOverride) {
            Random rnd = new Random(seed);
            int drawnWorkers = 3 + rnd.nextInt(3);
            int workers = workersOverride.orElse(drawnWorkers);
            List<Fault> faults = new ArrayList<>();
            long t = 4_000;
            while (true) {
                t += 2_000 + rnd.nextInt(6_000); // a step every 5 s on average
                if (t > length.toMillis() - 6_000) {
                    break;
                }
                for (int attempt = 0; attempt < 6; attempt++) { // a draw that breaks an assumption is drawn again
                    Kind kind = DRAWN[rnd.nextInt(DRAWN.length)];
                    Fault f = kind.draw(rnd, Duration.ofMillis(t), workers);
                    if (f.end().compareTo(length.minusSeconds(3)) <= 0 && allowed(f, faults, workers)) {
                        faults.add(f);
                        break;
                    }
                }
            }
            // One backfill, drawn apart (from a generator of its own), so that the seeds of earlier runs draw the same faults.
            Random extra = new Random(seed * 31 + 7);
            for (int attempt = 0; attempt < 6 && length.toMillis() > 30_000; attempt++) {
                Fault f = Kind.BACKFILL.draw(extra, Duration.ofMillis(8_000 + extra.nextInt((int) length.toMillis() - 28_000)), workers);
                if (allowed(f, faults, workers)) {
                    faults.add(f);
                    break;
                }
            }
            return new Schedule(seed, workers, length, List.copyOf(faults));
        }

        /** The kinds drawn at each step, in the order the first campaigns drew them (a seed replays the same faults). */
        private static final Kind[] DRAWN = java.util.Arrays.stream(Kind.values()).filter(k -> k != Kind.BACKFILL).toArray(Kind[]::new);

        /** Whether {@code f} can join {@code drawn} without breaking an assumption the guarantees state. */
        private static boolean allowed(Fault f, List<Fault> drawn, int workers) {
            int hurtBeside = 0;
            for (Fault g : drawn) {
                if (f.worker() >= 0 && f.worker() == g.worker() && overlap(f, g, SAME_WORKER_GAP)) {
                    return false;
                }
                if (f.kind() == g.kind() && !f.kind().hurtsAWorker() && overlap(f, g, Duration.ofSeconds(1))) {
                    return false; // one stall, one pause at a time
                }
                if (f.kind().keptFromStall() && g.kind() == Kind.REDIS_STALL && overlap(f, g, Duration.ofSeconds(2))
                        || g.kind().keptFromStall() && f.kind() == Kind.REDIS_STALL && overlap(f, g, Duration.ofSeconds(2))) {
                    return false;
                }
                if ((f.kind() == Kind.KILL && g.kind() == Kind.REDIS_STALL || g.kind() == Kind.KILL && f.kind() == Kind.REDIS_STALL)
                        && overlap(f, g, SAME_WORKER_GAP)) {
                    return false; // a worker restarted onto a stopped Redis cannot start
                }
                if (f.kind().hurtsAWorker() && g.kind().hurtsAWorker() && overlap(f, g, Duration.ofSeconds(1))) {
                    hurtBeside++;
                }
            }
            return !f.kind().hurtsAWorker() || hurtBeside + 1 <= (workers - 1) / 2;
        }

        private static boolean overlap(Fault a, Fault b, Duration margin) {
            return a.at().compareTo(b.end().plus(margin)) < 0 && b.at().compareTo(a.end().plus(margin)) < 0;
        }

        List<Step> steps() {
            List<Step> steps = new ArrayList<>();
            for (Fault f : faults) {
                steps.add(new Step(f.at(), true, f));
                if (!f.length().isZero()) {
                    steps.add(new Step(f.end(), false, f));
                }
            }
            // heals before applies at the same offset; otherwise in drawing order
            steps.sort(Comparator.comparing(Step::at).thenComparing(Step::apply));
            return steps;
        }

        long count(boolean operatorActions) {
            return faults.stream().filter(f -> f.kind().operatorAction() == operatorActions).count();
        }

        String print() {
            StringBuilder out = new StringBuilder(String.format(
                    "fault campaign: seed %d (replay: -Dcampaign.seed=%d), %d workers, %.0f s, %d faults and %d operator actions"
                            + " (%.1f faults per minute)%n", seed, seed, workers, length.toMillis() / 1000.0, count(false), count(true),
                    count(false) * 60_000.0 / length.toMillis()));
            steps().forEach(s -> out.append("  ").append(s).append(System.lineSeparator()));
            return out.toString();
        }
    }

    static String workerId(int i) {
        return "w" + (i + 1);
    }

    /**
     * What the campaign can do to the cluster, each with how it is drawn, applied and healed.
     * Worker faults hurt one worker; {@link #REDIS_STALL} hurts every one; the operator actions
     * ({@link #PAUSE}, {@link #TRIGGER}) hurt nothing: they are what operators do in the middle of it.
     */
    enum Kind {
        /** SIGKILL, then the same id started again on the same config, as systemd would. */
        KILL {
            @Override
            Fault draw(Random rnd, Duration at, int workers) {
                return new Fault(this, rnd.nextInt(workers), at, Duration.ofMillis(2_000 + rnd.nextInt(4_000)), "");
            }

            @Override
            void apply(Campaign c, Fault f) {
                WorkerProcess w = c.worker(f.worker());
                w.signal("KILL");
                w.waitForExit();
            }

            @Override
            void heal(Campaign c, Fault f) {
                c.start(f.worker());
            }
        },
        /** SIGSTOP for longer than the lease (3 s), then SIGCONT. */
        STOP {
            @Override
            Fault draw(Random rnd, Duration at, int workers) {
                return new Fault(this, rnd.nextInt(workers), at, Duration.ofMillis(4_000 + rnd.nextInt(4_000)), "");
            }

            @Override
            void apply(Campaign c, Fault f) {
                c.worker(f.worker()).signal("STOP");
            }

            @Override
            void heal(Campaign c, Fault f) {
                c.worker(f.worker()).signal("CONT");
            }
        },
        /** The worker's link to Redis passes nothing either way (a firewall dropping packets), shorter or longer than the lease. */
        CUT_LINK {
            @Override
            Fault draw(Random rnd, Duration at, int workers) {
                return new Fault(this, rnd.nextInt(workers), at, Duration.ofMillis(1_000 + rnd.nextInt(6_000)), "");
            }

            @Override
            void apply(Campaign c, Fault f) {
                c.proxies.get(f.worker()).cut(true);
            }

            @Override
            void heal(Campaign c, Fault f) {
                c.proxies.get(f.worker()).cut(false);
            }
        },
        /** The worker's requests reach Redis and run there; their replies are lost (a lossy link). */
        LOSE_REPLIES {
            @Override
            Fault draw(Random rnd, Duration at, int workers) {
                return new Fault(this, rnd.nextInt(workers), at, Duration.ofMillis(1_000 + rnd.nextInt(4_000)), "");
            }

            @Override
            void apply(Campaign c, Fault f) {
                c.proxies.get(f.worker()).dropReplies(true);
            }

            @Override
            void heal(Campaign c, Fault f) {
                c.proxies.get(f.worker()).dropReplies(false);
            }
        },
        /** redis-server stopped (SIGSTOP), sometimes past the lease, then resumed; its data stays. */
        REDIS_STALL {
            @Override
            Fault draw(Random rnd, Duration at, int workers) {
                return new Fault(this, -1, at, Duration.ofMillis(1_000 + rnd.nextInt(4_000)), "");
            }

            @Override
            void apply(Campaign c, Fault f) {
                // Never beside a worker's start, in fact and not only in the schedule: the libfaketime worker took
                // 20-30 s to start at load 15-20, past the 8 s the schedule leaves (and a worker whose start meets a
                // stalled Redis exits: seed 4, see the class comment).
                c.awaitAllStarted();
                c.cluster.redis.pause();
            }

            @Override
            void heal(Campaign c, Fault f) {
                c.cluster.redis.resume();
            }
        },
        /** The clock worker's (w1's) wall clock stepped an hour ahead or back, then set right. */
        CLOCK_STEP {
            @Override
            Fault draw(Random rnd, Duration at, int workers) {
                return new Fault(this, 0, at, Duration.ofMillis(4_000 + rnd.nextInt(6_000)), rnd.nextBoolean() ? "+1h" : "-1h");
            }

            @Override
            void apply(Campaign c, Fault f) {
                c.setClock(f.variant());
            }

            @Override
            void heal(Campaign c, Fault f) {
                c.setClock("+0");
            }
        },
        /** One worker reloads (SIGHUP) a config that changes one job's cron, misfireGrace or lease; a second reload undoes it. */
        RELOAD {
            @Override
            Fault draw(Random rnd, Duration at, int workers) {
                String job = String.format("job-%02d", rnd.nextInt(JOBS));
                String change = List.of("cron", "misfireGrace", "lease").get(rnd.nextInt(3));
                return new Fault(this, rnd.nextInt(workers), at, Duration.ofMillis(5_000 + rnd.nextInt(7_000)), change + " of " + job);
            }

            @Override
            void apply(Campaign c, Fault f) {
                String job = f.variant().substring(f.variant().lastIndexOf(' ') + 1);
                String from = jobLine(job, "* * * * * *", LEASE, GRACE);
                String to = switch (f.variant().substring(0, f.variant().indexOf(' '))) {
                    // a subset of the slots, and a shorter grace or lease: the shared config's targets and
                    // bounds (the ones the audit checks) still hold for the canary's runs
                    case "cron" -> jobLine(job, "*/2 * * * * *", LEASE, GRACE);
                    case "misfireGrace" -> jobLine(job, "* * * * * *", LEASE, "1s");
                    default -> jobLine(job, "* * * * * *", "2s", GRACE);
                };
                c.reload(f.worker(), from, to);
            }

            @Override
            void heal(Campaign c, Fault f) {
                c.reload(f.worker(), null, null);
            }
        },
        /** Every job thread of one worker taken by a long job (its BusyJob runs), until the flag is removed. */
        BUSY {
            @Override
            Fault draw(Random rnd, Duration at, int workers) {
                return new Fault(this, rnd.nextInt(workers), at, Duration.ofMillis(5_000 + rnd.nextInt(7_000)), "");
            }

            @Override
            void apply(Campaign c, Fault f) {
                c.write(c.busyFlag(f.worker()), "busy");
            }

            @Override
            void heal(Campaign c, Fault f) {
                try {
                    Files.delete(c.busyFlag(f.worker()));
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }
        },
        /** {@code lockstep pause --job J}, then {@code lockstep resume --job J}. */
        PAUSE {
            @Override
            Fault draw(Random rnd, Duration at, int workers) {
                return new Fault(this, -1, at, Duration.ofMillis(2_000 + rnd.nextInt(4_000)), String.format("job-%02d", rnd.nextInt(JOBS)));
            }

            @Override
            void apply(Campaign c, Fault f) {
                c.cli("pause", "--job", f.variant(), "--note", "fault campaign");
            }

            @Override
            void heal(Campaign c, Fault f) {
                c.cli("resume", "--job", f.variant());
            }
        },
        /** {@code lockstep trigger --job manual}: a manual run, decided by whichever worker wins it. */
        TRIGGER {
            @Override
            Fault draw(Random rnd, Duration at, int workers) {
                return new Fault(this, -1, at, Duration.ZERO, "manual");
            }

            @Override
            void apply(Campaign c, Fault f) {
                c.cli("trigger", "--job", "manual");
            }

            @Override
            void heal(Campaign c, Fault f) {
                // a manual run has nothing to undo
            }
        },
        /**
         * {@code lockstep backfill J --from -40 s --to -11 s} (before the cluster began: nobody decided those slots)
         * at 20/s: its runs go on through whatever faults follow, its driver maybe killed or stopped.
         */
        BACKFILL {
            @Override
            Fault draw(Random rnd, Duration at, int workers) {
                return new Fault(this, -1, at, Duration.ZERO, String.format("job-%02d", rnd.nextInt(JOBS)));
            }

            @Override
            void apply(Campaign c, Fault f) {
                c.cli("backfill", f.variant(), "--from", c.backfillFrom().toString(), "--to", c.backfillTo().toString(),
                        "--rate", "20/s", "--detach");
            }

            @Override
            void heal(Campaign c, Fault f) {
                // it runs to its end; the campaign checks it did
            }
        };

        abstract Fault draw(Random rnd, Duration at, int workers);

        abstract void apply(Campaign c, Fault f);

        abstract void heal(Campaign c, Fault f);

        boolean operatorAction() {
            return this == PAUSE || this == TRIGGER || this == BACKFILL;
        }

        boolean hurtsAWorker() {
            return this != REDIS_STALL && !operatorAction();
        }

        /** Never beside a Redis stall: CLI commands would wait on it, and a clock step would blur the audit's own-clock check. */
        boolean keptFromStall() {
            return operatorAction() || this == CLOCK_STEP;
        }
    }

    /** One job of the config, on one line, so that a reload can change it by replacing the line. */
    static String jobLine(String name, String cron, String lease, String grace) {
        return String.format("  - { name: %s, cron: \"%s\", class: io.lockstep.examples.HeartbeatJob, params: { workMillis: 100 },"
                + " lease: %s, misfireGrace: %s%s }%n", name, cron, lease, grace, name.compareTo("job-04") >= 0 ? ", recover: rerun" : "");
    }

    private String jobs() {
        StringBuilder yaml = new StringBuilder("jobs:\n");
        for (int j = 0; j < JOBS; j++) {
            yaml.append(jobLine(String.format("job-%02d", j), "* * * * * *", LEASE, GRACE));
        }
        for (int j = 0; j < BUSY_JOBS; j++) {
            yaml.append(String.format("  - { name: busy-%d, cron: \"* * * * * *\", class: io.lockstep.examples.it.jobs.BusyJob,"
                    + " params: { dir: \"%s\" }, overlap: allow, lease: %s, misfireGrace: %s }%n", j, dir, LEASE, GRACE));
        }
        yaml.append("  - { name: manual, cron: \"0 0 0 1 1 *\", class: io.lockstep.examples.HeartbeatJob, params: { workMillis: 50 } }\n");
        // The schedule vocabulary under the same faults: two crons and an application's calendar (ServiceLoader), H and jitter.
        yaml.append(String.format("  - { name: vocab, cron: [\"*/2 * * * * *\", \"*/3 * * * * *\"], skipOn: [even-minutes],"
                + " class: io.lockstep.examples.HeartbeatJob, params: { workMillis: 100 }, lease: %s, misfireGrace: %s }%n", LEASE, GRACE));
        yaml.append(String.format("  - { name: hashed, cron: \"H/5 * * * * *\", jitter: 3s, class: io.lockstep.examples.HeartbeatJob,"
                + " params: { workMillis: 100 }, lease: %s, misfireGrace: %s }%n", LEASE, GRACE));
        return yaml.toString();
    }

    private static List<String> coveredJobs() {
        List<String> jobs = new ArrayList<>(Cluster.jobNames(JOBS));
        IntStream.range(0, BUSY_JOBS).forEach(j -> jobs.add("busy-" + j));
        return jobs;
    }

    // ------------------------------------------------------------------ the run

    /** The running cluster and what the faults act on. */
    final class Campaign {

        final Cluster cluster;
        final List<TcpProxy> proxies = new ArrayList<>();
        final List<WorkerProcess> current = new ArrayList<>();
        final Optional<Path> libfaketime = WorkerProcess.libfaketime();
        final Path clock = dir.resolve("faketime.rc");

        /** When the cluster was made, before its first worker started: the slots before it nobody decided. */
        final Instant made = Instant.now().truncatedTo(ChronoUnit.SECONDS);

        Instant backfillFrom() {
            return made.minusSeconds(40);
        }

        Instant backfillTo() {
            return made.minusSeconds(11);
        }

        Campaign(Cluster cluster, int workers) {
            this.cluster = cluster;
            write(clock, "+0\n");
            for (int i = 0; i < workers; i++) {
                proxies.add(TcpProxy.to(cluster.redis.host(), cluster.redis.port()));
                current.add(null);
                start(i);
            }
        }

        WorkerProcess worker(int i) {
            return current.get(i);
        }

        /**
         * Until every current worker logged {@code worker_started}. Up to 2 minutes: 3-5 JVMs (one under
         * libfaketime) starting at once on 2 cores shared with other builds took over 30 s (load
         * average 15-20); a worker that does not start at all is named, with its stderr.
         */
        void awaitAllStarted() {
            try {
                await().atMost(Duration.ofMinutes(2)).until(() -> current.stream().allMatch(WorkerProcess::hasStarted));
            } catch (org.awaitility.core.ConditionTimeoutException e) {
                StringBuilder why = new StringBuilder("workers not started after 2 minutes:");
                current.stream().filter(w -> !w.hasStarted()).forEach(w -> why.append(String.format(" %s (alive: %s, stderr: %s)", w.id,
                        w.isAlive(), w.stderr().lines().limit(5).toList())));
                throw new AssertionError(why.toString(), e);
            }
        }

        /** Starts worker i (again) behind its proxy, on its own config; w1 under libfaketime where there is one. */
        void start(int i) {
            Map<String, String> env = i == 0 && libfaketime.isPresent()
                    ? Map.of("LD_PRELOAD", libfaketime.get().toString(), "FAKETIME_TIMESTAMP_FILE", clock.toString(),
                            "FAKETIME_CACHE_DURATION", "1", "FAKETIME_DONT_FAKE_MONOTONIC", "1")
                    : Map.of();
            WorkerProcess w = current.get(i) == null ? cluster.startBehind(proxies.get(i), workerId(i), env)
                    : WorkerProcess.start(dir, ownConfig(i), workerId(i), env);
            if (current.get(i) != null) {
                cluster.workers.add(w);
            }
            current.set(i, w);
        }

        Path ownConfig(int i) {
            return dir.resolve(workerId(i) + ".yaml");
        }

        Path busyFlag(int i) {
            return dir.resolve("busy-" + workerId(i));
        }

        void setClock(String offset) {
            if (libfaketime.isEmpty()) {
                System.out.println("    skipped: libfaketime not found (install the Debian package 'faketime' to step a worker's clock)");
                return;
            }
            write(clock, offset + "\n");
        }

        /** Rewrites worker i's own config ({@code from} replaced by {@code to}, or back to the original when null) and SIGHUPs it. */
        void reload(int i, String from, String to) {
            WorkerProcess w = worker(i);
            // SIGHUP before the JVM installed its handler would end it: a restarted worker must be up first
            await().atMost(Duration.ofMinutes(2)).until(w::hasStarted);
            try {
                String original = Files.readString(dir.resolve(workerId(i) + ".yaml.original"));
                String text = from == null ? original : Cluster.replacing(original, from, to);
                write(ownConfig(i), text);
                if (from != null) { // the audit is given every config a worker ran: it checks each slot against its worker's
                    Path canary = dir.resolve("canary-" + cluster.auditConfigs.size() + ".yaml");
                    write(canary, text);
                    if (cluster.auditConfigs.isEmpty()) {
                        cluster.auditConfigs.add(cluster.config);
                    }
                    cluster.auditConfigs.add(canary);
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            int updates = w.events("schedule_updated").size();
            w.signal("HUP");
            // the fault is real only if the worker took the file (the shared config's hash differs meanwhile)
            await().atMost(Duration.ofSeconds(10)).until(() -> w.events("schedule_updated").size() > updates);
        }

        void cli(String... args) {
            List<String> command = new ArrayList<>(List.of(args[0], "--config", cluster.config.toString()));
            command.addAll(List.of(args).subList(1, args.length));
            CliRun run = CliRun.of(command.toArray(String[]::new));
            assertThat(run.exit()).as("lockstep %s: %s%s", String.join(" ", args), run.out(), run.err()).isZero();
        }

        void write(Path file, String text) {
            try {
                Files.writeString(file, text);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    /** When a fault was really applied and healed (the schedule's offsets, as the loaded host kept them). */
    record Done(Fault fault, Instant applied, Instant healed) {}

    @Test
    void aSeededScheduleOfFaultsNeverRunsASlotTwiceNorLeavesOneSilent() throws Exception {
        long seed = Long.getLong("campaign.seed", new Random().nextLong() & Long.MAX_VALUE);
        Duration length = Optional.ofNullable(System.getProperty("campaign.minutes"))
                .map(m -> Duration.ofMillis(Math.round(Double.parseDouble(m) * 60_000))).orElse(DEFAULT_LENGTH);
        Optional<Integer> workers = Optional.ofNullable(Integer.getInteger("campaign.workers"));
        workers.ifPresent(n -> assertThat(n).as("campaign.workers").isBetween(3, 5));
        Schedule schedule = Schedule.draw(seed, length, workers);
        System.out.printf("%n%s", schedule.print());
        assertThat(Schedule.draw(seed, length, workers)).as("the schedule is a function of the seed: a replay draws the same").isEqualTo(schedule);

        Instant began = Instant.now();
        try (Cluster cluster = new Cluster(dir, jobs())) {
            try {
                run(cluster, schedule, seed, began);
            } catch (Exception | AssertionError e) { // whatever failed, the seed and the logs are what a replay needs
                cluster.keepLogs(Path.of("target", "campaign-failures", "seed-" + seed));
                throw new AssertionError("fault campaign seed " + seed + " failed (replay it with -Dcampaign.seed=" + seed + "): "
                        + e.getMessage(), e);
            }
        }
    }

    private void run(Cluster cluster, Schedule schedule, long seed, Instant began) throws IOException {
        cluster.editConfig("threads: 8", "threads: 4");
        Campaign c = new Campaign(cluster, schedule.workers());
        for (int i = 0; i < schedule.workers(); i++) {
            Files.copy(c.ownConfig(i), dir.resolve(workerId(i) + ".yaml.original"));
        }
        List<String> failures = new ArrayList<>();
        Map<Fault, Instant> applied = new LinkedHashMap<>();
        List<Done> done = new ArrayList<>();
        Instant allStarted;
        Instant stopAt;
        try {
            c.awaitAllStarted();
            c.cli("status"); // the CLI's first use in this JVM loads its classes (3.6 s once on a loaded host): not in the schedule's time
            allStarted = Instant.now();
            for (Step step : schedule.steps()) {
                Cluster.sleepUntil(allStarted.plus(step.at()));
                Instant now = Instant.now();
                System.out.printf("[%+8.1f s] %s%n", Duration.between(allStarted, now).toMillis() / 1000.0, step);
                try {
                    if (step.apply()) {
                        step.fault().kind().apply(c, step.fault());
                        applied.put(step.fault(), now);
                        if (step.fault().length().isZero()) {
                            done.add(new Done(step.fault(), now, now));
                        }
                    } else if (applied.containsKey(step.fault())) {
                        step.fault().kind().heal(c, step.fault());
                        done.add(new Done(step.fault(), applied.remove(step.fault()), Instant.now()));
                    }
                } catch (RuntimeException | AssertionError e) {
                    failures.add(step + ": " + e);
                }
            }
        } finally {
            // heal whatever an exception left on, newest first
            List<Fault> left = new ArrayList<>(applied.keySet());
            java.util.Collections.reverse(left);
            for (Fault f : left) {
                try {
                    f.kind().heal(c, f);
                } catch (RuntimeException | AssertionError e) {
                    failures.add("healing " + f.describe() + " at the end: " + e);
                }
            }
        }
        // A quiet tail, every worker up, then SIGTERM for each, as an operator ends a run.
        c.awaitAllStarted();
        Optional<Fault> backfill = done.stream().map(Done::fault).filter(f -> f.kind() == Kind.BACKFILL).findFirst();
        if (backfill.isPresent()) {
            // Its driver may have been killed late: a peer takes over once the dead one's heartbeat is forgotten (10 s).
            try {
                await().atMost(Duration.ofSeconds(90)).until(() -> backfillEnded(c, backfill.get().variant()));
            } catch (org.awaitility.core.ConditionTimeoutException e) {
                failures.add("the backfill of " + backfill.get().variant() + " did not end within 90 s after the last fault");
            }
        }
        Cluster.sleepUntil(Instant.now().plus(TAIL));
        stopAt = Instant.now();
        for (WorkerProcess w : c.current) {
            int exit = w.terminate();
            if (exit != 0) {
                failures.add(w.id + " exited " + exit + " on SIGTERM: " + w.stderr().lines().limit(5).toList());
            }
        }

        if (backfill.isPresent()) {
            failures.addAll(backfillRanOnce(c, backfill.get().variant()));
        }
        List<String> silent = silentInHealthyWindows(allStarted, stopAt, done);
        long faults = done.stream().filter(d -> !d.fault().kind().operatorAction()).count();
        double minutes = Duration.between(allStarted, stopAt).toMillis() / 60_000.0;
        System.out.printf("%nfault campaign seed %d: %d workers, %d steps, %d faults and %d operator actions carried out in"
                + " %.1f min (%.1f faults per minute); %d slots in the healthy windows, %d silent; run took %d s%n", seed,
                schedule.workers(), schedule.steps().size(), faults, done.size() - faults, minutes, faults / minutes,
                healthySlots, silent.size(), Duration.between(began, Instant.now()).toSeconds());
        assertThat(failures).as("steps that could not be carried out").isEmpty();
        assertThat(silent).as("slots of the windows with no fault on (settled %d s after each heal) that no worker started"
                + " nor reported", SETTLE.toSeconds()).isEmpty();
        // The audit's window ends a grace and a second before the campaign began stopping its workers one by one (as
        // the healthy windows do): a slot due while only the last of them still ran, and whose grace its stop cut,
        // cannot show its fate in any log (the known limit the audit reports as unverified; seed 1303965971207148775).
        List<String> audit = new ArrayList<>(AUDIT_ARGS);
        audit.addAll(List.of("--to", stopAt.minusSeconds(3).toString()));
        cluster.assertAuditHolds(audit.toArray(String[]::new));
    }


    private long healthySlots;

    /** Whether {@code lockstep status} says the job's backfill is done. */
    private static boolean backfillEnded(Campaign c, String job) throws IOException {
        CliRun run = CliRun.of("status", "--config", c.cluster.config.toString(), "--json");
        for (JsonNode b : JSON.readTree(run.out()).path("backfills")) {
            if (b.path("job").asText().equals(job)) {
                return b.path("state").asText().equals("done");
            }
        }
        return false;
    }

    /** The events of these names in every life of every worker (a restarted worker's earlier file too). */
    private List<JsonNode> logged(Set<String> events) throws IOException {
        List<JsonNode> found = new ArrayList<>();
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : files.filter(f -> f.getFileName().toString().matches(".*\\.out(\\.\\d+)?\\.jsonl")).toList()) {
                for (String line : Files.readAllLines(f)) {
                    if (line.startsWith("{") && line.endsWith("}")) {
                        JsonNode e = JSON.readTree(line);
                        if (events.contains(e.path("event").asText())) {
                            found.add(e);
                        }
                    }
                }
            }
        }
        return found;
    }

    /** Each slot of the backfill's range started once by it (a rerun after a lost lease aside), in slot order. */
    private List<String> backfillRanOnce(Campaign c, String job) throws IOException {
        List<JsonNode> starts = logged(Set.of("job_started")).stream().filter(e -> e.path("job").asText().equals(job)
                && e.path("origin").asText().equals("backfill") && !e.path("rerun").asBoolean()).toList();
        Map<Instant, Long> perSlot = starts.stream().collect(java.util.stream.Collectors.groupingBy(WorkerProcess::slot,
                java.util.stream.Collectors.counting()));
        List<String> wrong = new ArrayList<>();
        for (Instant s = c.backfillFrom(); !s.isAfter(c.backfillTo()); s = s.plusSeconds(1)) {
            long n = perSlot.getOrDefault(s, 0L);
            if (n != 1) {
                wrong.add("backfill of " + job + ": slot " + s + " started " + n + " times");
            }
        }
        System.out.printf("backfill of %s: %d of %d slots started by it, by %s%n", job, perSlot.size(),
                Duration.between(c.backfillFrom(), c.backfillTo()).toSeconds() + 1, starts.stream().map(e -> e.path("worker").asText())
                        .distinct().toList());
        return wrong;
    }

    /**
     * The slots of {@link #coveredJobs} in the windows with no fault on, from {@link #SETTLE} after
     * each heal (and after every worker started) to a second before the next fault (and
     * misfireGrace + 1 s before the stop), that no worker's log, over every life of each worker,
     * shows started or reported. Operator actions are not faults: a paused slot is reported.
     */
    private List<String> silentInHealthyWindows(Instant allStarted, Instant stopAt, List<Done> done) throws IOException {
        Set<String> handled = new HashSet<>();
        logged(Set.of("job_started", "slot_missed", "slot_skipped", "slot_abandoned")).forEach(e -> handled.add(WorkerProcess.key(e)));
        List<Done> faults = done.stream().filter(d -> !d.fault().kind().operatorAction())
                .sorted(Comparator.comparing(Done::applied)).toList();
        List<String> silent = new ArrayList<>();
        healthySlots = 0;
        Instant from = allStarted.plus(SETTLE);
        List<Instant[]> windows = new ArrayList<>();
        for (Done d : faults) {
            windows.add(new Instant[] {from, d.applied().minusSeconds(1)});
            Instant after = d.healed().plus(SETTLE);
            from = after.isAfter(from) ? after : from;
        }
        windows.add(new Instant[] {from, stopAt.minusSeconds(3)});
        for (Instant[] w : windows) {
            Instant first = w[0].truncatedTo(ChronoUnit.SECONDS).plusSeconds(1);
            if (first.isBefore(w[1])) {
                silent.addAll(SlotCoverage.silent(handled, coveredJobs(), first, w[1], Duration.ofSeconds(1)));
                healthySlots += SlotCoverage.slots(coveredJobs(), first, w[1], Duration.ofSeconds(1));
            }
        }
        return silent;
    }
}
