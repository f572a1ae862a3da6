package io.lockstep.scheduler.config;

import io.lockstep.scheduler.JobDefinition;
import io.lockstep.scheduler.JobFactory;
import io.lockstep.scheduler.config.PolicySection.Policies;
import java.io.StringReader;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.error.MarkedYAMLException;
import org.yaml.snakeyaml.error.YAMLException;
import org.yaml.snakeyaml.nodes.Node;

/**
 * Turns a YAML file into a {@link LockstepConfig}, or fails with every problem it finds, each named
 * by file, line and YAML path.
 *
 * <p>It replaces {@code ${VAR}} and {@code ${VAR:-default}} in every scalar from the environment
 * (an unset variable without a default is a problem), reads durations, rejects unknown keys and,
 * unless told not to, checks that every job class loads and implements {@code Job}. The YAML is
 * composed into nodes by SnakeYAML so that every value keeps its line.
 *
 * <p>The sections are read apart: {@link ConfigNodes} reads single values and records problems,
 * {@link RedisSection} the {@code redis} section, {@link PolicySection} the policy keys that
 * {@code defaults} and every job share, {@link JobsSection} the jobs themselves; this class reads
 * the rest ({@code worker}, {@code history}) and puts them together.
 *
 * <p>Instances are immutable and thread-safe.
 */
public final class ConfigLoader {

    private static final Set<String> TOP_KEYS = Set.of("redis", "worker", "defaults", "jobs", "history", "calendars", "alerts", "limits");
    private static final Set<String> ALERTS_KEYS = Set.of("webhooks", "timeout", "retries");
    private static final Set<String> WORKER_KEYS = Set.of("id", "threads", "shutdownTimeout", "http", "reload", "labels");
    private static final Set<String> HTTP_KEYS = Set.of("port", "bind", "auth");
    private static final Set<String> AUTH_KEYS = Set.of("users");
    private static final Set<String> HISTORY_KEYS = Set.of("keep");
    private static final Set<String> DEFAULTS_KEYS = Set.copyOf(PolicySection.KEYS);

    private final Function<String, String> environment;
    private final boolean checkClasses;
    /** Job classes are built by their public no-arg constructor (no factory of the application's): check that too. */
    private final boolean reflective;
    /** Whether a document without jobs is a problem (the worker's file: yes; an application adding its own jobs: no). */
    private final boolean jobsRequired;
    /** Calendars the application gives (Spring beans), beside the config's and those found by ServiceLoader. */
    private final List<io.lockstep.scheduler.JobCalendar> given;

    /**
     * Every key the loader accepts, by YAML path ({@code ""} the top level, {@code "jobs[]"} a job),
     * so that config/lockstep.schema.json can be checked against it key for key.
     */
    static Map<String, Set<String>> acceptedKeys() {
        return Map.ofEntries(Map.entry("", TOP_KEYS), Map.entry("redis", RedisSection.KEYS),
                Map.entry("redis.sentinel", RedisSection.SENTINEL_KEYS), Map.entry("redis.cluster", RedisSection.CLUSTER_KEYS),
                Map.entry("redis.redlock", RedisSection.REDLOCK_KEYS),
                Map.entry("redis.tls", RedisSection.TLS_KEYS), Map.entry("worker", WORKER_KEYS), Map.entry("worker.http", HTTP_KEYS), Map.entry("worker.http.auth", AUTH_KEYS),
                Map.entry("history", HISTORY_KEYS), Map.entry("defaults", DEFAULTS_KEYS), Map.entry("defaults.retry", PolicySection.RETRY_KEYS),
                Map.entry("jobs[]", JobsSection.KEYS), Map.entry("jobs[].retry", PolicySection.RETRY_KEYS),
                Map.entry("calendars.*", CalendarSection.KEYS), Map.entry("jobs[].runOn", JobsSection.RUN_ON_KEYS),
                Map.entry("jobs[].expect", JobsSection.EXPECT_KEYS), Map.entry("alerts", ALERTS_KEYS));
    }

