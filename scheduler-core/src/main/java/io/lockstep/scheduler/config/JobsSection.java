package io.lockstep.scheduler.config;

import io.lockstep.scheduler.JobDefinition;
import io.lockstep.scheduler.JobFactory;
import io.lockstep.scheduler.Params;
import io.lockstep.scheduler.config.PolicySection.Policies;
import io.lockstep.scheduler.cron.CronSchedule;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;

/**
 * Reads the {@code jobs} list into {@link JobDefinition}s: each job's name (valid, not reserved,
 * not taken twice), cron (one that ever fires), policies over {@code defaults} ({@link PolicySection}),
 * a lease long enough for the Redis timeout, class, params and {@code enabled}. Unless told not to,
 * it checks that each class loads and implements {@code Job} and, for jobs built by reflection,
 * runs the constructor once and binds the params to the type the job declares, so that a bad job
 * is a problem with its line, not a surprise at run time. A job with any problem is left out;
 * every problem is reported with its line and path. Not thread-safe: one per load, like the
 * {@link ConfigNodes} it reads through.
 */
final class JobsSection {

    /** The keys a job takes: the policy keys and its own. */
    static final Set<String> KEYS;

    static {
        Set<String> keys = new HashSet<>(PolicySection.KEYS);
        keys.addAll(List.of("name", "cron", "class", "params", "enabled", "skipOn", "onlyOn", "runOn", "expect", "uses"));
        KEYS = Set.copyOf(keys);
    }

    private final ConfigNodes nodes;
    private final boolean checkClasses;
    /** Job classes are built by their public no-arg constructor (no factory of the application's): check that too. */
    private final boolean reflective;
    /** Whether a document without jobs is a problem (the worker's file: yes; an application adding its own jobs: no). */
    private final boolean jobsRequired;
    /** The calendars jobs may name: the config's and the application's. */
    private final Map<String, io.lockstep.scheduler.JobCalendar> calendars;

    /** The config's limits ({@code limits:}): name -> permits. */
    private Map<String, Integer> limits = Map.of();

    /** The limits jobs may use ({@code limits:}). */
    JobsSection limits(Map<String, Integer> limits) {
        this.limits = limits;
        return this;
    }

    /** {@code uses: [reporting-db]}: each a limit of {@code limits:}, with its size; null after a problem (reported). */
    private java.util.SortedMap<String, Integer> uses(Node node, String path) {
        java.util.SortedMap<String, Integer> uses = new java.util.TreeMap<>();
        if (node == null) {
            return uses;
        }
        int before = nodes.problems.size();
        List<Map.Entry<Node, String>> names = nodes.texts(node, path, "limit names").orElse(List.of());
        for (int i = 0; i < names.size(); i++) {
            String n = names.get(i).getValue().trim();
            Integer size = limits.get(n);
            if (size == null) {
                nodes.problem(names.get(i).getKey(), path + "[" + i + "]", "unknown limit \"" + n + "\" (defined: "
                        + (limits.isEmpty() ? "none; add limits: { " + n + ": 2 } at the top" : String.join(", ", new java.util.TreeSet<>(limits.keySet())))
                        + ")" + (limits.isEmpty() ? "" : ConfigNodes.suggestion(n, limits.keySet())));
            } else if (uses.put(n, size) != null) {
                nodes.problem(names.get(i).getKey(), path + "[" + i + "]", "names \"" + n + "\" twice");
            }
        }
        return nodes.problems.size() > before ? null : uses;
    }

    JobsSection(ConfigNodes nodes, boolean checkClasses, boolean reflective, boolean jobsRequired,
            Map<String, io.lockstep.scheduler.JobCalendar> calendars) {
        this.calendars = calendars;
        this.nodes = nodes;
        this.checkClasses = checkClasses;
        this.reflective = reflective;
        this.jobsRequired = jobsRequired;
    }

