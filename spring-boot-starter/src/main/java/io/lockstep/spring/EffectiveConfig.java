package io.lockstep.spring;

import io.lockstep.scheduler.JobDefinition;
import io.lockstep.scheduler.config.ConfigException;
import io.lockstep.scheduler.config.ConfigLoader;
import io.lockstep.scheduler.config.ConfigProblem;
import io.lockstep.scheduler.config.LockstepConfig;
import io.lockstep.scheduler.config.WorkerSettings;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.yaml.snakeyaml.DumperOptions;
import org.yaml.snakeyaml.Yaml;

/**
 * The configuration the starter runs: the Lockstep YAML ({@code lockstep.config}) or the
 * {@code lockstep.redis.*} properties (never both), with {@code lockstep.worker.*} over the YAML's
 * {@code worker:} (a key set in both is an error: say it once),
 * plus the {@link LockstepJob} methods. Everything goes through the worker's own
 * {@link ConfigLoader}, so the checks and the messages are the same: a problem of the file names
 * its line, a problem of an annotation names its method.
 */
final class EffectiveConfig {

    /** The file's calendars with each relative {@code file:} made absolute against the config file's folder (as its loader read them). */
    private static Map<String, Object> withAbsoluteFiles(Map<String, Object> calendars, String configFile) {
        Map<String, Object> out = new LinkedHashMap<>();
        java.nio.file.Path folder = java.nio.file.Path.of(configFile).toAbsolutePath().getParent();
        calendars.forEach((name, value) -> {
            if (value instanceof Map<?, ?> m && m.get("file") instanceof String f && folder != null && !java.nio.file.Path.of(f).isAbsolute()) {
                Map<String, Object> copy = new LinkedHashMap<>(castMap(m));
                copy.put("file", folder.resolve(f).toString());
                out.put(name, copy);
            } else {
                out.put(name, value);
            }
        });
        return out;
    }

    private static final Pattern JOB_INDEX = Pattern.compile("^jobs\\[(\\d+)]\\.?");

    private EffectiveConfig() {}

    /**
     * @param shutdownTimeout {@code worker.shutdownTimeout} when neither the file nor the properties set it
     * @param applicationName {@code spring.application.name}, or null: the key prefix when the
     *     properties set none ({@link #keyPrefixOf})
     * @throws ConfigException with every problem found
     */
    static LockstepConfig load(LockstepProperties properties, AnnotatedJobs annotated, ClassLoader classes, Duration shutdownTimeout,
            String applicationName) {
        return load(properties, annotated, classes, shutdownTimeout, applicationName, List.of());
    }

