package io.lockstep.redis;

import io.lockstep.scheduler.lock.WorkerInfo;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.resps.Tuple;

/**
 * The cluster as Redis knows it, for operators: live workers, each job's pause, last run and runs
 * in flight, its run history; and the three things an operator may change: pause, resume, and a
 * manual run (reading a job's history streams is {@link HistoryStreams}'s). What the
 * {@code status}, {@code history}, {@code trigger}, {@code pause} and {@code resume} commands and
 * the status page use. Reads need no worker; nothing here runs a job
 * (a manual run is requested, and a worker claims it). Thread-safe.
 */
public final class RedisAdmin {

    /**
     * One entry of a job's history, newest first: a run's outcome ({@code succeeded}, {@code failed},
     * {@code timed_out}, {@code lease_lost}, {@code interrupted}, {@code not_started}, {@code missed}: claimed, then not started in order, {@code error} says why), or a decision
     * about its slot without a run of its own ({@link #DECISIONS}: {@code reason} says why; for
     * {@code recovered}, {@code error} names the run it replaced). {@code attempt} is 0 for a decision.
     * {@code origin} is {@code backfill} for a backfill's run ({@code lockstep backfill}), else empty.
     */
    public record Run(Instant slot, String worker, String outcome, int attempt, long fencingToken, long durationMs, String error,
            boolean manual, String reason, String origin) {

        public Run(Instant slot, String worker, String outcome, int attempt, long fencingToken, long durationMs, String error,
                boolean manual, String reason) {
            this(slot, worker, outcome, attempt, fencingToken, durationMs, error, manual, reason, "");
        }

        /** Whether this is a run's outcome, not a decision about its slot. */
        public boolean isRun() {
            return !DECISIONS.contains(outcome) || attempt > 0; // a claim closed as missed (not started in order) is its run's entry
        }
    }

    /** The outcomes of a slot's history entries that are decisions, not runs. */
    public static final java.util.Set<String> DECISIONS = java.util.Set.of("missed", "skipped", "paused", "abandoned", "recovered");

    /** A pause: set by whom, when, with what note, and until when (empty: until resumed). */
    public record Pause(String note, String by, Instant at, Optional<Instant> until) {}

    /**
     * What an operator did to a job, and who: {@code action} is {@code pause}, {@code resume},
     * {@code trigger} or {@code backfill}; {@code detail} says the rest in words (a pause's note and
     * length, a manual run's slot, a backfill's range); {@code at} is the server's time of the record.
     */
    public record Action(Instant at, String action, String by, String detail) {}

    /** A run in flight: its slot, worker, fencing token and how long its lease has left (negative: ran out). */
    public record InFlight(Instant slot, String worker, long fencingToken, Duration leaseLeft, boolean manual) {}

    /**
     * What Redis knows of one job: its pause, its latest history entries (newest first) and its runs
     * in flight. On Redlock the pause is what most of the masters that answered have, and
     * {@code mastersDisagree} says so when they do not all agree (empty otherwise): the workers'
     * heartbeat brings the others to the newest operator command.
     */
    public record JobState(String job, Optional<Pause> pause, List<Run> recent, Optional<Run> lastRun, List<InFlight> running,
            String mastersDisagree) {

        public JobState(String job, Optional<Pause> pause, List<Run> recent, Optional<Run> lastRun, List<InFlight> running) {
            this(job, pause, recent, lastRun, running, "");
        }

        /** The latest run recorded (from the runs' own history, however many decisions came since). */
        public Optional<Run> last() {
            return lastRun;
        }
    }

    private final RedisLockProvider provider;
    private final UnifiedJedis jedis;
    private final RedisCalls calls;
    private final RedisKeys keys;

    /** Redlock: the masters' stores; null on one server, Sentinel or Cluster. */
    private final RedlockStore redlock;
    private final OperatorLog log;

    private RedisAdmin(RedisLockProvider provider) {
        this.provider = provider;
        this.jedis = provider.jedis();
        this.calls = provider.calls();
        this.keys = provider.keys();
        this.redlock = provider.redlock();
        this.log = new OperatorLog(jedis, calls, keys);
    }

