package io.lockstep.worker;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.lockstep.redis.RedisAdmin;
import io.lockstep.scheduler.Fingerprints;
import io.lockstep.scheduler.JobDefinition;
import io.lockstep.scheduler.config.LockstepConfig;
import io.lockstep.scheduler.lock.WorkerInfo;
import java.io.PrintWriter;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code status --config FILE [--json]}: the cluster as Redis knows it: live workers, every job of
 * the config (paused, next fire, last run, runs in flight) and config drift between live workers.
 */
@Command(name = "status", mixinStandardHelpOptions = true,
        description = "Shows live workers, every job (paused, next fire, last run, runs in flight) and config drift.")
final class StatusCommand extends AdminCommand {

    @Option(names = "--json", description = "one JSON document instead of tables")
    boolean json;

    /** How many of each job's latest runs the JSON (and the status page) carries. */
    /** History entries read per job: the status page's strip shows the slots among them. */
    static final int RECENT = 30;

    /** Everything {@code status} shows, read once. */
    record Snapshot(Instant now, List<WorkerInfo> workers, List<JobDefinition> jobs, Map<String, RedisAdmin.JobState> states,
            List<Fingerprints.Drift> drift, Map<String, String> masters, List<io.lockstep.scheduler.lock.Backfill.Entry> backfills,
            Map<String, io.lockstep.scheduler.lock.Expectations.State> expectations,
            Map<String, io.lockstep.scheduler.lock.Permits.State> limits) {

        /** The status of {@code jobs} (a config file's, or the definitions a running worker has in force). */
        static Snapshot read(List<JobDefinition> jobs, RedisAdmin admin) {
            Instant now = Instant.ofEpochMilli(admin.serverTimeMillis());
            List<WorkerInfo> workers = admin.workers();
            Map<String, RedisAdmin.JobState> states = new LinkedHashMap<>();
            for (RedisAdmin.JobState state : admin.jobs(jobs.stream().map(JobDefinition::name).toList(), RECENT)) {
                states.put(state.job(), state);
            }
            java.util.Set<String> names = new java.util.HashSet<>(jobs.stream().map(JobDefinition::name).toList());
            return new Snapshot(now, workers, jobs, states, drift(workers, admin, jobs), admin.redlockMasters(),
                    admin.backfills().stream().filter(b -> names.contains(b.backfill().job())).toList(),
                    admin.expectations(jobs.stream().filter(j -> j.expect().any()).map(JobDefinition::name).toList()),
                    admin.limits(limitsOf(jobs)));
        }

        /** The limits {@code jobs} use, each with its size (the first job's, should a rollout disagree). */
        static Map<String, Integer> limitsOf(List<JobDefinition> jobs) {
            Map<String, Integer> limits = new java.util.TreeMap<>();
            jobs.forEach(j -> j.uses().forEach(limits::putIfAbsent));
            return limits;
        }

        /**
         * Drift against the config most live workers run among those that share a job with {@code jobs}
         * (the configs of other applications on the same prefix are not this status's drift; ties: the
         * oldest worker's).
         */
        private static List<Fingerprints.Drift> drift(List<WorkerInfo> workers, RedisAdmin admin, List<JobDefinition> jobs) {
            Map<String, List<String>> byHash = new LinkedHashMap<>();
            workers.forEach(w -> byHash.computeIfAbsent(w.configHash(), h -> new ArrayList<>()).add(w.id()));
            if (byHash.size() < 2) {
                return List.of();
            }
            java.util.Set<String> names = new java.util.HashSet<>(jobs.stream().map(JobDefinition::name).toList());
            Map<String, Map<String, String>> read = new HashMap<>(); // each published config read once
            java.util.function.Function<String, Map<String, String>> configOf = hash -> read.computeIfAbsent(hash, admin::config);
            String reference = byHash.entrySet().stream()
                    .filter(e -> !java.util.Collections.disjoint(configOf.apply(e.getKey()).keySet(), names))
                    .max(Comparator.comparingInt(e -> e.getValue().size())).map(Map.Entry::getKey).orElse(null);
            if (reference == null) {
                return List.of();
            }
            Map<String, List<String>> others = new HashMap<>(byHash);
            List<String> referenceWorkers = others.remove(reference);
            return Fingerprints.drift(configOf.apply(reference), referenceWorkers, others, configOf);
        }

        /** A job's expectations and where they stand: {@code breached} true while a breach is open (the page shows it red). */
        private static ObjectNode expectJson(ObjectMapper mapper, JobDefinition j, io.lockstep.scheduler.lock.Expectations.State st) {
            ObjectNode o = mapper.createObjectNode();
            if (!j.expect().succeededWithin().isZero()) {
                o.put("succeededWithin", io.lockstep.scheduler.config.Durations.format(j.expect().succeededWithin()));
            }
            if (!j.expect().successEvery().isZero()) {
                o.put("successEvery", io.lockstep.scheduler.config.Durations.format(j.expect().successEvery()));
            }
            o.put("breached", st != null && st.breached());
            if (st != null && st.withinBreachSlotMillis() > 0) {
                o.put("breachedSlot", Instant.ofEpochMilli(st.withinBreachSlotMillis()).toString());
            }
            if (st != null && st.everyBreachMillis() > 0) {
                o.put("silentSince", st.lastSuccessMillis() > 0 ? Instant.ofEpochMilli(st.lastSuccessMillis()).toString() : null);
                o.put("breachedAt", Instant.ofEpochMilli(st.everyBreachMillis()).toString());
            }
            o.put("lastSuccess", st == null || st.lastSuccessMillis() == 0 ? null : Instant.ofEpochMilli(st.lastSuccessMillis()).toString());
            return o;
        }

        ObjectNode toJson(ObjectMapper mapper) {
            ObjectNode root = mapper.createObjectNode();
            ArrayNode ws = root.putArray("workers");
            for (WorkerInfo w : workers) {
                ws.addObject().put("id", w.id()).put("host", w.host()).put("pid", w.pid()).put("version", w.version())
                        .put("started", w.started().toString()).put("lastSeen", w.lastSeen().toString())
                        .put("configHash", w.configHash()).put("threads", w.threads()).put("busy", w.busy());
            }
            ArrayNode js = root.putArray("jobs");
            for (JobDefinition j : jobs) {
                RedisAdmin.JobState s = states.get(j.name());
                ObjectNode o = js.addObject().put("name", j.name()).put("cron", j.schedule().expression())
                        .put("zone", j.schedule().zone().getId()).put("enabled", j.enabled());
                ArrayNode crons = o.putArray("crons"); // as evaluated: each H replaced by its hashed value
                j.schedule().expanded().forEach(crons::add);
                if (!j.schedule().jitter().isZero()) {
                    o.put("jitterMs", j.schedule().jitter().toMillis()).put("jitterOffsetMs", j.schedule().offset().toMillis());
                }
                if (s.pause().isPresent()) {
                    RedisAdmin.Pause p = s.pause().get();
                    o.putObject("paused").put("note", p.note()).put("by", p.by()).put("at", p.at().toString())
                            .put("until", p.until().map(Instant::toString).orElse(null));
                } else {
                    o.putNull("paused");
                }
                if (!s.mastersDisagree().isEmpty()) {
                    o.put("mastersDisagree", s.mastersDisagree());
                }
                if (j.expect().any()) {
                    o.set("expect", expectJson(mapper, j, expectations.get(j.name())));
                }
                o.put("nextFire", j.enabled() ? j.schedule().next(now).map(Instant::toString).orElse(null) : null);
                if (s.last().isPresent()) {
                    RedisAdmin.Run r = s.last().get();
                    o.putObject("last").put("slot", r.slot().toString()).put("worker", r.worker()).put("outcome", r.outcome())
                            .put("fencingToken", r.fencingToken()).put("durationMs", r.durationMs()).put("manual", r.manual());
                } else {
                    o.putNull("last");
                }
                ArrayNode recent = o.putArray("recent");
                for (RedisAdmin.Run r : s.recent()) {
                    recent.addObject().put("slot", r.slot().toString()).put("worker", r.worker()).put("outcome", r.outcome())
                            .put("attempt", r.attempt()).put("fencingToken", r.fencingToken()).put("durationMs", r.durationMs())
                            .put("error", r.error()).put("manual", r.manual()).put("reason", r.reason());
                }
                ArrayNode running = o.putArray("running");
                for (RedisAdmin.InFlight f : s.running()) {
                    running.addObject().put("slot", f.slot().toString()).put("worker", f.worker())
                            .put("fencingToken", f.fencingToken()).put("leaseLeftMs", f.leaseLeft().toMillis()).put("manual", f.manual());
                }
            }
            ArrayNode bs = root.putArray("backfills");
            for (io.lockstep.scheduler.lock.Backfill.Entry e : backfills) {
                io.lockstep.scheduler.lock.Backfill b = e.backfill();
                ObjectNode o = bs.addObject().put("job", b.job()).put("id", b.id()).put("from", b.from().toString())
                        .put("to", b.to().toString()).put("perSecond", b.perSecond()).put("by", b.by())
                        .put("requestedAt", b.requestedAt().toString())
                        .put("state", b.cancelled() ? "cancelled" : e.progress() == null ? "waiting" : e.progress().state());
                if (e.progress() != null) {
                    io.lockstep.scheduler.lock.Backfill.Progress p = e.progress();
                    o.putObject("progress").put("driver", p.driver()).put("total", p.total()).put("passed", p.passed())
                            .put("ran", p.ran()).put("decided", p.decided()).put("skipped", p.skipped())
                            .put("cursor", p.cursor() == null ? null : p.cursor().toString()).put("updatedAt", p.updatedAt().toString());
                }
            }
            ArrayNode ls = root.putArray("limits");
            limits.forEach((name, st) -> {
                ObjectNode o = ls.addObject().put("name", name).put("size", st.size());
                ArrayNode hs = o.putArray("holders");
                st.holders().forEach(h -> hs.addObject().put("permit", h.permit()).put("holder", h.holder())
                        .put("leaseLeftMs", h.leaseLeft().toMillis()));
                ArrayNode wsa = o.putArray("waiters");
                st.waiters().forEach(w -> wsa.addObject().put("waiter", w.waiter()).put("slot", w.priority().toString()));
            });
            ArrayNode ds = root.putArray("drift");
            for (Fingerprints.Drift d : drift) {
                ObjectNode o = ds.addObject().put("job", d.job());
                d.workers().forEach(o.putArray("workers")::add);
                d.differences().forEach(o.putArray("differences")::add);
            }
            if (!masters.isEmpty()) {
                ObjectNode ms = root.putObject("redlockMasters"); // asked from this host now: "answers", or why not
                masters.forEach(ms::put);
            }
            root.put("serverTime", now.toString());
            return root;
        }
    }

