package io.lockstep.redis;

import io.lockstep.scheduler.config.RedisSettings;
import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.ClaimResult;
import io.lockstep.scheduler.lock.Completion;
import io.lockstep.scheduler.lock.Lease;
import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.Heartbeat;
import io.lockstep.scheduler.lock.LockProvider;
import io.lockstep.scheduler.lock.WorkerInfo;
import io.lockstep.scheduler.lock.RunsInFlight;
import io.lockstep.scheduler.lock.SlotState;
import io.lockstep.scheduler.lock.StartAnswer;
import io.lockstep.scheduler.lock.StartReply;
import io.lockstep.scheduler.lock.StartRequest;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import redis.clients.jedis.UnifiedJedis;

/**
 * The Redis lock store of the scheduler: claims, renewals and completions as owner-checked Lua
 * scripts, every batch in one pipelined round trip.
 *
 * <p>The keys are {@link RedisKeys}'. This class is the public face and decides, call by call,
 * who answers. On one server (or Sentinel, or Cluster) that is its {@link ServerStore}: the client
 * and the package-private helpers wired on it, {@link ClaimScripts} (claims, recoveries),
 * {@link SlotReads} (slot states, runs in flight, last slots), {@link LeaseScripts} (starts,
 * renewals, completions), {@link RedisMembers} (heartbeats, published configs) and
 * {@link RedisCalls} (the pipelines, NOSCRIPT, the wrapping of failures). With
 * {@code redis.redlock} every operation goes to {@link RedlockStore} instead, which asks each
 * master's own provider (each over a {@link ServerStore} of its own) and counts their answers.
 *
 * <p>Scripts are sent by {@code EVALSHA}, and again by {@code EVAL} to a server that forgot them
 * (only the calls it answered NOSCRIPT; every script is retry-safe per token anyway). Every Jedis failure is wrapped once, at this
 * boundary, in a one-line {@link LockException} naming the server.
 *
 * <p>Thread-safe; share one per process.
 */
public final class RedisLockProvider implements LockProvider {

    public static final String DEFAULT_KEY_PREFIX = "lockstep";
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(2);

    /**
     * At most this many slots (or completions) per script call: enough that a script's own cost is
     * spread thin, few enough that one call blocks the server for well under a millisecond.
     */
    static final int PER_CALL = RedisKeys.PER_CALL;
    public static final int DEFAULT_HISTORY_KEEP = 100;

    /** One server (or Sentinel, or Cluster): its client and the scripts on it; null for the Redlock facade. */
    private final ServerStore server;
    /** Redlock over several masters ({@code redis.redlock}); null otherwise. Every operation then goes there. */
    private final RedlockStore redlock;
    private final RedisKeys keys;

    /** One server (or Sentinel, or Cluster), the application's or one of Redlock's masters. */
    RedisLockProvider(ServerStore server) {
        this.server = server;
        this.redlock = null;
        this.keys = server.keys();
    }

    /** The Redlock facade over its masters' providers. */
    private RedisLockProvider(RedlockStore redlock, String prefix) {
        this.server = null;
        this.redlock = redlock;
        this.keys = new RedisKeys(prefix, false);
    }

    /**
     * {@link ClaimRequest#START_WINDOW} on one server, Sentinel or Cluster; zero on Redlock, whose
     * masters could each answer started or staged by their own clocks: every claim made ahead is
     * staged there and started by a start call, as before the window.
     */
    @Override
    public java.time.Duration startWindow() {
        return redlock != null ? java.time.Duration.ZERO : server.claims().startWindow();
    }

    /** A Redlock master: every claim made ahead is staged (see {@link #startWindow()}). */
    void stageEveryClaimAhead() {
        if (server != null) {
            server.claims().stageEveryClaimAhead();
        }
    }

    /** Redlock: the providers of its masters, in order; empty on one server, Sentinel or Cluster. */
    List<RedisLockProvider> masters() {
        return redlock == null ? List.of() : redlock.masters();
    }

    /** Redlock's quorum over its masters, or null. */
    RedlockStore redlock() {
        return redlock;
    }

    /** A builder; give it either a URI or a client of your own. */
    public static Builder builder() {
        return new Builder();
    }

