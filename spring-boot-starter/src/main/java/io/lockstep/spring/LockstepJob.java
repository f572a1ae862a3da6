package io.lockstep.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Declares a bean method as a Lockstep job: exactly one instance of the application runs it per
 * slot of its cron, cluster-wide. The method takes no argument or a
 * {@link io.lockstep.scheduler.JobContext}; what it throws is the run's failure. Every attribute
 * takes {@code ${...}} placeholders, and is checked as the same key of the YAML is (an empty one
 * takes the YAML's {@code defaults:}, else the built-in default); a mistake stops the application
 * at startup with one line per problem naming the method.
 *
 * <pre>{@code
 * @Component
 * class Reports {
 *     @LockstepJob(name = "nightly-report", cron = "${reports.cron:0 0 2 * * *}", zone = "Europe/Paris", lease = "5m")
 *     void nightly(JobContext run) { ... }
 * }
 * }</pre>
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface LockstepJob {

    /** The job's name: lowercase letters, digits, '.', '_' and '-'. */
    String name();

    /** Cron with seconds ({@code sec min hour day month weekday}) or without (5 fields). */
    String cron();

    /** The time zone the cron is read in (default: the YAML's defaults, else UTC). */
    String zone() default "";

    /** How long a run holds its lease between renewals, e.g. {@code 30s}. */
    String lease() default "";

    /** How late a slot may still start, e.g. {@code 10s}. */
    String misfireGrace() default "";

    /** {@code skip} | {@code allow} | {@code replace}. */
    String overlap() default "";

    /** {@code rerun} | {@code none}: what becomes of a run whose worker died. */
    String recover() default "";

    /** {@code none} | {@code latest} | {@code all}: slots the whole cluster missed while down. */
    String catchUp() default "";

    /** How long an attempt may run before it is interrupted ({@code 0}: no limit). */
    String timeout() default "";

    /** {@code true} | {@code false}: a disabled job claims nothing. */
    String enabled() default "";

    /** A stable offset below this shifts every slot (e.g. {@code 5m}), hashed from the job's name. */
    String jitter() default "";

    /** Calendars whose days this job skips: {@link io.lockstep.scheduler.JobCalendar} beans or the YAML's {@code calendars}. */
    String[] skipOn() default {};

    /** Calendars outside of which this job skips (all must contain a slot for it to run). */
    String[] onlyOn() default {};

    /**
     * The YAML's {@code expect.succeededWithin}: each slot must succeed within this time of its
     * instant (e.g. {@code 15m}), else the cluster reports {@code expectation_breached} once.
     */
    String expectSucceededWithin() default "";

    /**
     * The YAML's {@code expect.successEvery}: a dead-man's switch, at least one success in any such
     * window (e.g. {@code 26h}), whatever the cron.
     */
    String expectSuccessEvery() default "";

    /**
     * The YAML's {@code uses}: the cluster-wide limits a run holds a permit of, each named in
     * {@code limits:} of the YAML or in {@code lockstep.limits.*}.
     */
    String[] uses() default {};
}
