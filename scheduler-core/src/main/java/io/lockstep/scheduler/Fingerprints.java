package io.lockstep.scheduler;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What a worker publishes about its job definitions so that peers can tell when they disagree
 * (config drift): per job a canonical JSON description (every field that changes what runs when;
 * params with their keys sorted, so the order in the YAML does not count), and one hash over all
 * of them.
 */
public final class Fingerprints {

    private static final ObjectMapper JSON = new ObjectMapper().configure(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS, true);

    private Fingerprints() {}

    /**
     * A job on which live workers disagree.
     *
     * @param job the job
     * @param workers the workers involved: those of the reference config and those that differ from it
     * @param differences the fields that differ, each as {@code field: w1: value; w2, w3: other value}
     *     (the workers that have each value; {@code job: w1: defined; w2: not defined} for a job
     *     some do not have)
     */
    public record Drift(String job, List<String> workers, List<String> differences) {}

    /**
     * The jobs on which workers disagree, compared with a reference config (this worker's, or the
     * one most workers run).
     *
     * @param reference the reference config (job name to description)
     * @param referenceWorkers the workers that run it
     * @param othersByHash the other workers, by the hash of their config
     * @param configOf the config a hash stands for; empty when it is not known (yet)
     */
    public static List<Drift> drift(Map<String, String> reference, List<String> referenceWorkers,
            Map<String, List<String>> othersByHash, java.util.function.Function<String, Map<String, String>> configOf) {
        // Each config whose jobs are known and that shares a job with the reference (one with no job in
        // common is another application on the same prefix, see strangers), with its workers: the reference first.
        Map<List<String>, Map<String, String>> configs = new LinkedHashMap<>();
        configs.put(sorted(referenceWorkers), reference);
        for (Map.Entry<String, List<String>> e : new TreeMap<>(othersByHash).entrySet()) {
            Map<String, String> theirs = configOf.apply(e.getKey());
            if (!theirs.isEmpty() && !java.util.Collections.disjoint(theirs.keySet(), reference.keySet())) {
                configs.merge(sorted(e.getValue()), theirs, (a, b) -> a);
            }
        }
        java.util.Set<String> jobs = new java.util.TreeSet<>();
        configs.values().forEach(c -> jobs.addAll(c.keySet()));
        List<Drift> found = new java.util.ArrayList<>();
        for (String job : jobs) {
            Map<List<String>, String> byWorkers = new LinkedHashMap<>();
            configs.forEach((workers, config) -> byWorkers.put(workers, config.get(job)));
            if (byWorkers.values().stream().distinct().count() < 2) {
                continue;
            }
            java.util.Set<String> workers = new java.util.TreeSet<>();
            byWorkers.keySet().forEach(workers::addAll);
            found.add(new Drift(job, List.copyOf(workers), differences(byWorkers)));
        }
        return List.copyOf(found);
    }

    /**
     * The workers whose config (known) shares no job with {@code reference}: most likely another
     * application on the same Redis and key prefix (or a config that renamed every job). Their jobs
     * are not drift; they are worth one warning. Sorted.
     */
    public static List<String> strangers(Map<String, String> reference, Map<String, List<String>> othersByHash,
            java.util.function.Function<String, Map<String, String>> configOf) {
        java.util.Set<String> strangers = new java.util.TreeSet<>();
        othersByHash.forEach((hash, workers) -> {
            Map<String, String> theirs = configOf.apply(hash);
            if (!theirs.isEmpty() && !reference.isEmpty() && java.util.Collections.disjoint(theirs.keySet(), reference.keySet())) {
                strangers.addAll(workers);
            }
        });
        return List.copyOf(strangers);
    }

    private static List<String> sorted(List<String> workers) {
        return workers.stream().sorted().toList();
    }

    /** Per field that differs among the descriptions (by the workers that have each), who has which value. */
    private static List<String> differences(Map<List<String>, String> byWorkers) {
        Map<List<String>, Map<?, ?>> fields = new LinkedHashMap<>();
        byWorkers.forEach((workers, text) -> fields.put(workers, text == null ? null : parse(text)));
        List<String> diffs = new java.util.ArrayList<>();
        if (fields.values().stream().anyMatch(java.util.Objects::isNull)) {
            diffs.add("job: " + whoHas(fields, f -> f == null ? "not defined" : "defined"));
            return diffs;
        }
        java.util.Set<Object> keys = new java.util.LinkedHashSet<>();
        fields.values().forEach(f -> keys.addAll(f.keySet()));
        for (Object k : keys) {
            if (fields.values().stream().map(f -> f.get(k)).distinct().count() > 1) {
                diffs.add(k + ": " + whoHas(fields, f -> String.valueOf(f.get(k))));
            }
        }
        return diffs;
    }