    /** The same, with the application's {@link io.lockstep.scheduler.JobCalendar} beans known by name to {@code skipOn} and {@code onlyOn}. */
    static LockstepConfig load(LockstepProperties properties, AnnotatedJobs annotated, ClassLoader classes, Duration shutdownTimeout,
            String applicationName, List<io.lockstep.scheduler.JobCalendar> calendars) {
        ConfigLoader loader = ConfigLoader.defaults().builtByReflection(false).requiringJobs(false).withCalendars(calendars);
        LockstepConfig base;
        Map<String, Object> defaults = Map.of();
        Map<String, Object> fileCalendars = Map.of();
        Map<String, Object> limits = new LinkedHashMap<>(properties.getLimits());
        if (properties.getConfig() != null) {
            String text = read(properties);
            Object parsed = new Yaml().load(text);
            Map<?, ?> top = parsed instanceof Map<?, ?> m ? m : Map.of();
            Map<?, ?> yamlWorker = top.get("worker") instanceof Map<?, ?> w ? w : Map.of();
            List<ConfigProblem> both = new ArrayList<>();
            String file = sourceName(properties.getConfig());
            if (properties.getRedis().isSet()) {
                both.add(new ConfigProblem("lockstep.redis", 0, "", "set Redis in " + file + " or in lockstep.redis.* properties, not both"));
            }
            // The file's jobs and the worker JARs that read the same file see only the file's limits and alerts.
            if (!properties.getLimits().isEmpty()) {
                both.add(new ConfigProblem("lockstep.limits", 0, "", "with lockstep.config, set limits: in " + file
                        + " (its jobs and the workers reading it see only the file's), not in lockstep.limits.*"));
            }
            if (properties.getAlerts().isSet()) {
                both.add(new ConfigProblem("lockstep.alerts", 0, "", "with lockstep.config, set alerts: in " + file
                        + ", not in lockstep.alerts.*"));
            }
            LockstepProperties.Worker w = properties.getWorker();
            for (String key : List.of("id", "threads", "shutdownTimeout")) {
                Object value = key.equals("id") ? w.getId() : key.equals("threads") ? w.getThreads() : w.getShutdownTimeout();
                if (value != null && yamlWorker.containsKey(key)) {
                    both.add(new ConfigProblem("lockstep.worker." + key, 0, "", "set worker." + key + " in " + file
                            + " or in lockstep.worker.* properties, not both"));
                }
            }
            if (!both.isEmpty()) {
                throw new ConfigException(both);
            }
            LockstepConfig fromFile = withClasses(classes, () -> loader.load(file, text));
            WorkerSettings fw = fromFile.worker();
            WorkerSettings worker = new WorkerSettings(w.getId() != null ? w.getId() : fw.id(),
                    w.getThreads() != null ? w.getThreads() : fw.threads(),
                    w.getShutdownTimeout() != null ? w.getShutdownTimeout()
                            : yamlWorker.containsKey("shutdownTimeout") ? fw.shutdownTimeout() : shutdownTimeout,
                    fw.httpPort(), fw.httpBind(), fw.watch(), fw.labels(), fw.httpUsers());
            base = new LockstepConfig(fromFile.source(), fromFile.redis(), worker, fromFile.jobs(), fromFile.historyKeep(), fromFile.alerts());
            if (top.get("defaults") instanceof Map<?, ?> d) {
                defaults = castMap(d);
            }
            if (top.get("calendars") instanceof Map<?, ?> c) {
                fileCalendars = withAbsoluteFiles(castMap(c), file); // the annotated jobs may name them too
            }
            if (top.get("limits") instanceof Map<?, ?> l) {
                limits = castMap(l); // and its limits
            }
        } else {
            base = withClasses(classes, () -> loader.load("lockstep.* properties", dump(fromProperties(properties, applicationName))));
            if (properties.getWorker().getShutdownTimeout() == null) {
                WorkerSettings w = base.worker();
                base = new LockstepConfig(base.source(), base.redis(),
                        new WorkerSettings(w.id(), w.threads(), shutdownTimeout, w.httpPort(), w.httpBind(), w.watch(), w.labels(), w.httpUsers()), base.jobs(), base.historyKeep(),
                        base.alerts());
            }
        }
        if (annotated.isEmpty()) {
            return base;
        }
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("redis", Map.of("timeout", base.redis().timeout().toMillis() + "ms"));
        if (!defaults.isEmpty()) {
            doc.put("defaults", defaults);
        }
        if (!fileCalendars.isEmpty()) {
            doc.put("calendars", fileCalendars);
        }
        if (!limits.isEmpty()) {
            doc.put("limits", limits);
        }
        doc.put("jobs", annotated.asYaml());
        LockstepConfig methods;
        try {
            methods = withClasses(classes, () -> ConfigLoader.defaults().builtByReflection(false).withCalendars(calendars)
                    .load("@LockstepJob", dump(doc)));
        } catch (ConfigException e) {
            throw new ConfigException(e.problems().stream().map(p -> located(p, annotated)).toList());
        }
        List<JobDefinition> jobs = new ArrayList<>(base.jobs());
        Map<String, String> seen = new HashMap<>();
        String baseSource = base.source();
        base.jobs().forEach(j -> seen.put(j.name(), baseSource));
        List<ConfigProblem> duplicates = new ArrayList<>();
        for (int i = 0; i < methods.jobs().size(); i++) {
            JobDefinition j = methods.jobs().get(i);
            String where = annotated.all().get(i).where();
            String before = seen.putIfAbsent(j.name(), where);
            if (before != null) {
                duplicates.add(new ConfigProblem(where, 0, "name", "job \"" + j.name() + "\" is also declared by " + before));
            }
            jobs.add(j);
        }
        if (!duplicates.isEmpty()) {
            throw new ConfigException(duplicates);
        }
        return new LockstepConfig(base.source(), base.redis(), base.worker(), jobs, base.historyKeep(), base.alerts());
    }

