package io.lockstep.worker.audit;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.DateTimeException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.stream.Stream;
import java.util.zip.GZIPInputStream;

/**
 * Reads Lockstep's JSON events out of whatever a log store exported, one line at a time: plain
 * event lines (the worker's stdout), lines with a prefix before the JSON (Loki's {@code logcli},
 * CloudWatch's {@code timestamp message}), an Elasticsearch hit ({@code _source}) and a Docker
 * json-file line (the event as the string {@code log}, {@code message} or {@code line}).
 * Files ending in {@code .gz} are read through gzip. A line without {@code event} and
 * {@code worker} is not a scheduler event: counted, skipped. Streams: nothing but the current
 * line is held.
 */
final class EventReader {

    private static final JsonFactory JSON = new JsonFactory();
    private static final int MAX_DEPTH = 3;
    /** A longer line is not an event (a binary file, a dump): skipped without being held. */
    static final int MAX_LINE = 1 << 20;

    /** What was read, for the summary. */
    long lines, events, skipped;

    private final Map<String, String> interned = new HashMap<>();
    private final Consumer<Fields> sink;
    private final Fields fields = new Fields();

    EventReader(Consumer<Fields> sink) {
        this.sink = sink;
    }

    /** The fields of one event line; reused from line to line. */
    static final class Fields {
        String event, worker, job, slot, reason, outcome, code, from, to, configHash, effectiveAt, backfillId;
        /** {@code config_loaded}'s {@code labels}, joined by commas (null: not logged, an older worker or an embedded one). */
        String labels;
        long ts, token, attempt, lateness, clockOffset, count, threads, deadlinePassed;
        boolean manual, catchUp, rerun, success, lockName, backfill;

        void clear() {
            event = worker = job = slot = reason = outcome = code = from = to = configHash = effectiveAt = labels = backfillId = null;
            ts = token = lateness = clockOffset = deadlinePassed = Ev.NONE;
            attempt = count = threads = 0;
            manual = catchUp = rerun = success = lockName = backfill = false;
        }
    }