    /** A waiter as the scheduler names it ({@code <priority ms>:<hash>:<job>:<token>}): {@code job (since ...)}. */
    static String waiterName(String waiter) {
        String[] p = waiter.split(":", 4);
        if (p.length == 4 && !p[0].isEmpty() && p[0].chars().allMatch(Character::isDigit)) {
            return p[2] + " (" + Instant.ofEpochMilli(Long.parseLong(p[0])) + ")";
        }
        return waiter;
    }

    /** The EXPECT column: {@code ok}, or {@code BREACHED} and what. */
    private static String expect(JobDefinition j, io.lockstep.scheduler.lock.Expectations.State st, Instant now) {
        if (!j.expect().any()) {
            return "-";
        }
        if (st == null || !st.breached()) {
            return st == null ? "not judged yet" : "ok";
        }
        List<String> what = new ArrayList<>();
        if (st.withinBreachSlotMillis() > 0) {
            what.add("slot " + Instant.ofEpochMilli(st.withinBreachSlotMillis()) + " did not succeed within "
                    + io.lockstep.scheduler.config.Durations.format(j.expect().succeededWithin()));
        }
        if (st.everyBreachMillis() > 0) {
            what.add("no success for " + io.lockstep.scheduler.config.Durations.format(j.expect().successEvery())
                    + (st.lastSuccessMillis() > 0 ? " (last " + relative(Instant.ofEpochMilli(st.lastSuccessMillis()), now) + ")" : ""));
        }
        return "BREACHED: " + String.join("; ", what);
    }