    /** Binds params to the type the job declares ({@link io.lockstep.scheduler.Job#paramsType()}), if any. */
    private void checkParams(Class<?> type, Map<String, Object> params, Node paramsNode, Node jobNode, String path) {
        Params.problem(params, type).ifPresent(p -> {
            Node at = paramsNode == null ? jobNode : paramsNode;
            String first = p.path().isEmpty() ? "" : p.path().split("[.\\[]")[0];
            if (paramsNode instanceof MappingNode map && !first.isEmpty()) {
                for (NodeTuple t : map.getValue()) {
                    if (t.getKeyNode() instanceof ScalarNode k && k.getValue().equals(first)) {
                        at = t.getKeyNode();
                    }
                }
            }
            nodes.problem(at, path + ".params" + (p.path().isEmpty() ? "" : "." + p.path()),
                    p.unknownKey() == null ? p.message() : p.message() + ConfigNodes.suggestion(p.unknownKey(), p.knownKeys()));
        });
    }

    /** The keys of {@code expect}. */
    static final Set<String> EXPECT_KEYS = Set.of("succeededWithin", "successEvery");
    /** The longest {@code succeededWithin}: what became of a slot is read from its history, kept a week. */
    static final Duration MAX_SUCCEEDED_WITHIN = Duration.ofDays(7);
    /** The longest {@code successEvery}. */
    static final Duration MAX_SUCCESS_EVERY = Duration.ofDays(31);

    /**
     * {@code expect: {succeededWithin: 15m, successEvery: 26h}}; {@link io.lockstep.scheduler.Expect#NONE} when absent,
     * null after a problem (reported).
     */
    private io.lockstep.scheduler.Expect expect(Node node, String path, int historyKeep, io.lockstep.scheduler.RunOn runOn) {
        if (node == null) {
            return io.lockstep.scheduler.Expect.NONE;
        }
        int before = nodes.problems.size();
        Map<String, Node> m = nodes.mapping(node, path, EXPECT_KEYS).orElse(Map.of());
        Duration within = bounded(m.get("succeededWithin"), path + ".succeededWithin", MAX_SUCCEEDED_WITHIN);
        Duration every = bounded(m.get("successEvery"), path + ".successEvery", MAX_SUCCESS_EVERY);
        if (nodes.problems.size() > before) {
            return null;
        }
        io.lockstep.scheduler.Expect e = new io.lockstep.scheduler.Expect(within, every);
        if (!e.any()) {
            nodes.problem(node, path, "needs succeededWithin, successEvery or both (like succeededWithin: 15m)");
            return null;
        }
        if (historyKeep == 0) {
            nodes.problem(node, path, "needs the jobs' history, but history.keep is 0: expectations are judged from it");
            return null;
        }
        if (runOn != null && runOn.everyWorker()) {
            nodes.problem(node, path, "is not available on a job that runs on every worker");
            return null;
        }
        return e;
    }

    private Duration bounded(Node node, String path, Duration max) {
        Optional<Duration> read = nodes.duration(node, path); // empty: absent, or not a duration (reported once)
        Duration d = read.orElse(Duration.ZERO);
        if (read.isPresent() && (d.compareTo(io.lockstep.scheduler.Expect.MIN) < 0 || d.compareTo(max) > 0)) {
            nodes.problem(node, path, "must be between 1s and " + Durations.format(max) + ", but was " + Durations.format(d));
        }
        return d;
    }

    /** The keys of {@code runOn}. */
    static final Set<String> RUN_ON_KEYS = Set.of("labels", "everyWorker");

    /**
     * {@code runOn: {labels: [gpu], everyWorker: true}}: the labels a worker needs to run the job, and
     * whether every such worker runs each slot; {@code runOn: every-worker} is the latter alone.
     */
    private io.lockstep.scheduler.RunOn runOn(Node node, String path) {
        if (node == null) {
            return io.lockstep.scheduler.RunOn.ANY;
        }
        if (node instanceof ScalarNode scalar) {
            if ("every-worker".equals(scalar.getValue())) {
                return io.lockstep.scheduler.RunOn.EVERY_WORKER;
            }
            nodes.problem(node, path, "must be every-worker or a mapping { labels: [...], everyWorker: true|false }, but was \""
                    + scalar.getValue() + "\"");
            return io.lockstep.scheduler.RunOn.ANY;
        }
        Map<String, Node> m = nodes.mapping(node, path, RUN_ON_KEYS).orElse(null);
        if (m == null) {
            return io.lockstep.scheduler.RunOn.ANY;
        }
        List<String> labels = labels(m.get("labels"), path + ".labels", nodes);
        boolean every = nodes.bool(m.get("everyWorker"), path + ".everyWorker").orElse(false);
        return labels == null ? io.lockstep.scheduler.RunOn.ANY : new io.lockstep.scheduler.RunOn(Set.copyOf(labels), every);
    }