    private ConfigLoader(Function<String, String> environment, boolean checkClasses, boolean reflective, boolean jobsRequired,
            List<io.lockstep.scheduler.JobCalendar> given) {
        this.given = List.copyOf(given);
        this.jobsRequired = jobsRequired;
        this.environment = environment;
        this.checkClasses = checkClasses;
        this.reflective = reflective;
    }

    /** A loader that reads the process environment and checks job classes. */
    public static ConfigLoader defaults() {
        return new ConfigLoader(System::getenv, true, true, true, List.of());
    }

    /** A loader that reads variables from {@code environment} instead of the process. */
    public ConfigLoader withEnvironment(Map<String, String> environment) {
        Map<String, String> copy = Map.copyOf(environment);
        return new ConfigLoader(copy::get, checkClasses, reflective, jobsRequired, given);
    }

    /** A loader that does or does not check that job classes load and implement {@code Job}. */
    public ConfigLoader checkingClasses(boolean check) {
        return new ConfigLoader(environment, check, reflective, jobsRequired, given);
    }

    /**
     * A loader for jobs built by {@link io.lockstep.scheduler.JobFactory#reflective()} (the default:
     * a job class needs a public no-arg constructor, which the check runs once, and its params are
     * bound to the type it declares) or, with {@code false}, by a factory of the application's: a
     * job class must then only load, implement {@code Job} and be concrete; the factory builds it
     * when the scheduler is built, and reports what is wrong then.
     */
    public ConfigLoader builtByReflection(boolean reflective) {
        return new ConfigLoader(environment, checkClasses, reflective, jobsRequired, given);
    }

    /**
     * With {@code false}, a document without {@code jobs} (or with an empty list) is accepted: for
     * an application that declares its jobs elsewhere (the Spring Boot starter's annotations).
     */
    public ConfigLoader requiringJobs(boolean required) {
        return new ConfigLoader(environment, checkClasses, reflective, required, given);
    }

    /**
     * A loader that also knows {@code calendars} (an application's, such as the Spring Boot
     * starter's beans) by their names, for {@code skipOn} and {@code onlyOn}; the config's own
     * {@code calendars} and those registered with {@code ServiceLoader} are known anyway. A name
     * defined twice is a problem.
     */
    public ConfigLoader withCalendars(java.util.Collection<? extends io.lockstep.scheduler.JobCalendar> calendars) {
        return new ConfigLoader(environment, checkClasses, reflective, jobsRequired, List.copyOf(calendars));
    }

    /**
     * Reads a duration as the YAML writes it: {@code 250ms 30s 5m 1h 1d} or ISO-8601 ({@code PT30S});
     * for command-line options that take the same syntax.
     */
    public static Optional<Duration> parseDuration(String text) {
        return Durations.parse(text);
    }

    /**
     * Loads a file.
     *
     * @throws ConfigException with every problem found, including an unreadable file
     */
    public LockstepConfig load(Path file) {
        return load(file.toString(), ConfigFile.read(file));
    }

    /**
     * Loads YAML text; {@code source} names it in problems.
     *
     * @throws ConfigException with every problem found
     */
    public LockstepConfig load(String source, String text) {
        return new Reader(source).read(text);
    }

    /**
     * {@code e} with the problems a job's params raised after loading (jobs an application's
     * {@link JobFactory} built, checked against their {@link io.lockstep.scheduler.Job#paramsType()}:
     * {@code job NAME: params...}, no line) placed in {@code text}, the YAML they came from:
     * {@code source:line: jobs[i].params.key: ...}, as the loader reports the jobs it builds itself.
     * Problems it cannot place stay as they are.
     */
    public static ConfigException located(Path file, ConfigException e) {
        String text;
        try {
            text = ConfigFile.read(file);
        } catch (RuntimeException unreadable) { // changed or gone since it was loaded: the problems as they are
            return e;
        }
        return located(file.toString(), text, e);
    }

    /** {@link #located(Path, ConfigException)} for YAML text that {@code source} names. */
    public static ConfigException located(String source, String text, ConfigException e) {
        return LocatedProblems.in(source, text, e);
    }

    /** One pass over one document; collects problems instead of stopping at the first. */
    private final class Reader extends ConfigNodes {