    // ---------------------------------------------------------------- keys

    /** The keys this provider writes. */
    public RedisKeys keys() {
        return keys;
    }

    // The parts of this server's store, for Redlock's calls to each master, RedisAdmin and tests;
    // null on the Redlock facade, which has no server of its own.

    UnifiedJedis jedis() {
        return onServer(ServerStore::jedis);
    }

    RedisCalls calls() {
        return onServer(ServerStore::calls);
    }

    ClaimScripts claims() {
        return onServer(ServerStore::claims);
    }

    SlotReads reads() {
        return onServer(ServerStore::reads);
    }

    /** This server's in-force stamps (Redlock's per-master calls, tests). */
    RedisInForce inForceStamps() {
        return onServer(ServerStore::inForce);
    }

    RedisMembers members() {
        return onServer(ServerStore::members);
    }

    private <T> T onServer(java.util.function.Function<ServerStore, T> part) {
        return server == null ? null : part.apply(server);
    }

    @Override
    public String lockName(Lease lease) {
        // An exclusive job's lease is two fields of its group's marks (RedisKeys.lease): named by the field.
        return lease.exclusive() ? keys.lease(lease) + "[" + RedisKeys.markField(lease.job()) + "owner]" : keys.lease(lease);
    }

    // ---------------------------------------------------------------- operations
    // Each goes to Redlock's quorum when there is one (RedlockStore, RedlockMembers: they ask every
    // master's own provider), else to this server's scripts (ServerStore: ClaimScripts, SlotReads, LeaseScripts,
    // CheckpointScripts, RedisMembers, RedisInForce).

    @Override
    public List<ClaimResult> claim(List<ClaimRequest> requests) {
        return redlock != null ? redlock.claim(requests) : server.claims().claim(requests);
    }

    /**
     * {@inheritDoc} With {@code waitReplicas}, a start fewer replicas acknowledged is answered
     * {@link StartAnswer#UNCONFIRMED}: a failover could lose it and let a peer run the slot again, so
     * the run must not start (the scheduler then hands the claim back unstarted). On Redlock, a start
     * the masters split on is answered {@link StartAnswer#SPLIT} ({@link RedlockStore#start}).
     */
    @Override
    public List<StartReply> start(List<StartRequest> requests) {
        return redlock != null ? redlock.start(requests) : server.leases().start(requests).answers();
    }

    /** Redlock, on one master: {@link LeaseScripts#recordSplit}. */
    List<StartReply> recordSplit(List<StartRequest> requests) {
        return server.leases().recordSplit(requests).answers();
    }

    @Override
    public List<SlotState> slotStates(List<SlotState.Ref> slots) {
        return redlock != null ? redlock.slotStates(slots) : server.reads().slotStates(slots);
    }

    @Override
    public List<Boolean> renew(List<Lease> leases) {
        return redlock != null ? redlock.renew(leases) : server.leases().renew(leases);
    }

    @Override
    public List<Boolean> complete(List<Completion> completions) {
        return redlock != null ? redlock.complete(completions) : server.leases().complete(completions);
    }

    @Override
    public boolean checkpoint(io.lockstep.scheduler.lock.Lease lease, io.lockstep.scheduler.lock.Checkpoint checkpoint) {
        return redlock != null ? redlock.checkpoint(lease, checkpoint) : server.checkpoints().save(lease, checkpoint);
    }

    @Override
    public java.util.Optional<io.lockstep.scheduler.lock.Checkpoint> lastCheckpoint(String job, Instant slot) {
        return redlock != null ? redlock.lastCheckpoint(job, slot) : server.checkpoints().last(job, slot);
    }

    @Override
    public List<Boolean> recordLate(String workerId, List<Completion> completions) {
        return redlock != null ? redlock.recordLate(workerId, completions) : server.leases().recordLate(workerId, completions);
    }

    @Override
    public List<RunsInFlight> runsInFlight(List<String> jobs) {
        return redlock != null ? redlock.runsInFlight(jobs) : server.reads().runsInFlight(jobs);
    }

    @Override
    public Map<String, Instant> lastSlots(List<String> jobs) {
        return redlock != null ? redlock.lastSlots(jobs) : server.reads().lastSlots(jobs);
    }