    /** A list of labels, each like a job name; null (reported) when one is not. */
    static List<String> labels(Node node, String path, ConfigNodes nodes) {
        if (node == null) {
            return new ArrayList<>();
        }
        List<Map.Entry<Node, String>> items = nodes.texts(node, path, "labels").orElse(null);
        if (items == null) {
            return null;
        }
        List<String> out = new ArrayList<>();
        for (int i = 0; i < items.size(); i++) {
            String label = items.get(i).getValue();
            if (!JobDefinition.NAME.matcher(label).matches()) {
                nodes.problem(items.get(i).getKey(), path + "[" + i + "]", "a label must match " + JobDefinition.NAME
                        + " (like gpu or region-eu), but was \"" + label + "\"");
                out = null;
            } else if (out != null) {
                out.add(label);
            }
        }
        return out;
    }

    /** {@code skipOn} / {@code onlyOn}: a list of calendar names, each defined (null in it: a calendar with a problem). */
    private List<io.lockstep.scheduler.JobCalendar> calendarList(Node node, String path) {
        List<io.lockstep.scheduler.JobCalendar> out = new ArrayList<>();
        if (node == null) {
            return out;
        }
        List<Map.Entry<Node, String>> items = nodes.texts(node, path, "calendar names").orElse(List.of());
        for (int i = 0; i < items.size(); i++) {
            String name = items.get(i).getValue();
            io.lockstep.scheduler.JobCalendar c = calendars.get(name);
            if (c == null && calendars.containsKey(name)) {
                out.add(null); // the calendar's own problem is reported; the job is left out with it
            } else if (c == null && !checkClasses) {
                out.add(unasked(name));
            } else if (c == null) {
                nodes.problem(items.get(i).getKey(), path + "[" + i + "]", "unknown calendar \"" + name + "\" ("
                        + (calendars.isEmpty() ? "define it under calendars:" : "defined: " + String.join(", ", new java.util.TreeSet<>(calendars.keySet())))
                        + ", or register a JobCalendar)" + (calendars.isEmpty() ? "" : ConfigNodes.suggestion(name, calendars.keySet())));
            } else {
                out.add(c);
            }
        }
        return out;
    }

