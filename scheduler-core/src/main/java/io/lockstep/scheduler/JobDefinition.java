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
 * @param timeout the longest a run may take before it is interrupted; {@link Duration#ZERO} for none
 * @param enabled a disabled job is loaded and validated but never scheduled
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
        boolean enabled) {

    /** The pattern every job name follows. */
    public static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9._-]*");
    /** The shortest lease: renewals every lease/3 must have room for a round trip and a pause. */
    public static final Duration MIN_LEASE = Duration.ofSeconds(1);
    public static final Duration DEFAULT_LEASE = Duration.ofSeconds(30);
    public static final Duration DEFAULT_MISFIRE_GRACE = Duration.ofSeconds(10);
    public static final Overlap DEFAULT_OVERLAP = Overlap.SKIP;
    public static final Duration DEFAULT_TIMEOUT = Duration.ZERO;

    public JobDefinition {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(schedule, "schedule");
        Objects.requireNonNull(jobClass, "jobClass");
        Objects.requireNonNull(lease, "lease");
        Objects.requireNonNull(misfireGrace, "misfireGrace");
        Objects.requireNonNull(overlap, "overlap");
        Objects.requireNonNull(timeout, "timeout");
        if (!NAME.matcher(name).matches()) {
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
        params = Collections.unmodifiableMap(new LinkedHashMap<>(params == null ? Map.of() : params));
    }

    /** A definition with every policy at its default. */
    public static JobDefinition of(String name, CronSchedule schedule, Class<? extends Job> jobClass) {
        return new JobDefinition(name, schedule, jobClass.getName(), Map.of(), DEFAULT_LEASE,
                DEFAULT_MISFIRE_GRACE, DEFAULT_OVERLAP, DEFAULT_TIMEOUT, true);
    }
}