    /** How long an operator's command waits for each Redlock master. */
    private static final Duration MASTER_WAIT = Duration.ofSeconds(5);

    /**
     * Redlock: {@code action} on every master's own admin view; the answers of those that gave one.
     * Reads and writes alike need a majority of the masters, as the workers' decisions do.
     */
    private <T> List<T> onMasters(String operation, java.util.function.Function<RedisAdmin, T> action) {
        List<Quorum.Vote<T>> votes = redlock.quorum().ask(p -> action.apply(new RedisAdmin(p)), MASTER_WAIT);
        List<T> answers = new ArrayList<>();
        for (Quorum.Vote<T> v : votes) {
            if (v.kind() != Quorum.Kind.FAILED) {
                answers.add(v.answer());
            }
        }
        if (answers.size() < redlock.quorum().quorum()) {
            throw redlock.quorum().tooFew(operation, votes, Quorum.describe(votes, a -> "answered"));
        }
        return answers;
    }

    /** On Redlock, each master asked from this process now ({@link RedisLockProvider#redlockMastersNow}); empty otherwise. */
    public Map<String, String> redlockMasters() {
        return provider.redlockMastersNow();
    }

    /** An admin view over {@code provider}'s connection and key prefix. */
    public static RedisAdmin of(RedisLockProvider provider) {
        return new RedisAdmin(provider);
    }

    /** The server's clock (epoch ms). */
    public long serverTimeMillis() {
        return provider.serverTimeMillis();
    }

    /** The live workers, oldest first. */
    public List<WorkerInfo> workers() {
        return provider.liveWorkers(WorkerInfo.HEARTBEAT_TTL);
    }

    /** The job definitions a worker's config hash stands for (job name to canonical JSON). */
    public Map<String, String> config(String configHash) {
        return provider.config(configHash);
    }

    /** The job's last {@code limit} history entries (runs and decisions without a run), newest slot first. */
    public List<Run> history(String job, int limit) {
        if (redlock != null) {
            // Twice as many from each master: entries only a minority has are dropped after the count.
            return HistoryStreams.merge(onMasters("history", a -> a.history(job, 2 * limit)), limit);
        }
        try {
            return HistoryStreams.merged(HistoryStreams.read(jedis, keys.history(job), limit),
                    HistoryStreams.read(jedis, keys.decisions(job), limit), limit);
        } catch (JedisException e) {
            throw calls.wrap("history", e);
        }
    }

    /** The job's pause, last {@code recentRuns} runs (at least the last one) and runs in flight. */
    public JobState job(String job, int recentRuns) {
        return jobs(List.of(job), recentRuns).get(0);
    }

    /** {@link #job} for each of {@code jobs}, in order, against one reading of the server's clock. */
    public List<JobState> jobs(List<String> jobs, int recentRuns) {
        if (redlock != null) {
            List<List<JobState>> answers = onMasters("status", a -> a.jobs(jobs, 2 * Math.max(1, recentRuns)));
            List<JobState> merged = new ArrayList<>(jobs.size());
            for (int i = 0; i < jobs.size(); i++) {
                int index = i;
                List<Pause> pauses = answers.stream().map(a -> a.get(index).pause()).flatMap(Optional::stream).toList();
                Optional<Pause> pause = pauses.size() * 2 > answers.size() ? Optional.of(pauses.get(0)) : Optional.empty();
                String disagree = pauses.isEmpty() || pauses.size() == answers.size() ? ""
                        : "paused on " + pauses.size() + " of the " + answers.size() + " masters that answered";
                Map<Instant, InFlight> running = new java.util.TreeMap<>();
                answers.forEach(a -> a.get(index).running().forEach(f -> running.putIfAbsent(f.slot(), f)));
                Optional<Run> lastRun = answers.stream().map(a -> a.get(index).lastRun()).flatMap(Optional::stream)
                        .max(java.util.Comparator.comparing(Run::slot));
                merged.add(new JobState(jobs.get(i), pause, HistoryStreams.merge(answers.stream().map(a -> a.get(index).recent()).toList(),
                        Math.max(1, recentRuns)), lastRun, List.copyOf(running.values()), disagree));
            }
            return merged;
        }
        long now = provider.serverTimeMillis();
        List<JobState> states = new ArrayList<>(jobs.size());
        for (String job : jobs) {
            states.add(job(job, recentRuns, now));
        }
        return states;
    }

