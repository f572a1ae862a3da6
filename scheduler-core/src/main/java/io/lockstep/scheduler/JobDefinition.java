package io.lockstep.scheduler;

import io.lockstep.scheduler.cron.CronSchedule;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * One scheduled job: its name, schedule and the policies that govern each run. Immutable.
 *
 * @param name unique name, {@code [a-z0-9][a-z0-9._-]*}; part of every Redis key of the job
 * @param schedule the cron expression and its zone
 * @param jobClass the fully qualified name of the {@link Job} class
 * @param params the {@code params} map handed to every run (copied, read-only)
 * @param lease how long a claim lives without renewal; the watchdog renews every lease/3
 * @param misfireGrace how late a slot may still start; later it is reported missed
 * @param overlap what a slot does while the previous run still holds its lease
 * @param timeout the longest one attempt may take before it is interrupted; {@link Duration#ZERO} for none
 * @param enabled a disabled job is loaded and validated but never scheduled
 * @param retry how often a failed run is tried again within its slot
 * @param recover what happens to a slot whose run lost its lease without an outcome
 * @param catchUp what the first worker back does with slots that passed while the whole cluster was down
 * @param catchUpWindow how far back, from the moment a worker starts, missed slots are caught up or reported
 * @param calendars the calendars that exclude some of its slots ({@code skipOn}, {@code onlyOn}):
 *     each excluded slot is recorded skipped, reason {@code calendar}
 * @param runOn which workers may run it ({@code runOn: {labels: [...]}})
 * @param expect what it is expected to achieve ({@code expect:}), judged by {@link ExpectationKeeper}
 * @param uses the cluster-wide limits its runs use ({@code uses:}), each with its size (the
 *     {@code limits:} entry): a run takes a permit of each before its job begins ({@link LimitPermits})
 */
public record JobDefinition(
        String name,
        CronSchedule schedule,
        String jobClass,
        Map<String, Object> params,
        Duration lease,
        Duration misfireGrace,
        Overlap overlap,
        Duration timeout,
        boolean enabled,
        Retry retry,
        Recover recover,
        CatchUp catchUp,
        Duration catchUpWindow,
        Calendars calendars,
        RunOn runOn,
        Expect expect,
        java.util.SortedMap<String, Integer> uses) {

    /** The pattern every job name follows. */
    public static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9._-]*");
    /**
     * An instance of an every-worker job on one worker ({@link RunOn#instance}): the job's name, {@code @}, the
     * worker's id (no spaces, braces or {@code @}). Only the scheduler makes these; a config's names follow {@link #NAME}.
     */
    public static final Pattern INSTANCE_NAME = Pattern.compile("[a-z0-9][a-z0-9._-]*@[^\\s{}@]+");
    /**
     * The one name no configured job may take: every worker claims, renews, completes and recovers a
     * probe slot of a job of this name at start (the start check of the Redis lock provider), so a
     * real job of this name would see its marks (last slot, runs in flight) moved by every start.
     * The config loader rejects it.
     */
    public static final String PREFLIGHT_NAME = "lockstep-preflight";
    /** The shortest lease: renewals every lease/3 must have room for a round trip and a pause. */
    public static final Duration MIN_LEASE = Duration.ofSeconds(1);
    public static final Duration DEFAULT_LEASE = Duration.ofSeconds(30);
    public static final Duration DEFAULT_MISFIRE_GRACE = Duration.ofSeconds(10);
    /** The shortest grace: a slot starts some milliseconds after its time, more under load. */
    public static final Duration MIN_MISFIRE_GRACE = Duration.ofSeconds(1);
    /**
     * How late a manual run ({@code trigger}) may still start, at least: workers hear of a trigger
     * with their next heartbeat, so a few heartbeats, and never less than the job's own grace.
     */
    public static final Duration MANUAL_GRACE = Duration.ofSeconds(30);
    /**
     * How long before its slot a worker may claim a slot (the preferred claimer decides it this far
     * ahead, by Redis time): read by the scheduler and by the audit, which allows a worker that
     * vanished this much of the future it may have decided without a word.
     */
    public static final Duration CLAIM_AHEAD = Duration.ofMillis(250);
    public static final Overlap DEFAULT_OVERLAP = Overlap.SKIP;
    public static final Duration DEFAULT_TIMEOUT = Duration.ZERO;
    public static final Retry DEFAULT_RETRY = Retry.NONE;
    public static final Recover DEFAULT_RECOVER = Recover.NONE;
    public static final CatchUp DEFAULT_CATCH_UP = CatchUp.NONE;
    public static final Duration DEFAULT_CATCH_UP_WINDOW = Duration.ofHours(1);
    /**
     * The longest catch-up window: the marker of the last slot the cluster decided lives this long
     * (every key Lockstep writes has a ttl), so a cluster down longer catches up nothing.
     */
    public static final Duration MAX_CATCH_UP_WINDOW = io.lockstep.scheduler.lock.ClaimRequest.LAST_SLOT_TTL;

    public JobDefinition {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(schedule, "schedule");
        Objects.requireNonNull(jobClass, "jobClass");
        Objects.requireNonNull(lease, "lease");
        Objects.requireNonNull(misfireGrace, "misfireGrace");
        Objects.requireNonNull(overlap, "overlap");
        Objects.requireNonNull(timeout, "timeout");
        Objects.requireNonNull(retry, "retry");
        Objects.requireNonNull(recover, "recover");
        Objects.requireNonNull(catchUp, "catchUp");
        Objects.requireNonNull(catchUpWindow, "catchUpWindow");
        Objects.requireNonNull(calendars, "calendars");
        Objects.requireNonNull(runOn, "runOn");
        Objects.requireNonNull(expect, "expect");
        uses = java.util.Collections.unmodifiableSortedMap(new java.util.TreeMap<>(uses == null ? Map.of() : uses));
        uses.forEach((limit, size) -> {
            if (!NAME.matcher(limit).matches() || size < 1) {
                throw new IllegalArgumentException("limit " + limit + " of " + size + ": a name like " + NAME + " and at least 1 permit");
            }
        });
        if (!NAME.matcher(name).matches() && !INSTANCE_NAME.matcher(name).matches()) {
            throw new IllegalArgumentException("job name must match " + NAME + ", but was \"" + name + "\"");
        }
        if (lease.compareTo(MIN_LEASE) < 0) {
            throw new IllegalArgumentException("lease must be at least 1s, but was " + lease);
        }
        if (misfireGrace.isNegative()) {
            throw new IllegalArgumentException("misfireGrace must not be negative, but was " + misfireGrace);
        }
        if (timeout.isNegative()) {
            throw new IllegalArgumentException("timeout must not be negative, but was " + timeout);
        }
        if (catchUpWindow.isNegative() || catchUpWindow.compareTo(MAX_CATCH_UP_WINDOW) > 0) {
            throw new IllegalArgumentException("catchUpWindow must be between 0s and 7d, but was " + catchUpWindow);
        }
        params = Collections.unmodifiableMap(new LinkedHashMap<>(params == null ? Map.of() : params));
    }

    /** A definition that uses no limit. */
    public JobDefinition(String name, CronSchedule schedule, String jobClass, Map<String, Object> params, Duration lease,
            Duration misfireGrace, Overlap overlap, Duration timeout, boolean enabled, Retry retry, Recover recover,
            CatchUp catchUp, Duration catchUpWindow, Calendars calendars, RunOn runOn, Expect expect) {
        this(name, schedule, jobClass, params, lease, misfireGrace, overlap, timeout, enabled, retry, recover, catchUp,
                catchUpWindow, calendars, runOn, expect, null);
    }

    /** A definition without expectations. */
    public JobDefinition(String name, CronSchedule schedule, String jobClass, Map<String, Object> params, Duration lease,
            Duration misfireGrace, Overlap overlap, Duration timeout, boolean enabled, Retry retry, Recover recover,
            CatchUp catchUp, Duration catchUpWindow, Calendars calendars, RunOn runOn) {
        this(name, schedule, jobClass, params, lease, misfireGrace, overlap, timeout, enabled, retry, recover, catchUp,
                catchUpWindow, calendars, runOn, Expect.NONE, null);
    }

    /** A definition without calendars, run on any worker. */
    public JobDefinition(String name, CronSchedule schedule, String jobClass, Map<String, Object> params, Duration lease,
            Duration misfireGrace, Overlap overlap, Duration timeout, boolean enabled, Retry retry, Recover recover,
            CatchUp catchUp, Duration catchUpWindow) {
        this(name, schedule, jobClass, params, lease, misfireGrace, overlap, timeout, enabled, retry, recover, catchUp,
                catchUpWindow, Calendars.NONE, RunOn.ANY);
    }

    /** A definition with retry, recover and catch-up at their defaults. */
    public JobDefinition(String name, CronSchedule schedule, String jobClass, Map<String, Object> params,
            Duration lease, Duration misfireGrace, Overlap overlap, Duration timeout, boolean enabled) {
        this(name, schedule, jobClass, params, lease, misfireGrace, overlap, timeout, enabled, DEFAULT_RETRY,
                DEFAULT_RECOVER, DEFAULT_CATCH_UP, DEFAULT_CATCH_UP_WINDOW);
    }

    /** A definition with every policy at its default. */
    public static JobDefinition of(String name, CronSchedule schedule, Class<? extends Job> jobClass) {
        return new JobDefinition(name, schedule, jobClass.getName(), Map.of(), DEFAULT_LEASE,
                DEFAULT_MISFIRE_GRACE, DEFAULT_OVERLAP, DEFAULT_TIMEOUT, true);
    }

    public JobDefinition withRetry(Retry retry) {
        return new JobDefinition(name, schedule, jobClass, params, lease, misfireGrace, overlap, timeout, enabled,
                retry, recover, catchUp, catchUpWindow, calendars, runOn, expect, uses);
    }

    public JobDefinition withRecover(Recover recover) {
        return new JobDefinition(name, schedule, jobClass, params, lease, misfireGrace, overlap, timeout, enabled,
                retry, recover, catchUp, catchUpWindow, calendars, runOn, expect, uses);
    }

    public JobDefinition withCatchUp(CatchUp catchUp, Duration catchUpWindow) {
        return new JobDefinition(name, schedule, jobClass, params, lease, misfireGrace, overlap, timeout, enabled,
                retry, recover, catchUp, catchUpWindow, calendars, runOn, expect, uses);
    }

    public JobDefinition withCalendars(Calendars calendars) {
        return new JobDefinition(name, schedule, jobClass, params, lease, misfireGrace, overlap, timeout, enabled,
                retry, recover, catchUp, catchUpWindow, calendars, runOn, expect, uses);
    }

    public JobDefinition withRunOn(RunOn runOn) {
        return new JobDefinition(name, schedule, jobClass, params, lease, misfireGrace, overlap, timeout, enabled,
                retry, recover, catchUp, catchUpWindow, calendars, runOn, expect, uses);
    }

    public JobDefinition withExpect(Expect expect) {
        return new JobDefinition(name, schedule, jobClass, params, lease, misfireGrace, overlap, timeout, enabled,
                retry, recover, catchUp, catchUpWindow, calendars, runOn, expect, uses);
    }

    /** This job using {@code uses} (limit -> its size) instead. */
    public JobDefinition withUses(Map<String, Integer> uses) {
        return new JobDefinition(name, schedule, jobClass, params, lease, misfireGrace, overlap, timeout, enabled,
                retry, recover, catchUp, catchUpWindow, calendars, runOn, expect, new java.util.TreeMap<>(uses));
    }

    /** This every-worker job's instance on worker {@code workerId} ({@link RunOn#instance}): the same job under the instance's name. */
    public JobDefinition instanceFor(String workerId) {
        return new JobDefinition(RunOn.instance(name, workerId), schedule, jobClass, params, lease, misfireGrace, overlap, timeout,
                enabled, retry, recover, catchUp, catchUpWindow, calendars, runOn, expect, uses);
    }

    /**
     * The slots of this job's schedule in [{@code from}, {@code to}], oldest first: a backfill's
     * ({@link io.lockstep.scheduler.lock.Backfill}).
     *
     * @throws IllegalArgumentException when there are more than {@link io.lockstep.scheduler.lock.Backfill#MAX_SLOTS}
     */
    public java.util.List<java.time.Instant> slots(java.time.Instant from, java.time.Instant to) {
        java.util.List<java.time.Instant> slots = new java.util.ArrayList<>();
        java.time.Instant at = from.minusMillis(1);
        while (true) {
            java.util.Optional<java.time.Instant> next = schedule.next(at);
            if (next.isEmpty() || next.get().isAfter(to)) {
                return slots;
            }
            if (slots.size() == io.lockstep.scheduler.lock.Backfill.MAX_SLOTS) {
                throw new IllegalArgumentException("a backfill of " + name + " from " + from + " to " + to + " has more than "
                        + io.lockstep.scheduler.lock.Backfill.MAX_SLOTS + " slots: split it into shorter ranges");
            }
            slots.add(next.get());
            at = next.get();
        }
    }

    /** Whether one run at a time holds the job's single lease ({@code skip} and {@code replace}). */
    public boolean exclusive() {
        return overlap != Overlap.ALLOW;
    }
}