    /** A problem of the generated document, told about the method it came from. */
    private static ConfigProblem located(ConfigProblem p, AnnotatedJobs annotated) {
        Matcher m = JOB_INDEX.matcher(p.path());
        if (m.find()) {
            int i = Integer.parseInt(m.group(1));
            if (i < annotated.all().size()) {
                return new ConfigProblem(annotated.all().get(i).where(), 0, p.path().substring(m.end()), p.message());
            }
        }
        return p;
    }

    /**
     * The key prefix of an application configured by properties that sets none (F6 of the 2026-12-04
     * trial): its {@code spring.application.name}, so that two applications on one Redis stay apart
     * by default (braces, which would break the hash tags, and blanks become '-'); "lockstep" without
     * a name. An application configured by the YAML keeps the YAML's ({@code redis.keyPrefix}, else
     * "lockstep"), which the worker JARs reading the same file use too.
     */
    static String keyPrefixOf(String applicationName) {
        if (applicationName == null || applicationName.isBlank()) {
            return null;
        }
        return applicationName.strip().replaceAll("[{}\\s]", "-");
    }

    private static Map<String, Object> fromProperties(LockstepProperties properties, String applicationName) {
        Map<String, Object> doc = new LinkedHashMap<>();
        LockstepProperties.Redis r = properties.getRedis();
        Map<String, Object> redis = new LinkedHashMap<>();
        putIfSet(redis, "uri", r.getUri());
        putIfSet(redis, "user", r.getUser());
        putIfSet(redis, "password", r.getPassword());
        putIfSet(redis, "timeout", r.getTimeout() == null ? null : r.getTimeout().toMillis() + "ms");
        putIfSet(redis, "keyPrefix", r.getKeyPrefix() != null ? r.getKeyPrefix() : keyPrefixOf(applicationName));
        if (!redis.isEmpty()) {
            doc.put("redis", redis);
        }
        LockstepProperties.Worker w = properties.getWorker();
        Map<String, Object> worker = new LinkedHashMap<>();
        putIfSet(worker, "id", w.getId());
        putIfSet(worker, "threads", w.getThreads());
        putIfSet(worker, "shutdownTimeout", w.getShutdownTimeout() == null ? null : w.getShutdownTimeout().toMillis() + "ms");
        if (!worker.isEmpty()) {
            doc.put("worker", worker);
        }
        if (!properties.getLimits().isEmpty()) {
            doc.put("limits", new LinkedHashMap<>(properties.getLimits()));
        }
        LockstepProperties.Alerts a = properties.getAlerts();
        if (a.isSet()) {
            Map<String, Object> alerts = new LinkedHashMap<>();
            if (!a.getWebhooks().isEmpty()) {
                alerts.put("webhooks", List.copyOf(a.getWebhooks()));
            }
            putIfSet(alerts, "timeout", a.getTimeout() == null ? null : a.getTimeout().toMillis() + "ms");
            putIfSet(alerts, "retries", a.getRetries());
            doc.put("alerts", alerts);
        }
        return doc;
    }

    private static void putIfSet(Map<String, Object> m, String key, Object value) {
        if (value != null) {
            m.put(key, value);
        }
    }

    private static String dump(Map<String, Object> doc) {
        if (doc.isEmpty()) {
            return "{}\n";
        }
        DumperOptions options = new DumperOptions();
        options.setDefaultFlowStyle(DumperOptions.FlowStyle.BLOCK);
        return new Yaml(options).dump(doc);
    }

    /** How problems name the file: its path when it is one, else the resource ({@code class path resource [lockstep.yaml]}). */
    static String sourceName(org.springframework.core.io.Resource resource) {
        if (resource.isFile()) {
            try {
                return resource.getFile().getPath();
            } catch (IOException e) {
                // fall through to the description
            }
        }
        return resource.getDescription();
    }

    private static String read(LockstepProperties properties) {
        try (var in = properties.getConfig().getInputStream()) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new ConfigException(List.of(new ConfigProblem(sourceName(properties.getConfig()), 0, "",
                    "cannot be read: " + e.getMessage())));
        }
    }

    /** Job classes are looked up with the application's class loader (Boot's fat JAR, devtools). */
    private static <T> T withClasses(ClassLoader classes, java.util.function.Supplier<T> load) {
        Thread t = Thread.currentThread();
        ClassLoader before = t.getContextClassLoader();
        t.setContextClassLoader(classes);
        try {
            return load.get();
        } finally {
            t.setContextClassLoader(before);
        }
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> castMap(Map<?, ?> m) {
        return (Map<String, Object>) m;
    }
}
