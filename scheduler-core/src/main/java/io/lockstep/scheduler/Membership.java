package io.lockstep.scheduler;

import io.lockstep.scheduler.Fingerprints.Drift;
import io.lockstep.scheduler.lock.Heartbeat;
import io.lockstep.scheduler.lock.InForce;
import io.lockstep.scheduler.lock.LockProvider;
import io.lockstep.scheduler.lock.WorkerInfo;
import java.net.InetAddress;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * This worker's place in the cluster: a heartbeat every {@link #INTERVAL} on the
 * {@code lockstep-heartbeat} thread (one small write; the reply lists the live workers), and
 * config drift: when a live worker's job definitions differ from ours, a {@code config_drift} WARN
 * names the job, the workers and the fields, once, and {@code config_drift_resolved} follows
 * when the cluster agrees again. The reply also carries manual runs ({@code trigger}): each new one
 * is handed to the scheduler once, and every worker then races for it like for a slot. A failed heartbeat is retried at the next
 * beat and told to {@link Outage} (so an idle worker's readiness follows it); a worker that misses
 * heartbeats for {@link #TTL} simply drops out of the list.
 */
final class Membership {

    static final Duration INTERVAL = WorkerInfo.HEARTBEAT_INTERVAL;
    static final Duration TTL = WorkerInfo.HEARTBEAT_TTL;
    /**
     * A failed heartbeat is an outage unless another call to the store succeeded this recently: a
     * worker with per-second jobs claims every second, so one whose heartbeat's shard alone is down
     * stays ready while it claims on the others; an idle worker is reported within a heartbeat.
     */
    static final Duration OTHER_CALLS_WINDOW = Duration.ofSeconds(1);

    private final LockProvider provider;
    private final Events events;
    private final String workerId;
    private final JobThreads threads;
    private final ClusterClock clock;
    /** Our job definitions; their descriptions are made when needed (publishing, drift), not kept: 10,000 jobs' JSON is megabytes. */
    private volatile List<JobDefinition> definitions;
    private volatile String configHash;
    private final String host;
    private final String version;
    private final Map<String, Map<String, String>> peerConfigs = new HashMap<>();
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "lockstep-heartbeat");
        t.setDaemon(true);
        return t;
    });
    private volatile Instant started;
    /** This worker's labels, published with each heartbeat ({@link WorkerInfo#labels}). */
    private volatile java.util.Set<String> labels = java.util.Set.of();
    private volatile boolean draining;
    /** Told once when a heartbeat carries an operator's drain request ({@link Heartbeat#drainWithin}). */
    private final java.util.function.Consumer<java.time.Duration> drainRequested;
    private boolean drainTold;
    /** When this worker last stamped its jobs in force ({@link System#nanoTime}); 0: the last stamp did not land. */
    private volatile long stampedAt;
    /** Whether a stamp of this worker's life landed: its first one starts new runs of disabled stamps. */
    private volatile boolean stampedOnce;
    private volatile List<WorkerInfo> live = List.of();
    private volatile List<Drift> drift = List.of();
    /** The live workers whose config shares no job with ours, as last warned of ({@code prefix_shared}). */
    private List<String> strangers = List.of();
    /**
     * Manual runs already handed on (job + slot), so each is queued once per worker; one of a job
     * this worker does not run (yet: a reload may add it) is offered again at each heartbeat.
     */
    private final Set<Heartbeat.Trigger> handed = new java.util.HashSet<>();
    private final java.util.function.Predicate<Heartbeat.Trigger> triggered;

    /**
     * Called when a worker left the live list (a clean stop, or its heartbeat aged out): a stopping
     * worker hands its cut-off runs over ({@code recover: rerun}) and its claims made ahead back, so
     * every job's runs in flight are looked at now rather than at their lease end.
     */
    private final Runnable departed;
    /** Told of each heartbeat's result: an idle worker's readiness follows its heartbeat. */
    private final Outage outage;

    Membership(LockProvider provider, Events events, Outage outage, String workerId, JobThreads threads, ClusterClock clock,
            List<JobDefinition> definitions, java.util.function.Predicate<Heartbeat.Trigger> triggered, Runnable departed,
            java.util.function.Consumer<java.time.Duration> drainRequested) {
        this.drainRequested = drainRequested;
        this.outage = outage;
        this.triggered = triggered;
        this.departed = departed;
        this.provider = provider;
        this.events = events;
        this.workerId = workerId;
        this.threads = threads;
        this.clock = clock;
        this.definitions = List.copyOf(definitions);
        this.configHash = Fingerprints.hash(Fingerprints.describe(definitions));
        this.host = hostName();
        String v = Membership.class.getPackage().getImplementationVersion();
        this.version = v != null ? v : "dev";
    }

    /** The hash of this worker's job definitions. */
    String configHash() {
        return configHash;
    }

    /**
     * A reload put {@code definitions} in force: from now on the heartbeat carries their hash (so
     * the drift check follows the rollout), published at once when started (best effort: the
     * heartbeat publishes it again if the store missed it).
     */
    void update(List<JobDefinition> definitions) {
        synchronized (this) {
            this.definitions = List.copyOf(definitions);
            this.configHash = Fingerprints.hash(Fingerprints.describe(definitions));
        }
        if (started != null) {
            try {
                provider.publishConfig(configHash, Fingerprints.describe(definitions));
            } catch (RuntimeException e) {
                // The next heartbeat is answered 'not published' and publishes it.
            }
            stampQuietly(); // jobs newly enabled or disabled are, from now on
            beatQuietly();
        }
    }

    /**
     * Publishes our job definitions and sends the first heartbeat; then beats on a timer.
     *
     * @throws io.lockstep.scheduler.lock.LockException when the store cannot be reached
     */
    void start() {
        started = clock.now();
        provider.publishConfig(configHash, Fingerprints.describe(definitions));
        beat(); // stamps the jobs in force, too
        timer.scheduleWithFixedDelay(this::beatQuietly, INTERVAL.toMillis(), INTERVAL.toMillis(), TimeUnit.MILLISECONDS);
    }

    /**
     * The worker is stopping: from now on its heartbeat says so, and peers stop preferring it for
     * slots (it claims nothing new) while it drains; one heartbeat goes out at once (best effort).
     */
    void drain() {
        draining = true;
        if (started != null) {
            beatQuietly();
        }
    }

    /** Stops beating and leaves the cluster's list at once. */
    void stop() {
        timer.shutdownNow();
        if (stampedAt != 0 && outage.up()) {
            stampQuietly(); // the last word on which jobs were disabled up to now (skipped when the store is known down)
        }
        try {
            provider.leave(workerId);
        } catch (RuntimeException e) {
            // Best effort: the entry ages out after TTL anyway.
        }
    }

    /** The live workers as of the last heartbeat (this one included). */
    List<WorkerInfo> live() {
        return live;
    }

    /** Jobs on which live workers disagree, as of the last heartbeat. */
    List<Drift> drift() {
        return drift;
    }

    private void beatQuietly() {
        try {
            beat();
            outage.heartbeatSucceeded();
        } catch (RuntimeException e) {
            outage.heartbeatFailed(e, OTHER_CALLS_WINDOW);
        } catch (Error e) {
            events.debug("heartbeat_failed").addKeyValue("error", Events.describe(e)).log("heartbeat not written; trying again");
        }
    }

    /**
     * Stamps this config's enabled jobs and the cluster as in force ({@link InForce}); best effort,
     * sent again with a later heartbeat when it did not land.
     */
    private void stampQuietly() {
        List<JobDefinition> jobs = definitions;
        try {
            provider.stampInForce(jobs.stream().filter(JobDefinition::enabled).map(JobDefinition::name).toList(),
                    jobs.stream().filter(d -> !d.enabled()).map(JobDefinition::name).toList(), !stampedOnce);
            stampedAt = System.nanoTime();
            stampedOnce = true;
        } catch (RuntimeException | Error e) {
            stampedAt = 0; // again with the next heartbeat
        }
    }

    /** Told the backfills each heartbeat brings ({@link BackfillDriver#heard}). */
    private volatile java.util.function.Consumer<List<io.lockstep.scheduler.lock.Backfill.Entry>> backfills = b -> {};

    /** Who is told the backfills each heartbeat brings (set once, before the first). */
    void onBackfills(java.util.function.Consumer<List<io.lockstep.scheduler.lock.Backfill.Entry>> backfills) {
        this.backfills = backfills;
    }

    /** This worker's labels, for its heartbeats (set once, before the first). */
    void labels(java.util.Set<String> labels) {
        this.labels = java.util.Set.copyOf(labels);
    }

    /** One heartbeat; synchronized: the timer's and {@link #drain()}'s may meet. */
    private synchronized void beat() {
        WorkerInfo self = new WorkerInfo(workerId, host, ProcessHandle.current().pid(), version, started, threads.size,
                threads.busy(), configHash, clock.now(), draining, labels);
        long sent = System.nanoTime();
        Heartbeat reply = provider.heartbeat(self, TTL);
        String hash = configHash;
        boolean keeper = reply.workers().stream().filter(w -> w.configHash().equals(hash)).map(WorkerInfo::id).min(String::compareTo)
                .map(workerId::equals).orElse(true);
        if (stampedAt == 0 || keeper && System.nanoTime() - stampedAt >= InForce.STAMP_EVERY.toNanos()) {
            stampQuietly(); // one worker per config keeps its jobs' stamps; any worker sends one that did not land
        }
        if (!reply.configPublished()) {
            provider.publishConfig(configHash, Fingerprints.describe(definitions)); // Redis lost it (a restart, a failover)
        }
        if (reply.serverTimeMillis() > 0) {
            clock.sample(reply.serverTimeMillis(), sent, System.nanoTime()); // the only idle traffic is this heartbeat
        }
        List<WorkerInfo> before = live;
        live = reply.workers();
        Set<String> now = new java.util.HashSet<>();
        live.forEach(w -> now.add(w.id()));
        if (before.stream().anyMatch(w -> !w.id().equals(workerId) && !now.contains(w.id()))) {
            departed.run();
        }
        checkDrift();
        if (reply.drainWithin() != null && !drainTold) {
            drainTold = true;
            drainRequested.accept(reply.drainWithin());
        }
        backfills.accept(reply.backfills()); // each driver here not among them stops
        handed.retainAll(reply.triggers());
        for (Heartbeat.Trigger t : reply.triggers()) {
            if (!handed.contains(t) && triggered.test(t)) {
                handed.add(t);
            }
        }
    }

    private void checkDrift() {
        Map<String, List<String>> workersByHash = new TreeMap<>();
        for (WorkerInfo w : live) {
            if (!w.configHash().equals(configHash)) {
                workersByHash.computeIfAbsent(w.configHash(), h -> new ArrayList<>()).add(w.id());
            }
        }
        peerConfigs.keySet().retainAll(workersByHash.keySet());
        Map<String, String> ours = workersByHash.isEmpty() ? Map.of() : Fingerprints.describe(definitions);
        java.util.function.Function<String, Map<String, String>> configOf = hash -> {
            Map<String, String> theirs = peerConfigs.computeIfAbsent(hash, provider::config);
            if (theirs.isEmpty()) {
                peerConfigs.remove(hash); // not published yet: ask again next time
            }
            return theirs;
        };
        List<Drift> now = Fingerprints.drift(ours, List.of(workerId), workersByHash, configOf);
        List<String> strange = Fingerprints.strangers(ours, workersByHash, configOf);
        if (!strange.isEmpty() && !strange.equals(strangers)) {
            events.warn("prefix_shared").addKeyValue("workers", String.join(",", strange))
                    .log("live workers under this key prefix share no job with this worker: another application on the same "
                            + "Redis and keyPrefix? Give each application its own redis.keyPrefix (their jobs are not drift)");
        }
        strangers = strange;
        Set<Drift> previous = Set.copyOf(drift);
        for (Drift d : now) {
            if (!previous.contains(d)) {
                events.warn("config_drift").addKeyValue("job", d.job()).addKeyValue("workers", String.join(",", d.workers()))
                        .addKeyValue("differences", String.join("; ", d.differences()))
                        .addKeyValue("rollout", Fingerprints.rollout(d.differences()))
                        .log("live workers disagree on a job's definition");
            }
        }
        if (now.isEmpty() && !drift.isEmpty()) {
            events.info("config_drift_resolved").log("live workers agree on every job again");
        }
        drift = now;
    }

    /** This host's name (or $HOSTNAME, or "unknown"). */
    static String hostName() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (Exception e) {
            return System.getenv().getOrDefault("HOSTNAME", "unknown");
        }
    }
}