    /** The server's clock; on Redis Cluster the latest of the masters' clocks ({@link ServerClock}). */
    @Override
    public long serverTimeMillis() {
        return redlock != null ? redlock.serverTimeMillis() : server.serverTimeMillis();
    }

    @Override
    public Heartbeat heartbeat(WorkerInfo self, Duration ttl) {
        return redlock != null ? redlock.members().heartbeat(self, ttl) : server.members().heartbeat(self, ttl);
    }

    @Override
    public io.lockstep.scheduler.lock.Backfill.View backfillView(String job, String backfill, List<java.time.Instant> slots,
            Duration recordTtl) {
        return backfillStore().view(job, backfill, slots, recordTtl);
    }

    @Override
    public io.lockstep.scheduler.lock.Backfill requestBackfill(String job, java.time.Instant from, java.time.Instant to, double perSecond,
            String by, java.util.Collection<java.time.Instant> decided) {
        return backfillStore().request(job, from, to, perSecond, by, decided);
    }

    @Override
    public java.util.Optional<io.lockstep.scheduler.lock.Backfill> cancelBackfill(String job) {
        return backfillStore().cancel(job);
    }

    @Override
    public List<io.lockstep.scheduler.lock.Backfill.Entry> backfills() {
        return redlock != null ? List.of() : server.backfills().entries();
    }

    @Override
    public void backfillProgress(io.lockstep.scheduler.lock.Backfill backfill, io.lockstep.scheduler.lock.Backfill.Progress progress) {
        backfillStore().progress(backfill, progress);
    }

    /** The limits' permits, made at the first use (each holds a watchdog); null until then. */
    private RedisPermits permits;

    /**
     * The limits ({@link RedisPermits}) on one server, Sentinel or Cluster; none on Redlock (a
     * queue ordered by slot time would need a majority's agreement on every try).
     */
    @Override
    public synchronized java.util.Optional<io.lockstep.scheduler.lock.Permits> permits() {
        if (redlock != null) {
            return java.util.Optional.empty();
        }
        if (permits == null) {
            permits = new RedisPermits(server.jedis(), server.keys().prefix(), server.describe());
        }
        return java.util.Optional.of(permits);
    }

    /**
     * Expectations ({@link RedisExpectations}) on one server, Sentinel or Cluster, judged from the
     * jobs' history; none on Redlock, where a verdict decided once would need a majority of the
     * masters' histories, nor without a history ({@code historyKeep(0)}).
     */
    @Override
    public java.util.Optional<io.lockstep.scheduler.lock.Expectations> expectations() {
        return redlock != null ? java.util.Optional.empty() : server.expectations().map(e -> e);
    }

    /**
     * Backfills ({@link BackfillStore}) on one server, Sentinel or Cluster.
     *
     * @throws UnsupportedOperationException on Redlock, which keeps no backfills
     */
    BackfillStore backfillStore() {
        if (redlock != null) {
            throw new UnsupportedOperationException("backfill is not available on Redlock (redis.redlock): "
                    + "its requests and cursor would need a majority of the masters");
        }
        return server.backfills();
    }

    @Override
    public void publishConfig(String configHash, Map<String, String> jobs) {
        if (redlock != null) {
            redlock.members().publishConfig(configHash, jobs);
            return;
        }
        server.members().publish(configHash, jobs);
    }

    @Override
    public void stampInForce(java.util.Collection<String> enabled, java.util.Collection<String> disabled, boolean fresh) {
        if (redlock != null) {
            redlock.members().stampInForce(enabled, disabled, fresh);
            return;
        }
        server.inForce().stampInForce(enabled, disabled, fresh);
    }

    @Override
    public Map<String, io.lockstep.scheduler.lock.InForce> inForce(List<String> jobs) {
        return redlock != null ? redlock.members().inForce(jobs) : server.inForce().inForce(jobs);
    }

    @Override
    public Map<String, String> config(String configHash) {
        return redlock != null ? redlock.members().config(configHash) : server.members().config(configHash);
    }

    @Override
    public void requestDrain(String workerId, Duration within) {
        if (redlock != null) {
            redlock.members().requestDrain(workerId, within);
            return;
        }
        server.members().requestDrain(workerId, within);
    }