    /**
     * A calendar named but not known here: the operator commands and audit load no class, so an
     * application's calendar (ServiceLoader, in the jobs JAR) is named, not asked; asking it says so.
     */
    private static io.lockstep.scheduler.JobCalendar unasked(String name) {
        return new io.lockstep.scheduler.JobCalendar() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public boolean contains(java.time.Instant instant) {
                throw new UnsupportedOperationException("calendar " + name + " is not on this class path");
            }
        };
    }

    /** {@code cron}: one expression, or a non-empty list of them. */
    private Optional<List<String>> cronList(Node node, String path) {
        if (!(node instanceof SequenceNode)) {
            return nodes.string(node, path).map(List::of);
        }
        Optional<List<String>> exprs = nodes.texts(node, path, "cron expressions").map(l -> l.stream().map(Map.Entry::getValue).toList());
        if (exprs.isPresent() && exprs.get().isEmpty()) {
            nodes.problem(node, path, "is an empty list; give at least one cron expression");
            return Optional.empty();
        }
        return exprs;
    }

    /**
     * The job's schedule: its expressions ({@code H} hashed from its {@code jitterSeed}, else its
     * name), shifted by its stable jitter offset; a problem is reported at the key that causes it.
     */
    private Optional<CronSchedule> schedule(List<String> exprs, Map<String, Node> m, String path, String name, Policies policies) {
        if (name == null) {
            return Optional.empty(); // reported; H and the jitter hash the name
        }
        String key = policies.jitterSeed() != null ? policies.jitterSeed() : name;
        Node cronNode = m.get("cron");
        CronSchedule cron;
        try {
            cron = CronSchedule.of(exprs, policies.zone(), key);
        } catch (IllegalArgumentException e) {
            nodes.problem(cronNode, path + ".cron", e.getMessage());
            return Optional.empty();
        }
        if (cron.next(Instant.now()).isEmpty()) {
            nodes.problem(cronNode, path + ".cron", "never fires: no date matches \"" + cron.expression()
                    + "\" (for example a 30th of February)");
            return Optional.empty();
        }
        Optional<Duration> period = policies.jitter().isZero() ? Optional.empty() : cron.period();
        if (period.isPresent() && policies.jitter().compareTo(period.get()) > 0) {
            boolean own = m.containsKey("jitter");
            nodes.problem(own ? m.get("jitter") : cronNode, own ? path + ".jitter" : path + ".cron",
                    (own ? "" : "fires more often than defaults.jitter allows (set jitter: 0s on this job for none): ") + "a jitter of " + Durations.format(policies.jitter())
                    + " is longer than the schedule's period of " + Durations.format(period.get())
                    + " (the shortest gap between two fires), so a slot would move past the next one");
            return Optional.empty();
        }
        return Optional.of(cron.withJitter(policies.jitter(), key));
    }

    /**
     * The jobs of the {@code jobs} list ({@code node}; null when absent, {@code root} then names
     * where), each over {@code defaults}; a job with a problem is reported and left out.
     */
    List<JobDefinition> read(Node node, Node root, Policies defaults, Duration redisTimeout, int historyKeep) {
        if (node == null) {
            if (jobsRequired) {
                nodes.problem(root, "jobs", "is missing; list at least one job");
            }
            return List.of();
        }
        if (!(node instanceof SequenceNode sequence)) {
            nodes.problem(node, "jobs", "must be a list of jobs, but was " + ConfigNodes.describe(node));
            return List.of();
        }
        if (sequence.getValue().isEmpty()) {
            if (jobsRequired) {
                nodes.problem(node, "jobs", "is empty; list at least one job");
            }
            return List.of();
        }
        List<JobDefinition> jobs = new ArrayList<>();
        Map<String, Integer> seen = new LinkedHashMap<>();
        for (int i = 0; i < sequence.getValue().size(); i++) {
            Node jobNode = sequence.getValue().get(i);
            String path = "jobs[" + i + "]";
            int before = nodes.problems.size();
            Map<String, Node> m = nodes.mapping(jobNode, path, KEYS).orElse(null);
            if (m == null) {
                continue;
            }
            Optional<String> name = nodes.required(m, "name", jobNode, path).flatMap(n -> nodes.string(n, path + ".name"));
            name.ifPresent(n -> {
                if (!JobDefinition.NAME.matcher(n).matches()) {
                    nodes.problem(m.get("name"), path + ".name", "must match " + JobDefinition.NAME + ", but was \"" + n + "\"");
                } else if (n.equals(JobDefinition.PREFLIGHT_NAME)) {
                    nodes.problem(m.get("name"), path + ".name", "\"" + n + "\" is reserved: every worker claims a probe slot "
                            + "of it at start; choose another name");
                } else if (seen.containsKey(n)) {
                    nodes.problem(m.get("name"), path + ".name", "duplicate job name \"" + n + "\" (first at line " + seen.get(n) + ")");
                } else {
                    seen.put(n, nodes.line(m.get("name")));
                }
            });
            Policies policies = new PolicySection(nodes).read(m, path, defaults);
            Optional<CronSchedule> schedule = nodes.required(m, "cron", jobNode, path)
                    .flatMap(n -> cronList(n, path + ".cron"))
                    .flatMap(exprs -> schedule(exprs, m, path, name.orElse(null), policies));
            boolean leaseReported = nodes.problems.stream().anyMatch(p -> p.path().equals(path + ".lease") || p.path().equals("defaults.lease"));
            if (!leaseReported && policies.lease().compareTo(redisTimeout.multipliedBy(2)) < 0) {
                // A renewal is sent at lease/3; if it runs into the client timeout it must still
                // end before the lease does, or a holder learns of a lost lease only after a peer
                // could have taken it over.
                nodes.problem(m.containsKey("lease") ? m.get("lease") : jobNode, path + ".lease", "must be at least twice "
                        + "redis.timeout (" + Durations.format(redisTimeout) + ") so that a renewal that times out "
                        + "still ends before the lease does, but was " + Durations.format(policies.lease()));
            }
            Optional<String> className = nodes.required(m, "class", jobNode, path).flatMap(n -> nodes.string(n, path + ".class"));
            io.lockstep.scheduler.Job[] built = new io.lockstep.scheduler.Job[1];
            if (checkClasses && className.isPresent()) {
                Optional<String> classProblem = reflective ? JobFactory.problemWith(className.get())
                        : JobFactory.typeProblem(className.get());
                classProblem.ifPresent(p -> nodes.problem(m.get("class"), path + ".class", p));
                if (classProblem.isEmpty() && reflective) {
                    // Run the constructor once: one that throws is a bad config, not a runtime surprise;
                    // the instance's params type is what the params are checked against.
                    JobFactory.constructionProblem(className.get(), job -> built[0] = job)
                            .ifPresent(p -> nodes.problem(m.get("class"), path + ".class", p));
                }
            }
            Map<String, Object> params = Map.of();
            if (m.containsKey("params")) {
                Object value = nodes.plain(m.get("params"), path + ".params");
                if (value instanceof Map<?, ?> map) {
                    @SuppressWarnings("unchecked")
                    Map<String, Object> typed = (Map<String, Object>) map;
                    params = typed;
                } else if (value != null) {
                    nodes.problem(m.get("params"), path + ".params", "must be a mapping, but was " + ConfigNodes.describe(m.get("params")));
                }
            }
            if (built[0] != null && nodes.problems.size() == before) {
                Class<?> type = null;
                try {
                    type = built[0].paramsType();
                } catch (RuntimeException | LinkageError e) {
                    nodes.problem(m.get("class"), path + ".class", "paramsType() of " + className.get() + " failed: " + e);
                }
                if (type != null) {
                    checkParams(type, params, m.get("params"), jobNode, path);
                }
            }
            if (built[0] instanceof AutoCloseable closeable) {
                try {
                    closeable.close(); // built only to be checked
                } catch (Exception | LinkageError e) {
                    // Nothing ran with it; a close that fails here is the job's own affair at run time.
                    if (e instanceof InterruptedException) {
                        Thread.currentThread().interrupt();
                    }
                }
            }
            boolean enabled = nodes.bool(m.get("enabled"), path + ".enabled").orElse(true);
            List<io.lockstep.scheduler.JobCalendar> skipOn = calendarList(m.get("skipOn"), path + ".skipOn");
            List<io.lockstep.scheduler.JobCalendar> onlyOn = calendarList(m.get("onlyOn"), path + ".onlyOn");
            io.lockstep.scheduler.RunOn runOn = runOn(m.get("runOn"), path + ".runOn");
            io.lockstep.scheduler.Expect expect = expect(m.get("expect"), path + ".expect", historyKeep, runOn);
            java.util.SortedMap<String, Integer> uses = uses(m.get("uses"), path + ".uses");
            io.lockstep.scheduler.Calendars jobCalendars = skipOn.contains(null) || onlyOn.contains(null) ? null
                    : new io.lockstep.scheduler.Calendars(skipOn, onlyOn);
            if (nodes.problems.size() == before && name.isPresent() && schedule.isPresent() && className.isPresent() && jobCalendars != null
                    && expect != null && uses != null) {
                jobs.add(new JobDefinition(name.get(), schedule.get(), className.get(), params, policies.lease(),
                        policies.misfireGrace(), policies.overlap(), policies.timeout(), enabled, policies.retry(),
                        policies.recover(), policies.catchUp(), policies.catchUpWindow(), jobCalendars, runOn, expect, uses));
            }
        }
        return jobs;
    }
}
