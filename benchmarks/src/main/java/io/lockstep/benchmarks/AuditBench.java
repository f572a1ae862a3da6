package io.lockstep.benchmarks;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.lockstep.scheduler.config.ConfigLoader;
import io.lockstep.worker.audit.Audit;
import io.lockstep.worker.audit.AuditReport;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * {@code lockstep audit} over a million events: the time and the heap it takes, against two floors
 * measured in the same JVM on the same file: reading its lines, and parsing each line into a
 * Jackson tree (what any JSON tool does at least). Each run is a fresh JVM with {@code -Xmx512m}
 * (the bound: a run that needed more would fail), so the spread covers JIT and GC.
 *
 * <p>The events are what three workers write for 100 per-second jobs (claimed, two contended,
 * started, succeeded, released per slot: 6 lines a slot, about 330 bytes a line), with a slot
 * reported missed by all three every 1,000 and a rerun after a lost lease every 997, so that
 * every check has work; the audit must find that every check holds.
 */
public final class AuditBench {

    static final int JOBS = 100;
    private static final String[] WORKERS = {"w1", "w2", "w3"};

    /** One run's figures (ms, MB). */
    record Run(long readMs, long parseMs, long auditMs, long peakHeapMb, long events, boolean holds) {}

    record Result(long events, long fileMb, List<Run> runs) {}

    private AuditBench() {}