    @Override
    public void leave(String workerId) {
        if (redlock != null) {
            redlock.members().leave(workerId);
            return;
        }
        server.members().leave(workerId);
    }

    /** The live workers (for {@code status}): who heartbeat within {@code ttl}. */
    public List<WorkerInfo> liveWorkers(Duration ttl) {
        return redlock != null ? redlock.members().liveWorkers(ttl) : server.members().live(ttl);
    }

    /**
     * On Redlock, each master's state by name, in order: {@code closed} (asked) or {@code open}
     * (left out: it did not answer in time lately, and is probed in the background until it does);
     * empty on one Redis, Sentinel or Cluster.
     */
    public Map<String, String> redlockMasters() {
        return redlock == null ? Map.of() : redlock.quorum().states();
    }

    /**
     * On Redlock, each master by name, in order, asked from this process now (its time, within the
     * fan-out's wait): {@code answers}, or why not ({@code no answer within 50 ms}, the error, or
     * {@code left out...} when this process left it out already). This is the view of the process
     * that asks ({@code status} on an operator's host); each worker's own is its
     * {@code lockstep.redlock.master} metric and its {@code redlock_master_excluded} events. Empty on
     * one Redis, Sentinel or Cluster.
     */
    public Map<String, String> redlockMastersNow() {
        if (redlock == null) {
            return Map.of();
        }
        Map<String, String> view = new java.util.LinkedHashMap<>();
        for (Quorum.Vote<Long> v : redlock.quorum().ask(RedisLockProvider::serverTimeMillis, redlock.nodeWait())) {
            view.put(v.node(), v.kind() == Quorum.Kind.FAILED ? v.failure() : "answers");
        }
        return view;
    }

    /**
     * Registers {@code lockstep.redlock.master} (1: asked, 0: left out), one gauge per master tagged
     * {@code master}; nothing on one Redis, Sentinel or Cluster.
     */
    public void bindMetrics(io.micrometer.core.instrument.MeterRegistry registry) {
        for (String master : redlockMasters().keySet()) {
            io.micrometer.core.instrument.Gauge.builder("lockstep.redlock.master", this, p -> "closed".equals(p.redlockMasters().get(master)) ? 1 : 0)
                    .description("whether a Redlock master is asked (1) or left out after it did not answer in time (0)")
                    .tag("master", master).register(registry);
        }
    }

    /** Where the store is; through Sentinel, with the master it follows now (it changes with a failover). */
    @Override
    public String describe() {
        return redlock != null ? redlock.describe() : server.describe();
    }

    /**
     * Checks, before anything runs, that the server answers, accepts our credentials, and lets this
     * user run what Lockstep runs (see {@link StartCheck}). Fails with one clear line otherwise,
     * naming what an ACL user may not run. Warns (event {@code redis_eviction_policy}) when the
     * server may evict keys.
     */
    public void ping() {
        if (redlock != null) {
            RedlockStart.run(redlock);
            return;
        }
        server.startCheck(this);
    }

    /**
     * Why the server's {@code maxmemory-policy} endangers exactly-once, or empty when it is
     * {@code noeviction} (or cannot be read, as under an ACL user without {@code INFO}).
     */
    public java.util.Optional<String> evictionWarning() {
        if (redlock != null) {
            return masters().stream().map(RedisLockProvider::evictionWarning).flatMap(java.util.Optional::stream).findFirst();
        }
        return server.evictionWarning();
    }

    @Override
    public void close() {
        synchronized (this) {
            if (permits != null) {
                permits.close(); // stops renewing the permits still held: they run out after their lease
            }
        }
        if (redlock != null) {
            redlock.quorum().awaitInFlight(); // the rest of steps a majority settled early (an outcome, a give-back)
            masters().forEach(RedisLockProvider::close);
            return;
        }
        server.close();
    }

    /**
     * Builds a {@link RedisLockProvider} from a URI (it then owns and closes its client) or around a
     * {@link UnifiedJedis} you already have (which you close). Fails fast on a bad value. Not
     * thread-safe.
     */
    public static final class Builder {
        private String uri = RedisSettings.DEFAULT_URI;
        private String user;
        private String password;
        private Duration timeout = DEFAULT_TIMEOUT;
        private String keyPrefix = DEFAULT_KEY_PREFIX;
        private RedisSettings settings;
        private int waitReplicas;
        private int historyKeep = DEFAULT_HISTORY_KEEP;
        private Duration waitTimeout = RedisSettings.DEFAULT_WAIT_TIMEOUT;
        private UnifiedJedis client;
        private String description;

