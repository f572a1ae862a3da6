package io.lockstep.spring;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.core.io.Resource;

/**
 * {@code lockstep.*}: where the starter finds its Redis, its worker settings and its jobs. Either
 * the YAML of the worker ({@code lockstep.config=classpath:lockstep.yaml}, the one format: redis,
 * worker, defaults, jobs) or these properties for the sections the YAML leaves out; a section set
 * in both places is an error at startup, never a silent override.
 */
@ConfigurationProperties("lockstep")
public class LockstepProperties {

    /** Whether Lockstep runs in this application. */
    private boolean enabled = true;

    /** The Lockstep YAML (redis, worker, defaults, jobs), e.g. classpath:lockstep.yaml. */
    private Resource config;

    /**
     * Whether the application fails to start when Redis cannot be reached. false: it starts without
     * claiming, Lockstep retries (1 s doubling to 10 s) and claims once Redis answers.
     */
    private boolean failFast = true;

    private final Health health = new Health();

    private final Redis redis = new Redis();
    private final Worker worker = new Worker();

    /**
     * The YAML's {@code limits:}: cluster-wide concurrency limits by name, each how many runs that
     * use it ({@code uses} of a job) may run at once, e.g. {@code lockstep.limits.reporting-db=2}.
     */
    private java.util.Map<String, Integer> limits = new java.util.LinkedHashMap<>();

    private final Alerts alerts = new Alerts();

    private final Endpoint endpoint = new Endpoint();

    public Endpoint getEndpoint() {
        return endpoint;
    }

    /** {@code lockstep.endpoint.*}: the actuator endpoint {@code lockstep}. */
    public static class Endpoint {

        /**
         * The Spring Security role a user needs for the endpoint's actions (POST: pause, resume,
         * trigger, backfill), without the ROLE_ prefix.
         */
        private String operatorRole = LockstepEndpoint.OPERATOR_ROLE;

        public String getOperatorRole() {
            return operatorRole;
        }

        public void setOperatorRole(String operatorRole) {
            this.operatorRole = operatorRole;
        }
    }

    public java.util.Map<String, Integer> getLimits() {
        return limits;
    }

    public void setLimits(java.util.Map<String, Integer> limits) {
        this.limits = limits;
    }

    public Alerts getAlerts() {
        return alerts;
    }

    /** {@code lockstep.alerts.*}: the YAML's {@code alerts:}, where expectation breaches are sent. */
    public static class Alerts {

        /** URLs each breach and each clearing is POSTed to as JSON. */
        private java.util.List<String> webhooks = new java.util.ArrayList<>();

        /** How long one delivery may take (default 5s). */
        private Duration timeout;

        /** How many times a failed delivery is tried again (default 3). */
        private Integer retries;

        public java.util.List<String> getWebhooks() {
            return webhooks;
        }

        public void setWebhooks(java.util.List<String> webhooks) {
            this.webhooks = webhooks;
        }

        public Duration getTimeout() {
            return timeout;
        }

        public void setTimeout(Duration timeout) {
            this.timeout = timeout;
        }

        public Integer getRetries() {
            return retries;
        }

        public void setRetries(Integer retries) {
            this.retries = retries;
        }

        boolean isSet() {
            return !webhooks.isEmpty() || timeout != null || retries != null;
        }
    }

    public boolean isEnabled() {
        return enabled;
    }

    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    public boolean isFailFast() {
        return failFast;
    }

    public void setFailFast(boolean failFast) {
        this.failFast = failFast;
    }

    public Health getHealth() {
        return health;
    }

    /** {@code lockstep.health.*}: what the {@code lockstep} health indicator says of a scheduler that does not claim. */
    public static class Health {

        /**
         * false (the default): UP, with {@code claiming: false} and the reason in its details, while
         * Redis is unreachable, before the first start or while stopping, so that the scheduler's Redis
         * never takes the application out of a load balancer; true: OUT_OF_SERVICE then. DOWN when
         * its tick thread died, either way.
         */
        private boolean strict;

        public boolean isStrict() {
            return strict;
        }

        public void setStrict(boolean strict) {
            this.strict = strict;
        }
    }

    public Resource getConfig() {
        return config;
    }

    public void setConfig(Resource config) {
        this.config = config;
    }

    public Redis getRedis() {
        return redis;
    }

    public Worker getWorker() {
        return worker;
    }

    /** {@code lockstep.redis.*}: one Redis server (Sentinel, Cluster, Redlock and TLS: use the YAML). */
    public static class Redis {

        /** redis://[user:password@]host:port[/db], or rediss:// for TLS. */
        private String uri;

        /** The ACL user (overrides one in the URI). */
        private String user;

        /** The password (overrides one in the URI). */
        private String password;

        /** Connect and read timeout of every command (default 2s). */
        private Duration timeout;

        /** The first part of every key (default lockstep). */
        private String keyPrefix;

        public String getUri() {
            return uri;
        }

        public void setUri(String uri) {
            this.uri = uri;
        }

        public String getUser() {
            return user;
        }

        public void setUser(String user) {
            this.user = user;
        }

        public String getPassword() {
            return password;
        }

        public void setPassword(String password) {
            this.password = password;
        }

        public Duration getTimeout() {
            return timeout;
        }

        public void setTimeout(Duration timeout) {
            this.timeout = timeout;
        }

        public String getKeyPrefix() {
            return keyPrefix;
        }

        public void setKeyPrefix(String keyPrefix) {
            this.keyPrefix = keyPrefix;
        }

        boolean isSet() {
            return uri != null || user != null || password != null || timeout != null || keyPrefix != null;
        }
    }

    /** {@code lockstep.worker.*}. */
    public static class Worker {

        /** This application instance's worker id in every event (default: hostname-pid). */
        private String id;

        /** How many jobs run at once in this instance (default 8). */
        private Integer threads;

        /** How long the stop lets running jobs finish before interrupting them (default 30s). */
        private Duration shutdownTimeout;

        public String getId() {
            return id;
        }

        public void setId(String id) {
            this.id = id;
        }

        public Integer getThreads() {
            return threads;
        }

        public void setThreads(Integer threads) {
            this.threads = threads;
        }

        public Duration getShutdownTimeout() {
            return shutdownTimeout;
        }

        public void setShutdownTimeout(Duration shutdownTimeout) {
            this.shutdownTimeout = shutdownTimeout;
        }

        boolean isSet() {
            return id != null || threads != null || shutdownTimeout != null;
        }
    }
}