    /** {@code w1: value; w2, w3: other value}: the workers grouped by the value {@code value} reads for them. */
    private static String whoHas(Map<List<String>, Map<?, ?>> fields, java.util.function.Function<Map<?, ?>, String> value) {
        Map<String, java.util.Set<String>> workersByValue = new LinkedHashMap<>();
        fields.forEach((workers, f) -> workersByValue.computeIfAbsent(value.apply(f), v -> new java.util.TreeSet<>()).addAll(workers));
        List<String> parts = new java.util.ArrayList<>();
        workersByValue.forEach((v, workers) -> parts.add(String.join(", ", workers) + ": " + v));
        return String.join("; ", parts);
    }

    private static Map<?, ?> parse(String description) {
        try {
            return JSON.readValue(description, Map.class);
        } catch (JsonProcessingException e) {
            return Map.of("definition", description); // not ours to read: compared whole
        }
    }

    /**
     * The fields whose change moves which slots a job has, or what it is called: a config rolled
     * out worker by worker decides each slot of either definition once, but an occurrence the change
     * moved (or a renamed job's) can run under both until every worker runs the new one.
     */
    private static final java.util.Set<String> SLOT_IDENTITY = java.util.Set.of("cron", "zone", "job", "jitter");

    /**
     * What rolling {@code differences} out worker by worker does (the {@code rollout} of a
     * {@code config_drift} event). Every field but the slots' identity (cron, zone, jitter, the job's name)
     * is safe: the store keeps the shortest slot record ttl any worker wrote (claim.lua's
     * {@code kept}), so a slot one config decided stays decided for every other, whatever their
     * misfireGrace and lease. A changed cron or zone, or a renamed job, cannot be made safe by the
     * store, since the slots themselves differ; this says so and what to do.
     */
    public static String rollout(List<String> differences) {
        List<String> moved = differences.stream().map(d -> d.substring(0, Math.max(d.indexOf(':'), 0)))
                .filter(SLOT_IDENTITY::contains).distinct().toList();
        if (moved.isEmpty()) {
            return "safe worker by worker: every slot stays decided once, whichever config decides it";
        }
        return "not safe worker by worker (" + String.join(", ", moved) + "): each definition's slots are decided once, but a run"
                + " the change moves (or a renamed job's) can run under both until every worker has the new config; if it must"
                + " run once, pause the job for the rollout, or stop every worker and start them on the new config";
    }

    /** The canonical description of one job: a JSON object, its fields in a fixed order. */
    public static String describe(JobDefinition d) {
        Map<String, Object> fields = new LinkedHashMap<>();
        var schedule = d.schedule();
        fields.put("cron", schedule.expanded().equals(schedule.expressions()) ? schedule.expression()
                : schedule.expression() + " (" + String.join("; ", schedule.expanded()) + ")"); // H, as hashed
        if (!schedule.jitter().isZero()) {
            fields.put("jitter", schedule.jitter() + " offset " + schedule.offset()); // only when set: older workers have none
        }
        fields.put("zone", d.schedule().zone().getId());
        fields.put("class", d.jobClass());
        fields.put("params", new TreeMap<>(d.params()));
        fields.put("enabled", d.enabled());
        fields.put("lease", d.lease().toString());
        fields.put("misfireGrace", d.misfireGrace().toString());
        fields.put("overlap", d.overlap().name().toLowerCase(java.util.Locale.ROOT));
        fields.put("timeout", d.timeout().toString());
        fields.put("retry", d.retry().toString());
        fields.put("recover", d.recover().name().toLowerCase(java.util.Locale.ROOT));
        fields.put("catchUp", d.catchUp().name().toLowerCase(java.util.Locale.ROOT) + " " + d.catchUpWindow());
        if (!d.runOn().equals(RunOn.ANY)) { // only when set: older workers have none; a reload that changes it rebuilds the job
            fields.put("runOn", d.runOn().toString());
        }
        if (!d.uses().isEmpty()) { // only when set: older workers have none
            fields.put("uses", d.uses().toString());
        }
        if (d.expect().any()) { // only when set: older workers have none; a reload that changes it puts it in force
            fields.put("expect", d.expect().spec());
        }
        if (d.calendars().any()) { // only when set: older workers have none
            fields.put("calendars", "skipOn " + d.calendars().skipOn().stream().map(JobCalendar::describe).toList()
                    + " onlyOn " + d.calendars().onlyOn().stream().map(JobCalendar::describe).toList());
        }
        try {
            return JSON.writeValueAsString(fields);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("job " + d.name() + ": params cannot be written as JSON: " + e.getMessage(), e);
        }
    }

    /** Every job's description, by name, sorted. */
    public static Map<String, String> describe(List<JobDefinition> jobs) {
        Map<String, String> all = new TreeMap<>();
        jobs.forEach(d -> all.put(d.name(), describe(d)));
        return all;
    }

    /** A short hash (16 hex digits of SHA-256) of all the descriptions: equal for equal job sets. */
    public static String hash(Map<String, String> descriptions) {
        try {
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            new TreeMap<>(descriptions).forEach((name, text) -> {
                sha.update(name.getBytes(StandardCharsets.UTF_8));
                sha.update((byte) 0);
                sha.update(text.getBytes(StandardCharsets.UTF_8));
                sha.update((byte) 0);
            });
            return HexFormat.of().formatHex(sha.digest(), 0, 8);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }
}