        Reader(String source) {
            super(source, environment);
        }

        LockstepConfig read(String text) {
            Node root;
            try {
                LoaderOptions options = new LoaderOptions();
                options.setAllowDuplicateKeys(false);
                options.setMaxAliasesForCollections(ConfigFile.MAX_ALIASES); // no billion laughs
                options.setCodePointLimit((int) ConfigFile.MAX_BYTES);
                root = new Yaml(options).compose(new StringReader(text));
            } catch (MarkedYAMLException e) {
                int line = e.getProblemMark() != null ? e.getProblemMark().getLine() + 1 : 0;
                String problem = e.getProblem() != null ? e.getProblem() : "malformed";
                throw new ConfigException(List.of(new ConfigProblem(source, line, "", "invalid YAML: " + problem)));
            } catch (YAMLException e) {
                throw new ConfigException(List.of(new ConfigProblem(source, 0, "", "invalid YAML: " + oneLine(e.getMessage()))));
            }
            if (root == null) {
                throw new ConfigException(List.of(new ConfigProblem(source, 0, "", "file is empty; it needs at least a jobs list")));
            }
            Map<String, Node> top = mapping(root, "", TOP_KEYS).orElse(Map.of());

            RedisSettings redis = new RedisSection(this).read(top.get("redis"));
            WorkerSettings worker = readWorker(top.get("worker"));
            Policies defaults = new PolicySection(this).read(top.get("defaults"), "defaults", Policies.BUILT_IN, DEFAULTS_KEYS);
            Map<String, io.lockstep.scheduler.JobCalendar> calendars = new CalendarSection(this).read(top.get("calendars"), defaults.zone());
            applicationCalendars(calendars, top.get("calendars"));
            int historyKeep = readHistory(top.get("history"));
            Map<String, Integer> limits = readLimits(top.get("limits"));
            List<JobDefinition> jobs = new JobsSection(this, checkClasses, reflective, jobsRequired, calendars).limits(limits)
                    .read(top.get("jobs"), root, defaults, redis.timeout(), historyKeep);
            io.lockstep.scheduler.Alerts alerts = readAlerts(top.get("alerts"));
            if (!problems.isEmpty()) {
                problems.sort((a, b) -> Integer.compare(a.line(), b.line()));
                throw new ConfigException(problems);
            }
            return new LockstepConfig(source, redis, worker, jobs, historyKeep, alerts);
        }

        /**
         * Adds the application's calendars (given, then found by ServiceLoader on the context class
         * loader) to the config's; a name defined twice is a problem.
         */
        private void applicationCalendars(Map<String, io.lockstep.scheduler.JobCalendar> calendars, Node node) {
            List<io.lockstep.scheduler.JobCalendar> found = new java.util.ArrayList<>(given);
            try {
                java.util.ServiceLoader.load(io.lockstep.scheduler.JobCalendar.class, Thread.currentThread().getContextClassLoader())
                        .forEach(found::add);
            } catch (java.util.ServiceConfigurationError e) {
                problem(node, "calendars", "a JobCalendar registered with ServiceLoader cannot be created: " + oneLine(e.getMessage()));
            }
            for (io.lockstep.scheduler.JobCalendar c : found) {
                String name = c.name();
                if (name == null || !JobDefinition.NAME.matcher(name).matches()) {
                    problem(node, "calendars", "the application's calendar " + c.getClass().getName() + " has an invalid name \""
                            + name + "\" (must match " + JobDefinition.NAME + ")");
                } else if (calendars.containsKey(name)) {
                    problem(node, "calendars." + name, "is defined twice: in the config and by the application ("
                            + c.getClass().getName() + ")");
                } else {
                    calendars.put(name, c);
                }
            }
        }