        private Builder() {}

        /** {@code redis://[user:password@]host:port[/db]} or {@code rediss://...} for TLS. */
        public Builder uri(String uri) {
            this.uri = Objects.requireNonNull(uri, "uri");
            return this;
        }

        /** The ACL user; overrides one in the URI. */
        public Builder user(String user) {
            this.user = user;
            return this;
        }

        /** The password; overrides one in the URI. */
        public Builder password(String password) {
            this.password = password;
            return this;
        }

        /** Connect and read timeout of every command. */
        public Builder timeout(Duration timeout) {
            if (timeout.toMillis() < 1) {
                throw new IllegalArgumentException("timeout must be at least 1ms, but was " + timeout);
            }
            this.timeout = timeout;
            return this;
        }

        /** The first part of every key (default {@code lockstep}). */
        public Builder keyPrefix(String prefix) {
            this.keyPrefix = RedisCalls.checkKeyPrefix(prefix);
            return this;
        }

        /**
         * Everything from a config's {@code redis} section: one server, Sentinel or Cluster, ACL
         * credentials, TLS, key prefix and timeout. The provider then owns and closes its client.
         */
        public Builder settings(RedisSettings settings) {
            this.settings = Objects.requireNonNull(settings, "settings");
            this.keyPrefix = RedisCalls.checkKeyPrefix(settings.keyPrefix());
            this.waitReplicas = settings.waitReplicas();
            this.waitTimeout = settings.waitTimeout();
            return this;
        }

        /**
         * A claim, and an outcome, counts only once {@code replicas} replicas acknowledged it
         * ({@code WAIT}, up to {@code timeout}); an unacknowledged claim is disowned and never runs,
         * an unacknowledged outcome is written again. 0 (the default): no waiting.
         */
        public Builder waitReplicas(int replicas, Duration timeout) {
            if (replicas < 0) {
                throw new IllegalArgumentException("waitReplicas must not be negative, but was " + replicas);
            }
            this.waitReplicas = replicas;
            this.waitTimeout = Objects.requireNonNull(timeout, "timeout");
            return this;
        }

        /** How many runs each job's history keeps (a capped stream; {@code history.keep}); 0 keeps none. */
        public Builder historyKeep(int runs) {
            if (runs < 0) {
                throw new IllegalArgumentException("history.keep must not be negative, but was " + runs);
            }
            this.historyKeep = runs;
            return this;
        }

        /** A client of yours ({@code RedisClient}, {@code RedisSentinelClient}, {@code RedisClusterClient}). */
        public Builder client(UnifiedJedis client, String description) {
            this.client = Objects.requireNonNull(client, "client");
            this.description = Objects.requireNonNull(description, "description");
            return this;
        }

        /**
         * @throws IllegalArgumentException when no client can be made from the settings (a bad URI,
         *     an unreadable or invalid TLS file), with one line that says which
         */
        public RedisLockProvider build() {
            RedisCalls.Replicas replicas = new RedisCalls.Replicas(waitReplicas, waitTimeout);
            if (client != null) {
                return new RedisLockProvider(new ServerStore(client, false, keyPrefix, description, replicas, historyKeep, () -> 0, false));
            }
            RedisSettings effective = settings != null ? settings : new RedisSettings(new RedisSettings.Standalone(uri), keyPrefix,
                    timeout, Optional.ofNullable(user), Optional.ofNullable(password), RedisSettings.Tls.OFF, waitReplicas,
                    waitTimeout);
            if (effective.endpoint() instanceof RedisSettings.Redlock r) {
                return new RedisLockProvider(RedlockStore.create(effective, r, historyKeep), keyPrefix);
            }
            RedisClients.Built built = RedisClients.create(effective);
            return new RedisLockProvider(new ServerStore(built.client(), true, keyPrefix, built.description(), replicas, historyKeep,
                    () -> 0, false));
        }

    }
}