    private JobState job(String job, int recentRuns, long now) {
        try {
            Optional<Pause> pause = pause(jedis.hgetAll(keys.paused(job)), jedis.pttl(keys.paused(job)), now);
            List<InFlight> running = new ArrayList<>();
            for (Tuple t : jedis.zrangeWithScores(keys.running(job), 0, -1)) {
                long slot = Long.parseLong(t.getElement());
                List<String> r = jedis.hmget(keys.slot(job, slot), "worker", "fence", "manual");
                running.add(new InFlight(Instant.ofEpochMilli(slot), r.get(0) == null ? "" : r.get(0),
                        r.get(1) == null ? 0 : Long.parseLong(r.get(1)), Duration.ofMillis((long) t.getScore() - now), "1".equals(r.get(2))));
            }
            int limit = Math.max(1, recentRuns);
            List<HistoryStreams.Entry> runs = HistoryStreams.read(jedis, keys.history(job), limit);
            Optional<Run> lastRun = runs.stream().map(HistoryStreams.Entry::run).max(java.util.Comparator.comparing(Run::slot));
            return new JobState(job, pause, HistoryStreams.merged(runs, HistoryStreams.read(jedis, keys.decisions(job), limit), limit),
                    lastRun, running);
        } catch (JedisException e) {
            throw calls.wrap("status", e);
        }
    }