        private WorkerSettings readWorker(Node node) {
            WorkerSettings d = WorkerSettings.defaults();
            if (node == null) {
                return d;
            }
            Map<String, Node> m = mapping(node, "worker", WORKER_KEYS).orElse(Map.of());
            String id = string(m.get("id"), "worker.id").orElse(d.id());
            int threads = integer(m.get("threads"), "worker.threads").orElse(d.threads());
            if (threads < 1 || threads > 10_000) {
                problem(m.get("threads"), "worker.threads", "must be between 1 and 10000, but was " + threads);
            }
            Duration shutdown = duration(m.get("shutdownTimeout"), "worker.shutdownTimeout").orElse(d.shutdownTimeout());
            int port = 0;
            String bind = WorkerSettings.DEFAULT_HTTP_BIND;
            List<HttpUser> users = List.of();
            if (m.get("http") != null) {
                Map<String, Node> http = mapping(m.get("http"), "worker.http", HTTP_KEYS).orElse(Map.of());
                port = integer(http.get("port"), "worker.http.port").orElse(0);
                if (port < 0 || port > 65535) {
                    problem(http.get("port"), "worker.http.port", "must be between 0 (off) and 65535, but was " + port);
                    port = 0;
                }
                bind = string(http.get("bind"), "worker.http.bind").orElse(bind);
                if (http.get("auth") != null) {
                    Map<String, Node> auth = mapping(http.get("auth"), "worker.http.auth", AUTH_KEYS).orElse(Map.of());
                    users = string(auth.get("users"), "worker.http.auth.users").map(f -> users(f, auth.get("users"))).orElse(List.of());
                    if (auth.get("users") == null) {
                        problem(http.get("auth"), "worker.http.auth", "needs users: FILE (name:role:hash lines; lockstep user prints one)");
                    }
                }
            }
            String reload = string(m.get("reload"), "worker.reload").orElse("signal");
            if (!reload.equals("signal") && !reload.equals("watch")) {
                problem(m.get("reload"), "worker.reload", "must be signal (reload on SIGHUP, the default) or watch (also when the file "
                        + "changes), but was \"" + reload + "\"");
            }
            List<String> labels = JobsSection.labels(m.get("labels"), "worker.labels", this);
            return new WorkerSettings(id, Math.max(1, threads), shutdown, port, bind, reload.equals("watch"),
                    labels == null ? Set.of() : Set.copyOf(labels), users);
        }

        /** The users file of {@code worker.http.auth.users}, relative to the config file's folder; its problems at its key. */
        private List<HttpUser> users(String name, Node node) {
            java.nio.file.Path folder = java.nio.file.Path.of(source).toAbsolutePath().getParent();
            java.nio.file.Path file = folder == null ? java.nio.file.Path.of(name).toAbsolutePath() : folder.resolve(name);
            try {
                return HttpUser.parse(ConfigFile.read(file));
            } catch (ConfigException e) {
                ConfigProblem p = e.problems().get(0);
                problem(node, "worker.http.auth.users", file + (p.line() > 0 ? ":" + p.line() : "") + ": " + p.message());
            } catch (IllegalArgumentException e) {
                problem(node, "worker.http.auth.users", file + ": " + e.getMessage());
            }
            return List.of();
        }

        /** {@code limits: { reporting-db: 2 }}: each a name like a job's and 1 to 1000 runs at once in the cluster. */
        private Map<String, Integer> readLimits(Node node) {
            Map<String, Integer> limits = new java.util.LinkedHashMap<>();
            if (node == null) {
                return limits;
            }
            if (!(node instanceof org.yaml.snakeyaml.nodes.MappingNode map)) {
                problem(node, "limits", "must be a mapping of limit names to how many runs may use each at once, like { reporting-db: 2 }");
                return limits;
            }
            for (org.yaml.snakeyaml.nodes.NodeTuple t : map.getValue()) {
                String name = t.getKeyNode() instanceof org.yaml.snakeyaml.nodes.ScalarNode k ? k.getValue() : "";
                String path = "limits." + name;
                if (!JobDefinition.NAME.matcher(name).matches()) {
                    problem(t.getKeyNode(), path, "a limit's name must match " + JobDefinition.NAME + ", but was \"" + name + "\"");
                    continue;
                }
                if (limits.containsKey(name)) {
                    problem(t.getKeyNode(), path, "duplicate key \"" + name + "\"");
                    continue;
                }
                Optional<Integer> size = integer(t.getValueNode(), path);
                if (size.isPresent() && (size.get() < 1 || size.get() > 1_000)) {
                    problem(t.getValueNode(), path, "must be between 1 and 1000 runs at once, but was " + size.get());
                } else if (size.isPresent()) {
                    limits.put(name, size.get());
                }
            }
            return limits;
        }

