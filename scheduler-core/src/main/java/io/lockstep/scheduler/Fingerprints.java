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
     * @param differences the fields that differ, as {@code field: reference vs theirs}
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
        Map<String, Drift> found = new TreeMap<>();
        for (Map.Entry<String, List<String>> e : new TreeMap<>(othersByHash).entrySet()) {
            Map<String, String> theirs = configOf.apply(e.getKey());
            if (theirs.isEmpty()) {
                continue;
            }
            java.util.Set<String> jobs = new java.util.TreeSet<>(reference.keySet());
            jobs.addAll(theirs.keySet());
            for (String job : jobs) {
                List<String> diffs = differences(reference.get(job), theirs.get(job));
                if (!diffs.isEmpty()) {
                    Drift before = found.get(job);
                    java.util.Set<String> workers = new java.util.TreeSet<>(before == null ? referenceWorkers : before.workers());
                    workers.addAll(e.getValue());
                    found.put(job, new Drift(job, List.copyOf(workers), before == null ? diffs : before.differences()));
                }
            }
        }
        return List.copyOf(found.values());
    }

    /**
     * The fields whose change moves which slots a job has, or what it is called: a config rolled
     * out worker by worker decides each slot of either definition once, but an occurrence the change
     * moved (or a renamed job's) can run under both until every worker runs the new one.
     */
    private static final java.util.Set<String> SLOT_IDENTITY = java.util.Set.of("cron", "zone", "job");

    /**
     * What rolling {@code differences} out worker by worker does (the {@code rollout} of a
     * {@code config_drift} event). Every field but the slots' identity (cron, zone, the job's name)
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
        fields.put("cron", d.schedule().expression());
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

    /**
     * The fields in which two descriptions of one job differ, as {@code field: ours vs theirs}; empty
     * when they agree. A job one side does not have reads as {@code job: defined vs not defined}.
     */
    public static List<String> differences(String ours, String theirs) {
        if (ours == null || theirs == null) {
            return List.of("job: " + (ours == null ? "not defined" : "defined") + " vs " + (theirs == null ? "not defined" : "defined"));
        }
        try {
            Map<?, ?> a = JSON.readValue(ours, Map.class);
            Map<?, ?> b = JSON.readValue(theirs, Map.class);
            List<String> diffs = new java.util.ArrayList<>();
            java.util.Set<Object> keys = new java.util.LinkedHashSet<>(a.keySet());
            keys.addAll(b.keySet());
            for (Object k : keys) {
                if (!java.util.Objects.equals(a.get(k), b.get(k))) {
                    diffs.add(k + ": " + a.get(k) + " vs " + b.get(k));
                }
            }
            return diffs;
        } catch (JsonProcessingException e) {
            return ours.equals(theirs) ? List.of() : List.of("definition: " + ours + " vs " + theirs);
        }
    }
}