    private static Optional<Pause> pause(Map<String, String> fields, long pttl, long now) {
        if (fields.isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(new Pause(fields.getOrDefault("note", ""), fields.getOrDefault("by", ""),
                Instant.ofEpochMilli(Long.parseLong(fields.getOrDefault("at", "0"))),
                pttl > 0 ? Optional.of(Instant.ofEpochMilli(now + pttl)) : Optional.empty()));
    }

    /**
     * Pauses {@code job} cluster-wide from its next slot: each paused slot is recorded as skipped
     * (reason {@code paused}) by exactly one worker. With {@code duration}, the pause ends by itself.
     */
    public void pause(String job, String note, Optional<Duration> duration, String by) {
        String detail = duration.map(d -> "for " + io.lockstep.scheduler.config.Durations.format(d)).orElse("until resumed")
                + (note.isEmpty() ? "" : ": " + note);
        if (redlock != null) {
            command("pause", job, true, note, by, duration);
            record(job, "pause", by, detail);
            return;
        }
        try {
            String key = keys.paused(job);
            jedis.hset(key, Map.of("note", note, "by", by, "at", Long.toString(provider.serverTimeMillis())));
            if (duration.isPresent()) {
                jedis.pexpire(key, duration.get().toMillis());
            } else {
                jedis.persist(key);
            }
        } catch (JedisException e) {
            throw calls.wrap("pause", e);
        }
        record(job, "pause", by, detail);
    }

    /** Ends the job's pause; false when it was not paused. */
    public boolean resume(String job) {
        return resume(job, "");
    }

    /** Ends the job's pause, recorded as done by {@code by} ({@link #actions}); false when it was not paused. */
    public boolean resume(String job, String by) {
        boolean was;
        if (redlock != null) {
            was = command("resume", job, false, "", by, Optional.empty());
        } else {
            try {
                was = jedis.del(keys.paused(job)) > 0;
            } catch (JedisException e) {
                throw calls.wrap("resume", e);
            }
        }
        record(job, "resume", by, was ? "" : "it was not paused");
        return was;
    }

    /**
     * Records that {@code by} did {@code action} to {@code job} (after it was done): on every
     * master on Redlock, each with the same time so that {@link #actions} merges the copies. A
     * record that cannot be written does not undo the action, nor make it look failed (a caller
     * would try again, and a trigger would run twice): it is logged ({@code operator_action_unrecorded}, WARN).
     */
    private void record(String job, String action, String by, String detail) {
        try {
            Action record = new Action(Instant.ofEpochMilli(provider.serverTimeMillis()), action, by, detail);
            if (redlock != null) {
                onMasters("record", a -> {
                    a.log.append(job, record);
                    return Boolean.TRUE;
                });
            } else {
                log.append(job, record);
            }
        } catch (RuntimeException e) {
            org.slf4j.LoggerFactory.getLogger("io.lockstep.events").atWarn().addKeyValue("event", "operator_action_unrecorded")
                    .addKeyValue("job", job).addKeyValue("action", action).addKeyValue("by", by).addKeyValue("detail", detail)
                    .addKeyValue("error", String.valueOf(e.getMessage()))
                    .log("{} of {} by {} was done, but its record could not be written: {}", action, job, by, e.getMessage());
        }
    }

    /** What operators did to {@code job}, newest first, at most {@code limit} (on Redlock: merged from the masters that answer). */
    public List<Action> actions(String job, int limit) {
        if (redlock != null) {
            return onMasters("history", a -> a.actions(job, limit)).stream().flatMap(List::stream).distinct()
                    .sorted(java.util.Comparator.comparing(Action::at).reversed()).limit(limit).toList();
        }
        return log.read(job, limit);
    }

    /**
     * Redlock: a pause or resume to every master that answers, stamped later than any command the
     * job had (by the time a majority of the masters' clocks had passed, and at least 1 ms after the
     * newest stamp they hold, so a command never loses to an older one); it counts when a majority
     * applied it. Masters that missed it are brought to it by the workers' heartbeat (newest wins),
     * which is also why a command that reached only a minority is said to be still on its way.
     *
     * @return whether the job was paused on any master before
     */
    private boolean command(String op, String job, boolean paused, String note, String by, Optional<Duration> duration) {
        long newest = onMasters(op, a -> a.provider.members().commands().latestCommandAt(job)).stream().mapToLong(Long::longValue).max().orElse(0);
        long at = Math.max(provider.serverTimeMillis(), newest + 1);
        String command = OperatorCommands.command(at, paused, note, by, duration.map(d -> at + d.toMillis()).orElse(0L));
        List<OperatorCommands.Applied> answers;
        try {
            answers = onMasters(op, a -> a.provider.members().commands().command(job, command));
        } catch (io.lockstep.scheduler.lock.LockException e) {
            throw new io.lockstep.scheduler.lock.LockException("redlock", e.getMessage() + "; the masters that got the " + op
                    + " pass it on to the others with the workers' next heartbeat: see status", e);
        }
        if (answers.stream().filter(OperatorCommands.Applied::applied).count() < redlock.quorum().quorum()) {
            throw new io.lockstep.scheduler.lock.LockException("redlock", "redlock: " + op + " " + job
                    + ": a newer pause or resume of the job was given meanwhile, and this one was not applied: see status", null);
        }
        return answers.stream().anyMatch(OperatorCommands.Applied::wasPaused);
    }

    /**
     * Asks the live worker {@code workerId} to drain within {@code within} ({@code lockstep drain}):
     * its next heartbeat (within about 3 s) answers the request once; it then stops claiming, lets
     * its running jobs finish within that time, and stops (the worker JAR exits).
     */
    public void drain(String workerId, Duration within) {
        provider.requestDrain(workerId, within);
    }

    /**
     * Checks a backfill of {@code job} over [{@code from}, {@code to}] against Redis
     * ({@link io.lockstep.scheduler.BackfillPlan}: what it would run, or one line saying why it cannot).
     *
     * @throws IllegalArgumentException when it cannot be done
     * @throws UnsupportedOperationException on Redlock
     */
    public io.lockstep.scheduler.BackfillPlan backfillPlan(io.lockstep.scheduler.JobDefinition job, Instant from, Instant to) {
        return io.lockstep.scheduler.BackfillPlan.of(job, from, to, provider);
    }

    /**
     * Asks for a backfill of {@code job} ({@code lockstep backfill}; see {@link io.lockstep.scheduler.lock.Backfill}):
     * every undecided slot of its schedule in [{@code from}, {@code to}] runs once, in slot order, at most
     * {@code perSecond} a second, driven by one live worker that runs the job.
     *
     * @throws IllegalArgumentException when it cannot be done ({@link #backfillPlan})
     * @throws IllegalStateException when the job has a backfill running
     * @throws UnsupportedOperationException on Redlock
     */
    public io.lockstep.scheduler.lock.Backfill backfill(io.lockstep.scheduler.JobDefinition job, Instant from, Instant to,
            double perSecond, String by) {
        return backfill(backfillPlan(job, from, to), perSecond, by);
    }

    /** Asks for the backfill {@code plan} checked ({@link #backfillPlan}). */
    public io.lockstep.scheduler.lock.Backfill backfill(io.lockstep.scheduler.BackfillPlan plan, double perSecond, String by) {
        io.lockstep.scheduler.lock.Backfill b = plan.request(provider, perSecond, by);
        record(plan.job().name(), "backfill", by, b.from() + " to " + b.to() + " at " + perSecond + "/s");
        return b;
    }

    /** Cancels {@code job}'s backfill: no slot is claimed for it once this returns; empty when it had none. */
    public java.util.Optional<io.lockstep.scheduler.lock.Backfill> cancelBackfill(String job) {
        return provider.cancelBackfill(job);
    }

    /** Every backfill kept (running, ended or cancelled, a week after its last write), with its progress. */
    public List<io.lockstep.scheduler.lock.Backfill.Entry> backfills() {
        return provider.backfills();
    }

    /** Each limit's holders and waiters ({@code limits:}, name -> size); none on Redlock, which keeps no limits. */
    public Map<String, io.lockstep.scheduler.lock.Permits.State> limits(Map<String, Integer> limits) {
        return limits.isEmpty() ? Map.of() : provider.permits().map(p -> p.states(limits)).orElse(Map.of());
    }

    /** Where each job's expectations stand ({@code expect:}); none on Redlock, which does not judge them. */
    public Map<String, io.lockstep.scheduler.lock.Expectations.State> expectations(List<String> jobs) {
        return provider.expectations().map(e -> e.states(jobs)).orElse(Map.of());
    }

    /** Requests one manual run of {@code job} now; answers its slot (see {@link #runOf}). */
    public Instant trigger(String job) {
        return trigger(job, "");
    }

    /** {@link #trigger(String)}, recorded as asked by {@code by} ({@link #actions}: {@code detail} is the slot). */
    public Instant trigger(String job, String by) {
        Instant slot;
        if (redlock != null) {
            // One slot for all masters: the time by which a majority of their clocks have passed.
            Instant at = OperatorCommands.manualSlot(provider.serverTimeMillis());
            onMasters("trigger", a -> a.provider.members().commands().trigger(job, at));
            slot = at;
        } else {
            slot = provider.members().commands().trigger(job);
        }
        record(job, "trigger", by, slot.toString());
        return slot;
    }

    /**
     * The record of one slot of {@code job} ({@code state}, {@code outcome}, {@code worker},
     * {@code fence}, ...); empty while no worker decided it.
     */
    public Map<String, String> runOf(String job, Instant slot) {
        if (redlock != null) {
            // The most advanced record any master has (done over running over none).
            return onMasters("status", a -> a.runOf(job, slot)).stream()
                    .max(java.util.Comparator.comparingInt(r -> r.isEmpty() ? 0 : "running".equals(r.get("state")) ? 1 : 2))
                    .orElse(Map.of());
        }
        try {
            return jedis.hgetAll(keys.slot(job, slot.toEpochMilli()));
        } catch (JedisException e) {
            throw calls.wrap("status", e);
        }
    }
}