        /**
         * {@code alerts: {webhooks: [url, ...], timeout: 5s, retries: 3}}. A webhook's URL may carry a
         * secret: a problem names it by its scheme and host only.
         */
        private io.lockstep.scheduler.Alerts readAlerts(Node node) {
            if (node == null) {
                return io.lockstep.scheduler.Alerts.NONE;
            }
            if (node instanceof org.yaml.snakeyaml.nodes.ScalarNode) { // not echoed: it may be a webhook's URL, with its secret
                problem(node, "alerts", "must be a mapping, like { webhooks: [https://hooks.example/...] }");
                return io.lockstep.scheduler.Alerts.NONE;
            }
            Map<String, Node> m = mapping(node, "alerts", ALERTS_KEYS).orElse(Map.of());
            List<java.net.URI> hooks = new java.util.ArrayList<>();
            Node list = m.get("webhooks");
            List<Map.Entry<Node, String>> urls = List.of();
            if (list instanceof org.yaml.snakeyaml.nodes.ScalarNode) { // not echoed: a URL may carry a secret
                problem(list, "alerts.webhooks", "must be a list of URLs, like [https://hooks.example/...]");
            } else if (list != null) {
                urls = texts(list, "alerts.webhooks", "URLs").orElse(List.of());
            }
            for (int i = 0; i < urls.size(); i++) {
                Node at = urls.get(i).getKey();
                try {
                    java.net.URI u = new java.net.URI(urls.get(i).getValue().trim());
                    if (!("http".equals(u.getScheme()) || "https".equals(u.getScheme())) || u.getHost() == null) {
                        problem(at, "alerts.webhooks[" + i + "]", "must be an http:// or https:// URL with a host");
                    } else {
                        hooks.add(u);
                    }
                } catch (java.net.URISyntaxException e) {
                    problem(at, "alerts.webhooks[" + i + "]", "is not a URL (at index " + e.getIndex() + ")");
                }
            }
            Duration timeout = duration(m.get("timeout"), "alerts.timeout").orElse(io.lockstep.scheduler.Alerts.DEFAULT_TIMEOUT);
            if (timeout.toMillis() < 100 || timeout.compareTo(Duration.ofMinutes(1)) > 0) {
                problem(m.get("timeout"), "alerts.timeout", "must be between 100ms and 1m, but was " + Durations.format(timeout));
                timeout = io.lockstep.scheduler.Alerts.DEFAULT_TIMEOUT;
            }
            int retries = integer(m.get("retries"), "alerts.retries").orElse(io.lockstep.scheduler.Alerts.DEFAULT_RETRIES);
            if (retries < 0 || retries > 10) {
                problem(m.get("retries"), "alerts.retries", "must be between 0 and 10, but was " + retries);
                retries = io.lockstep.scheduler.Alerts.DEFAULT_RETRIES;
            }
            return new io.lockstep.scheduler.Alerts(hooks, timeout, retries);
        }

        private int readHistory(Node node) {
            if (node == null) {
                return LockstepConfig.DEFAULT_HISTORY_KEEP;
            }
            Map<String, Node> m = mapping(node, "history", HISTORY_KEYS).orElse(Map.of());
            int keep = integer(m.get("keep"), "history.keep").orElse(LockstepConfig.DEFAULT_HISTORY_KEEP);
            if (keep < 0 || keep > 100_000) {
                problem(m.get("keep"), "history.keep", "must be between 0 (no history) and 100000 runs per job, but was " + keep);
                return LockstepConfig.DEFAULT_HISTORY_KEEP;
            }
            return keep;
        }
    }

    private static String oneLine(String message) {
        return message == null ? "malformed" : message.replaceAll("\\s+", " ").trim();
    }
}