    @Override
    int run(LockstepConfig config, RedisAdmin admin, PrintWriter out, PrintWriter err) {
        Snapshot s = Snapshot.read(config.jobs(), admin);
        if (json) {
            out.println(s.toJson(new ObjectMapper()).toString());
            return WorkerMain.OK;
        }
        out.println("workers (" + s.workers().size() + " live)");
        if (!s.workers().isEmpty()) {
            Table t = new Table("ID", "HOST", "PID", "VERSION", "STARTED", "LAST SEEN", "BUSY", "CONFIG");
            for (WorkerInfo w : s.workers()) {
                t.row(w.id(), w.host(), Long.toString(w.pid()), w.version(), relative(w.started(), s.now()),
                        relative(w.lastSeen(), s.now()), w.busy() + "/" + w.threads(), w.configHash());
            }
            t.print(out);
        }
        out.println();
        out.println("jobs (" + s.jobs().size() + ")");
        boolean anyExpect = s.jobs().stream().anyMatch(j -> j.expect().any());
        Table t = anyExpect ? new Table("JOB", "CRON", "NEXT", "LAST RUN", "RUNNING", "PAUSED", "EXPECT")
                : new Table("JOB", "CRON", "NEXT", "LAST RUN", "RUNNING", "PAUSED");
        for (JobDefinition j : s.jobs()) {
            RedisAdmin.JobState st = s.states().get(j.name());
            String next = !j.enabled() ? "disabled" : j.schedule().next(s.now()).map(n -> relative(n, s.now())).orElse("never");
            String last = st.last().map(r -> r.outcome() + " " + relative(r.slot(), s.now()) + " on " + r.worker()
                    + (r.manual() ? " (manual)" : "")).orElse("-");
            String running = st.running().isEmpty() ? "-" : String.join(", ", st.running().stream()
                    .map(f -> f.worker() + " (token " + f.fencingToken() + ", lease " + Math.max(0, f.leaseLeft().toSeconds()) + " s left)").toList());
            String paused = st.pause().map(p -> "yes" + (p.note().isEmpty() ? "" : ": " + p.note())
                    + p.until().map(u -> ", ends " + relative(u, s.now())).orElse("")).orElse("-")
                    + (st.mastersDisagree().isEmpty() ? "" : " (" + st.mastersDisagree() + ")");
            if (anyExpect) {
                t.row(j.name(), Configs.schedule(j.schedule()), next, last, running, paused, expect(j, s.expectations().get(j.name()), s.now()));
            } else {
                t.row(j.name(), Configs.schedule(j.schedule()), next, last, running, paused);
            }
        }
        t.print(out);
        out.println();
        if (!s.limits().isEmpty()) {
            out.println("limits (" + s.limits().size() + ")");
            Table l = new Table("LIMIT", "IN USE", "HOLDERS", "WAITING");
            s.limits().forEach((name, st) -> l.row(name, st.holders().size() + "/" + st.size(),
                    st.holders().isEmpty() ? "-" : String.join(", ", st.holders().stream().map(h -> "#" + h.permit() + " "
                            + (h.holder().isEmpty() ? "(lock API)" : h.holder()) + " (" + Math.max(0, h.leaseLeft().toSeconds()) + " s left)").toList()),
                    st.waiters().isEmpty() ? "-" : st.waiters().size() + ": " + String.join(", ", st.waiters().stream()
                            .map(w -> waiterName(w.waiter())).toList())));
            l.print(out);
            out.println();
        }
        if (!s.backfills().isEmpty()) {
            out.println("backfills (" + s.backfills().size() + ")");
            Table b = new Table("JOB", "RANGE", "PROGRESS", "RATE", "STATE", "BY");
            for (io.lockstep.scheduler.lock.Backfill.Entry e : s.backfills()) {
                io.lockstep.scheduler.lock.Backfill f = e.backfill();
                io.lockstep.scheduler.lock.Backfill.Progress p = e.progress();
                String state = f.cancelled() ? "cancelled" : p == null ? "waiting for a worker" : p.state() + " on " + p.driver();
                b.row(f.job(), f.from() + " .. " + f.to(), p == null ? "-" : BackfillCommand.bar(p, (int) p.total()),
                        f.perSecond() + "/s", state, f.by() + ", " + relative(f.requestedAt(), s.now()));
            }
            b.print(out);
            out.println();
        }
        if (!s.masters().isEmpty()) {
            // This host's view; each worker's own is its lockstep.redlock.master metric and its events.
            out.println("redlock masters (asked from this host now): " + String.join(", ", s.masters().entrySet().stream()
                    .map(e -> e.getKey() + " " + e.getValue()).toList()));
        }
        if (s.drift().isEmpty()) {
            out.println("config drift: none");
        } else {
            out.println("config drift (" + s.drift().size() + " jobs)");
            for (Fingerprints.Drift d : s.drift()) {
                out.println("  " + d.job() + " on " + String.join(", ", d.workers()) + ": " + String.join("; ", d.differences()));
            }
        }
        return WorkerMain.OK;
    }
}