    /**
     * Reads every file under each path (directories recursively), oldest first by the time of each
     * file's first event (so that logrotate's names, newest first, do not matter: a worker's events
     * are then read in the order it wrote them), then {@code stdin} for "-".
     */
    void read(List<String> paths, InputStream stdin) throws IOException {
        List<Path> files = new java.util.ArrayList<>();
        for (String p : paths) {
            if (p.equals("-")) {
                continue;
            }
            Path path = Path.of(p);
            if (!Files.exists(path)) {
                throw new IOException(p + ": no such file or directory");
            }
            try (Stream<Path> walk = Files.walk(path)) {
                walk.filter(Files::isRegularFile).sorted().forEach(files::add);
            } catch (UncheckedIOException e) {
                throw e.getCause();
            }
        }
        java.util.Map<Path, Long> first = new java.util.HashMap<>();
        for (Path f : files) {
            first.put(f, firstEventTime(f));
        }
        files.sort(java.util.Comparator.comparing(first::get));
        for (Path f : files) {
            try (InputStream in = open(f)) {
                read(in);
            } catch (IOException | UncheckedIOException e) {
                throw new IOException(f + ": " + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()), e);
            }
        }
        if (paths.contains("-")) {
            read(stdin);
        }
    }

    private static InputStream open(Path f) throws IOException {
        return f.toString().endsWith(".gz") ? new GZIPInputStream(Files.newInputStream(f), 1 << 16) : Files.newInputStream(f);
    }

    /** The time of the file's first event among its first lines, or the latest possible when it has none. */
    private long firstEventTime(Path f) throws IOException {
        try (java.io.BufferedReader r = new java.io.BufferedReader(new InputStreamReader(open(f), StandardCharsets.UTF_8))) {
            int n = 0;
            for (String line; n++ < 1000 && (line = r.readLine()) != null && line.length() <= MAX_LINE; ) {
                int brace = line.indexOf('{');
                fields.clear();
                if (brace >= 0 && parse(line.substring(brace), 0) && fields.event != null && fields.ts != Ev.NONE) {
                    return fields.ts;
                }
            }
        } catch (IOException | UncheckedIOException e) {
            throw new IOException(f + ": " + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()), e);
        }
        return Long.MAX_VALUE;
    }

    /** Splits {@code in} into lines of at most {@link #MAX_LINE} characters; a longer one is counted and skipped. */
    private void read(InputStream in) throws IOException {
        CharsetDecoder utf8 = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPLACE)
                .onUnmappableCharacter(CodingErrorAction.REPLACE);
        InputStreamReader reader = new InputStreamReader(in, utf8);
        char[] buf = new char[1 << 16];
        StringBuilder line = new StringBuilder(512);
        boolean overlong = false;
        for (int n; (n = reader.read(buf)) > 0; ) {
            int start = 0;
            for (int i = 0; i < n; i++) {
                if (buf[i] == '\n') {
                    overlong = append(line, buf, start, i, overlong);
                    end(line, overlong);
                    overlong = false;
                    start = i + 1;
                }
            }
            overlong = append(line, buf, start, n, overlong);
        }
        if (line.length() > 0 || overlong) {
            end(line, overlong);
        }
    }

    private static boolean append(StringBuilder line, char[] buf, int from, int to, boolean overlong) {
        if (overlong || line.length() + (to - from) > MAX_LINE) {
            line.setLength(0);
            return true;
        }
        line.append(buf, from, to - from);
        return false;
    }

    private void end(StringBuilder line, boolean overlong) {
        if (overlong) {
            lines++;
            skipped++;
        } else {
            int length = line.length();
            line(length > 0 && line.charAt(length - 1) == '\r' ? line.substring(0, length - 1) : line.toString());
        }
        line.setLength(0);
    }

    /** One line: an event to the sink, or counted as skipped. */
    void line(String line) {
        lines++;
        // The JSON starts at one of the first braces: a prefix may hold some of its own (logcli's {labels}).
        int brace = -1;
        for (int tries = 0; tries < 3 && (brace = line.indexOf('{', brace + 1)) >= 0; tries++) {
            fields.clear();
            if (parse(line.substring(brace), 0) && fields.event != null && fields.worker != null && fields.ts != Ev.NONE) {
                events++;
                sink.accept(fields);
                return;
            }
        }
        skipped++;
    }

    /** Parses one JSON object into {@link #fields}; false when it is not JSON. Nested forms are looked into. */
    private boolean parse(String json, int depth) {
        embedded = null;
        try (JsonParser p = JSON.createParser(json)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return false;
            }
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken value = p.nextToken();
                if (value == JsonToken.START_OBJECT) {
                    if (name.equals("_source") && depth < MAX_DEPTH) {
                        field(p, depth); // an Elasticsearch hit: the event is its _source
                    } else {
                        p.skipChildren();
                    }
                } else if (value == JsonToken.START_ARRAY && name.equals("labels")) {
                    List<String> labels = new java.util.ArrayList<>();
                    while (p.nextToken() != JsonToken.END_ARRAY) {
                        if (p.currentToken() == JsonToken.START_OBJECT || p.currentToken() == JsonToken.START_ARRAY) {
                            p.skipChildren();
                        } else {
                            labels.add(p.getText());
                        }
                    }
                    fields.labels = intern(String.join(",", labels));
                } else if (value == JsonToken.START_ARRAY) {
                    p.skipChildren();
                } else {
                    set(name, p);
                }
            }
        } catch (IOException | DateTimeException | ArithmeticException | NumberFormatException e) {
            return false; // not JSON, or cut short: skipped, never half read
        }
        if (fields.event == null && embedded != null && depth < MAX_DEPTH) {
            String inner = embedded;
            return parse(inner, depth + 1);
        }
        return true;
    }

    /** The fields of a nested object (Elasticsearch's {@code _source}). */
    private void field(JsonParser p, int depth) throws IOException {
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken value = p.nextToken();
            if (value == JsonToken.START_OBJECT || value == JsonToken.START_ARRAY) {
                p.skipChildren();
            } else {
                set(name, p);
            }
        }
    }

    /** An event embedded as a string ({@code log}, {@code message}, {@code line}), read when the object itself is not one. */
    private String embedded;

    private void set(String name, JsonParser p) throws IOException {
        Fields f = fields;
        switch (name) {
            case "log", "message", "line" -> {
                String text = p.getText();
                if (p.currentToken() == JsonToken.VALUE_STRING && text.startsWith("{")) {
                    embedded = text;
                }
            }
            case "event" -> f.event = intern(p.getText());
            case "worker" -> f.worker = intern(p.getText());
            case "ts", "@timestamp" -> {
                if (f.ts == Ev.NONE || name.equals("ts")) {
                    f.ts = Instant.parse(p.getText()).toEpochMilli();
                }
            }
            case "job" -> f.job = intern(p.getText());
            case "slot" -> f.slot = p.getText();
            case "reason" -> f.reason = intern(p.getText());
            case "outcome" -> f.outcome = intern(p.getText());
            case "code" -> f.code = intern(p.getText());
            case "from" -> f.from = p.getText();
            case "to" -> f.to = p.getText();
            case "fencing_token" -> f.token = p.getValueAsLong(Ev.NONE);
            case "attempt" -> f.attempt = p.getValueAsLong(0);
            case "lateness_ms" -> f.lateness = p.getValueAsLong(Ev.NONE);
            case "clock_offset_ms" -> f.clockOffset = p.getValueAsLong(Ev.NONE);
            case "deadline_passed_ms" -> f.deadlinePassed = p.getValueAsLong(Ev.NONE);
            case "count" -> f.count = p.getValueAsLong(0);
            case "threads" -> f.threads = p.getValueAsLong(0);
            case "config_hash" -> f.configHash = intern(p.getText());
            case "effective_at" -> f.effectiveAt = p.getText();
            case "manual" -> f.manual = p.getValueAsBoolean();
            case "catch_up" -> f.catchUp = p.getValueAsBoolean();
            case "origin" -> f.backfill = "backfill".equals(p.getText());
            case "backfill" -> f.backfillId = intern(p.getText());
            case "rerun" -> f.rerun = p.getValueAsBoolean();
            case "success" -> f.success = p.getValueAsBoolean();
            case "lock_name" -> f.lockName = true;
            default -> { }
        }
    }

    private String intern(String s) {
        String known = interned.putIfAbsent(s, s);
        return known != null ? known : s;
    }
}
