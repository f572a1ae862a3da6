package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.Outcome;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * The scheduler's meters (names as in DESIGN.md; Prometheus adds {@code _total} / {@code _seconds}).
 * Every tag is bounded: {@code job} by the config, {@code result}, {@code outcome} and
 * {@code reason} by the small vocabularies below, never a slot, token or error text. The seed's
 * four lock figures are ratios of these: hit rate = {@code claims{result="won"}} / all claims,
 * contention rate = {@code claims{result="contended"}} / all, average lock time =
 * {@code lease.held} sum / count, expiration rate = {@code leases.lost} / {@code claims{result="won"}}.
 */
final class SchedulerMetrics {

    /** Claim results: won, contended, done (decided before), skipped, missed, error. */
    static final String WON = "won";
    static final String CONTENDED = "contended";
    static final String DONE = "done";
    static final String SKIPPED = "skipped";
    static final String MISSED = "missed";
    static final String ERROR = "error";

    private final MeterRegistry registry;
    private final boolean given;
    /**
     * The meters recorded for every slot, by name and tags: building a meter's id (sorting its
     * tags) and looking it up in the registry costs more than recording, thousands of times a second.
     */
    private final java.util.concurrent.ConcurrentHashMap<Key, io.micrometer.core.instrument.Meter> hot =
            new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * A meter of {@link #hot}: its kind, job and one tag's value. Its parts keep their hash codes (a
     * job's name, a constant), where a key built as one string was built and hashed anew on every
     * record (a share of a worker's CPU per slot, by JFR).
     */
    private record Key(String kind, String job, String detail) {}

    SchedulerMetrics(MeterRegistry registry) {
        this(registry, true);
    }

    /**
     * @param given whether the registry was given (read by someone); the scheduler's own default,
     *     an empty composite nobody can reach, gets no counters at zero per job (~2 KB of heap each)
     */
    SchedulerMetrics(MeterRegistry registry, boolean given) {
        this.registry = registry;
        this.given = given;
    }


    /** Meters nobody reads (a registry without backends drops everything). */
    static SchedulerMetrics none() {
        return new SchedulerMetrics(new io.micrometer.core.instrument.composite.CompositeMeterRegistry());
    }

    /** The gauges: busy job threads, and whether the lock store answers. */
    void bind(JobThreads threads, BooleanSupplier redisUp) {
        Gauge.builder("lockstep.threads.busy", threads, JobThreads::busy).description("job threads running a job now")
                .register(registry);
        Gauge.builder("lockstep.redis.up", redisUp, up -> up.getAsBoolean() ? 1 : 0).strongReference(true) // a lambda: keep it
                .description("1 while the lock store answers, 0 during an outage").register(registry);
    }

    /** The number of jobs on which live workers disagree ({@code config_drift}), as this worker last saw. */
    /**
     * Each job's counters at zero from the first scrape, with the label an alert or a rate reads
     * most (Prometheus's advice: a series that appears only with its first event gives
     * {@code rate()} and the README's alerts no data instead of 0): slots missed ({@code late}) and
     * skipped ({@code overlap}), leases lost ({@code expired}), runs succeeded and failed.
     */
    void registerJobs(java.util.Collection<String> jobs) {
        if (!given) {
            return; // nobody reads them (no meter registry was given): five counters per job would cost ~2 KB of heap each
        }
        for (String job : jobs) {
            Counter.builder("lockstep.slots.missed").description("slots reported missed, by reason").tags("job", job, "reason", "late")
                    .register(registry);
            Counter.builder("lockstep.slots.skipped").description("slots skipped, by reason").tags("job", job, "reason", "overlap")
                    .register(registry);
            Counter.builder("lockstep.leases.lost").description("leases lost while their run was alive").tags("job", job, "reason", "expired")
                    .register(registry);
            for (Outcome o : java.util.List.of(Outcome.SUCCEEDED, Outcome.FAILED)) {
                hot.computeIfAbsent(new Key("runs", job, o.label()), k -> Counter.builder("lockstep.runs").description("runs by outcome")
                        .tags("job", job, "outcome", o.label()).register(registry));
            }
        }
    }

    void bindDrift(java.util.function.IntSupplier jobsInDrift) {
        Gauge.builder("lockstep.config.drift", jobsInDrift, s -> s.getAsInt()).strongReference(true)
                .description("jobs whose definition differs between live workers").register(registry);
    }

    /** One claim attempt's result (won, contended, done, skipped, missed, error). */
    void claim(String job, String result) {
        ((Counter) hot.computeIfAbsent(new Key("claims", job, result), k -> Counter.builder("lockstep.claims")
                .description("claim attempts by result").tags("job", job, "result", result).register(registry))).increment();
    }

    /** Slots missed; reason: late, no_thread, order, unconfirmed, outage, fell_behind, cluster_down, catch_up. */
    void missed(String job, String reason, long count) {
        Counter.builder("lockstep.slots.missed").description("slots reported missed, by reason").tags("job", job, "reason", reason)
                .register(registry).increment(count);
    }

    /** An expectation breached ({@code lockstep_expectations_breached_total}); kind: succeededWithin, successEvery. Counted by the worker that logs it. */
    void expectationBreached(String job, String kind) {
        Counter.builder("lockstep.expectations.breached").description("expectations breached, by kind").tags("job", job, "kind", kind)
                .register(registry).increment();
    }

    /** Slots skipped; reason: overlap, paused. */
    void skipped(String job, String reason) {
        Counter.builder("lockstep.slots.skipped").description("slots skipped, by reason").tags("job", job, "reason", reason)
                .register(registry).increment();
    }

    /** A job started this late after its slot (the cluster's clock). */
    void started(String job, Duration lateness) {
        ((Timer) hot.computeIfAbsent(new Key("lateness", job, ""), k -> Timer.builder("lockstep.start.lateness")
                .description("from a slot's time to its job's start").tags("job", job)
                // A few fixed buckets (not Micrometer's ~70 percentile buckets): one series each per job.
                .serviceLevelObjectives(Duration.ofMillis(10), Duration.ofMillis(25), Duration.ofMillis(50), Duration.ofMillis(100),
                        Duration.ofMillis(250), Duration.ofMillis(500), Duration.ofSeconds(1), Duration.ofSeconds(5))
                .register(registry))).record(lateness.isNegative() ? Duration.ZERO : lateness);
    }

    /** A run ended: its outcome (succeeded, failed, timed_out, lost, interrupted) and how long it ran. */
    void ran(String job, Outcome outcome, long durationNanos) {
        String o = outcome == Outcome.LEASE_LOST ? "lost" : outcome.label();
        ((Counter) hot.computeIfAbsent(new Key("runs", job, o), k -> Counter.builder("lockstep.runs").description("runs by outcome")
                .tags("job", job, "outcome", o).register(registry))).increment();
        ((Timer) hot.computeIfAbsent(new Key("duration", job, o), k -> Timer.builder("lockstep.run.duration")
                .description("from a run's first attempt to its end").tags("job", job, "outcome", o).register(registry)))
                .record(durationNanos, TimeUnit.NANOSECONDS);
    }

    /** A lease was held this long: from the claim to the outcome written. */
    /** A run whose outcome came after its slot was no longer its own (recorded late, or not). */
    void late(String job, Outcome outcome) {
        Counter.builder("lockstep.runs.late").description("runs that ended after their slot was no longer theirs, by outcome")
                .tags("job", job, "outcome", outcome.label()).register(registry).increment();
    }

    void leaseHeld(String job, long nanos) {
        ((Timer) hot.computeIfAbsent(new Key("held", job, ""), k -> Timer.builder("lockstep.lease.held")
                .description("from a claim won to its lease given back").tags("job", job).register(registry)))
                .record(nanos, TimeUnit.NANOSECONDS);
    }

    /** A lease was lost; reason: expired (its deadline passed), revoked (the store said so), before_start. */
    void leaseLost(String job, String reason) {
        Counter.builder("lockstep.leases.lost").description("leases lost while their run was alive").tags("job", job, "reason", reason)
                .register(registry).increment();
    }
}