    /** Writes {@code events} events and a config under {@code work}, then audits them in {@code runs} fresh JVMs. */
    static Result run(Path work, int events, int runs) throws IOException, InterruptedException {
        Files.createDirectories(work);
        Path log = work.resolve("events.jsonl");
        Path config = work.resolve("jobs.yaml");
        long written = generate(log, config, events);
        List<Run> results = new ArrayList<>();
        for (int i = 0; i < runs; i++) {
            Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx512m",
                    "-cp", System.getProperty("java.class.path"), AuditBench.class.getName(), log.toString(), config.toString())
                    .redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (p.waitFor() != 0 || !out.contains("audit=")) {
                throw new IllegalStateException("audit benchmark run failed:\n" + out);
            }
            results.add(parse(out.lines().filter(l -> l.contains("audit=")).findFirst().orElseThrow()));
        }
        return new Result(written, Files.size(log) >> 20, results);
    }

    private static Run parse(String line) {
        java.util.Map<String, String> f = new java.util.HashMap<>();
        for (String kv : line.trim().split(" ")) {
            String[] p = kv.split("=");
            f.put(p[0], p[1]);
        }
        return new Run(Long.parseLong(f.get("read")), Long.parseLong(f.get("parse")), Long.parseLong(f.get("audit")),
                Long.parseLong(f.get("peakHeapMb")), Long.parseLong(f.get("events")), Boolean.parseBoolean(f.get("holds")));
    }

    /** The child JVM: the floors, then the audit, one line of figures. */
    public static void main(String[] args) throws Exception {
        Path log = Path.of(args[0]);
        long t0 = System.nanoTime();
        long lines = 0;
        try (BufferedReader r = Files.newBufferedReader(log)) {
            while (r.readLine() != null) {
                lines++;
            }
        }
        long read = System.nanoTime() - t0;
        ObjectMapper json = new ObjectMapper();
        t0 = System.nanoTime();
        long fields = 0;
        try (BufferedReader r = Files.newBufferedReader(log)) {
            for (String line; (line = r.readLine()) != null; ) {
                fields += json.readTree(line).size();
            }
        }
        long parse = System.nanoTime() - t0;
        resetPeaks();
        t0 = System.nanoTime();
        AuditReport report = Audit.run(List.of(log.toString()), new ByteArrayInputStream(new byte[0]),
                ConfigLoader.defaults().checkingClasses(false).load(Path.of(args[1])), Audit.Options.defaults());
        long audit = System.nanoTime() - t0;
        long peak = 0;
        for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
            if (pool.getType() == MemoryType.HEAP) {
                peak += pool.getPeakUsage().getUsed();
            }
        }
        if (!report.holds()) {
            java.io.PrintWriter w = new java.io.PrintWriter(System.out, true);
            report.print(w);
        }
        System.out.printf(Locale.ROOT, "read=%d parse=%d audit=%d peakHeapMb=%d events=%d holds=%b lines=%d fields=%d%n", read / 1_000_000,
                parse / 1_000_000, audit / 1_000_000, peak >> 20, report.events(), report.holds(), lines, fields);
    }

    private static void resetPeaks() {
        System.gc();
        ManagementFactory.getMemoryPoolMXBeans().forEach(MemoryPoolMXBean::resetPeakUsage);
    }

    /** Three workers' events for {@link #JOBS} per-second jobs until {@code events} are written; answers how many. */
    static long generate(Path log, Path config, int events) throws IOException {
        StringBuilder yaml = new StringBuilder("redis:\n  uri: redis://127.0.0.1:6379\ndefaults:\n  lease: 30s\n  misfireGrace: 10s\njobs:\n");
        for (int j = 0; j < JOBS; j++) {
            yaml.append(String.format(Locale.ROOT, "  - { name: job-%03d, cron: \"* * * * * *\", class: com.example.Job }%n", j));
        }
        Files.writeString(config, yaml);
        Instant t0 = Instant.parse("2026-12-01T10:00:00Z");
        long n = 0;
        try (BufferedWriter w = Files.newBufferedWriter(log)) {
            for (String worker : WORKERS) {
                n += line(w, t0.minusMillis(1_500), "worker_started", worker, ",\"jobs\":100,\"threads\":8,\"clock_offset_ms\":0");
            }
            long k = 0;
            for (; n < events - 6; k++) {
                Instant slot = t0.plusSeconds(k);
                for (int j = 0; j < JOBS && n < events - 6; j++) {
                    n += slot(w, slot, j, k);
                }
            }
            for (String worker : WORKERS) {
                n += line(w, t0.plusSeconds(k + 1), "worker_stopping", worker, ",\"running\":0");
                n += line(w, t0.plusSeconds(k + 1).plusMillis(5), "worker_stopped", worker, ",\"drained\":true");
            }
        }
        return n;
    }

    private static int slot(BufferedWriter w, Instant slot, int j, long k) throws IOException {
        String job = String.format(Locale.ROOT, "job-%03d", j);
        String winner = WORKERS[(int) ((k + j) % 3)];
        String s = ",\"job\":\"" + job + "\",\"slot\":\"" + slot + "\"";
        String lock = ",\"lock_name\":\"lockstep:{7.1}:marks[" + job + ":owner]\",\"identifier\":\"" + Long.toHexString(k * 7919 + j) + "5413e648e305f7\"";
        long token = 1_796_000_000_000_000L + k * 1_000_000 + j;
        long index = k * JOBS + j;
        int n = 0;
        if (index % 1000 == 999) {
            for (String worker : WORKERS) {
                n += line(w, slot.plusSeconds(10), "slot_missed", worker, s + lock + ",\"lateness_ms\":10004,\"reason\":\"later than misfireGrace\",\"code\":\"late\"");
            }
            return n;
        }
        n += line(w, slot.minusMillis(250), "slot_claimed", winner, s + lock + ",\"action\":\"acquire\",\"duration_ms\":1,\"success\":true,\"fencing_token\":"
                + token + ",\"lateness_ms\":0,\"ahead_ms\":250");
        for (String other : WORKERS) {
            if (!other.equals(winner)) {
                n += line(w, slot.minusMillis(200), "slot_contended", other, s + lock + ",\"action\":\"acquire\",\"duration_ms\":1,\"success\":false");
            }
        }
        n += line(w, slot.plusMillis(3), "job_started", winner, s + ",\"fencing_token\":" + token + ",\"attempt\":1,\"lateness_ms\":3");
        if (index % 997 == 996) {
            String peer = WORKERS[(int) ((k + j + 1) % 3)];
            n += line(w, slot.plusMillis(400), "lease_lost", winner, s + lock + ",\"action\":\"expire\",\"success\":false,\"fencing_token\":" + token
                    + ",\"reason\":\"renewal deadline passed\"");
            n += line(w, slot.plusMillis(410), "job_failed", winner, s + ",\"fencing_token\":" + token + ",\"attempt\":1,\"duration_ms\":407"
                    + ",\"error\":\"java.lang.InterruptedException\",\"reason\":\"lease lost\"");
            // Its worker hands the slot over (complete.lua's 'rerun'): the lease ends there, so the rerun
            // 0.4 s later is no second run. (Without the hand-over the 30 s lease would still be held.)
            n += line(w, slot.plusMillis(412), "slot_released", winner, s + lock + ",\"action\":\"release\",\"duration_ms\":1,\"success\":true"
                    + ",\"fencing_token\":" + token + ",\"outcome\":\"lease_lost\"");
            n += line(w, slot.plusMillis(800), "slot_recovered", peer, s + lock + ",\"fencing_token\":" + (token + 500_000) + ",\"reason\":\"rerun\"");
            n += line(w, slot.plusMillis(801), "job_started", peer, s + ",\"fencing_token\":" + (token + 500_000)
                    + ",\"attempt\":1,\"lateness_ms\":801,\"rerun\":true");
            return n + line(w, slot.plusMillis(851), "job_succeeded", peer, s + ",\"fencing_token\":" + (token + 500_000)
                    + ",\"attempt\":1,\"duration_ms\":50");
        }
        n += line(w, slot.plusMillis(53), "job_succeeded", winner, s + ",\"fencing_token\":" + token + ",\"attempt\":1,\"duration_ms\":50");
        return n + line(w, slot.plusMillis(55), "slot_released", winner, s + lock + ",\"action\":\"release\",\"duration_ms\":1,\"success\":true"
                + ",\"fencing_token\":" + token + ",\"outcome\":\"succeeded\"");
    }

    private static int line(BufferedWriter w, Instant ts, String event, String worker, String fields) throws IOException {
        w.write("{\"ts\":\"" + ts + "\",\"level\":\"INFO\",\"event\":\"" + event + "\",\"worker\":\"" + worker + "\"" + fields
                + ",\"msg\":\"" + event.replace('_', ' ') + "\",\"logger\":\"io.lockstep.events\",\"thread\":\"lockstep-job-3\"}\n");
        return 1;
    }

    static String describe(Result r) {
        StringBuilder s = new StringBuilder(String.format(Locale.ROOT, "audit of %,d events (%d MB):", r.events(), r.fileMb()));
        for (Run run : r.runs()) {
            s.append(String.format(Locale.ROOT, "%n  audit %,d ms (%.2fx parsing every line, %.1fx reading them), peak heap %d MB of 512, holds %b",
                    run.auditMs(), run.auditMs() / (double) run.parseMs(), run.auditMs() / (double) run.readMs(), run.peakHeapMb(), run.holds()));
        }
        return s.toString();
    }
}
