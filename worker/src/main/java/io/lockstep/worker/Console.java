package io.lockstep.worker;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import io.lockstep.redis.OperatorActions;
import io.lockstep.redis.RedisAdmin;
import io.lockstep.scheduler.JobDefinition;
import io.lockstep.scheduler.config.HttpUser;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * The status page ({@code /}), rendered on the server so that it reads without JavaScript (the
 * script then refreshes it every 3 s), and, for an {@link HttpUser#OPERATOR operator} when
 * {@code worker.http.auth} is set, its actions: {@code POST /actions/pause}, {@code resume},
 * {@code trigger} and {@code backfill}. An action takes the same checks as the CLI's command and
 * leaves the same records ({@link RedisAdmin#actions}, with the authenticated user as {@code by});
 * it is logged as {@code operator_action}. A POST needs its form's token and cookie
 * ({@link ConsoleForms}), and is refused when the browser says it came from another site. Answers
 * a 303 to the page (so a reload does not act twice; relative, so a proxy's path prefix is kept),
 * or one line with 400 or 503.
 */
final class Console {

    private static final ObjectMapper JSON = new ObjectMapper();
    static final List<String> ACTIONS = OperatorActions.ALL;
    private static final int MAX_FORM = 16 * 1024;
    /** The page, read once: its markers are filled per request. */
    private static final String TEMPLATE = template();

    private static String template() {
        try (InputStream in = Console.class.getResourceAsStream("status.html")) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private final ConsoleForms forms;
    private final OperatorActions actions;
    private final String workerId;
    private final Runnable statusChanged;

    Console(ConsoleForms forms, RedisAdmin admin, Supplier<List<JobDefinition>> definitions, String workerId, Runnable statusChanged) {
        this.forms = forms;
        this.actions = new OperatorActions(admin, definitions);
        this.workerId = workerId;
        this.statusChanged = statusChanged;
    }

    // ---------------------------------------------------------------- the page

    /**
     * The page for {@code user} (null: no authentication configured, read-only) from the status
     * JSON {@code status} (null when it could not be read: the script says why).
     */
    static String page(String status, HttpUser user, Map<String, String> query, List<String> jobs, ConsoleForms forms, String cookie) {
        JsonNode root = null;
        try {
            root = status == null ? null : JSON.readTree(status);
        } catch (IOException e) {
            root = null;
        }
        return TEMPLATE.replace("<!--who-->", escape(who(user)))
                .replace("<!--flash-->", flash(query, jobs))
                .replace("<!--jobs-->", root == null ? "" : jobRows(root))
                .replace("<!--workers-->", root == null ? "" : workerRows(root))
                .replace("<!--actions-->", user != null && user.operator() && cookie != null ? actionForms(user, jobs, forms, cookie) : "");
    }

    private static String who(HttpUser user) {
        if (user == null) {
            return "read-only";
        }
        return "signed in as " + user.name() + " (" + user.role() + (user.operator() ? ")" : ", read-only)");
    }

    /** What the last action did, from the 303's query: only known words and a known job are shown, never free text. */
    private static String flash(Map<String, String> query, List<String> jobs) {
        String done = query.get("done");
        String job = query.get("job");
        if (done == null || !ACTIONS.contains(done) || job == null || !jobs.contains(job)) {
            return "";
        }
        String what = switch (done) {
            case "pause" -> "paused " + job;
            case "resume" -> "resumed " + job;
            case "trigger" -> "requested a manual run of " + job + "; a worker picks it up within a few seconds";
            default -> "requested a backfill of " + job;
        };
        return "<p class=\"flash\" id=\"flash\" role=\"status\">" + escape(what) + "</p>";
    }

    private static String jobRows(JsonNode root) {
        StringBuilder html = new StringBuilder();
        for (JsonNode job : root.path("jobs")) {
            JsonNode last = job.path("last");
            JsonNode paused = job.path("paused");
            StringBuilder running = new StringBuilder();
            for (JsonNode r : job.path("running")) {
                running.append("<div>").append(escape(r.path("worker").asText() + " (token " + r.path("fencingToken").asLong() + ")"))
                        .append("</div>");
            }
            JsonNode expect = job.path("expect");
            html.append("<tr data-job=\"").append(escape(job.path("name").asText())).append("\">")
                    .append(td(job.path("name").asText(), ""))
                    .append(td(job.path("cron").asText() + " " + job.path("zone").asText(), "muted"))
                    .append(td(job.path("enabled").asBoolean() ? text(job.path("nextFire")) : "disabled", ""))
                    .append(td(last.isMissingNode() ? "-" : last.path("outcome").asText() + " " + last.path("slot").asText() + " on "
                            + last.path("worker").asText(), last.path("outcome").asText()))
                    .append(td(job.path("recent").size() + " recent entries", "muted"))
                    .append("<td>").append(running.length() == 0 ? "-" : running).append("</td>")
                    .append(td(paused.isObject() ? "paused by " + paused.path("by").asText()
                            + (paused.path("note").asText().isEmpty() ? "" : ": " + paused.path("note").asText()) : "-",
                            paused.isObject() ? "paused" : ""))
                    .append(td(expect.isMissingNode() ? "-" : expect.path("breached").asBoolean() ? "BREACHED" : "ok",
                            expect.path("breached").asBoolean() ? "breached" : ""))
                    .append("</tr>\n");
        }
        return html.toString();
    }

    private static String workerRows(JsonNode root) {
        StringBuilder html = new StringBuilder();
        for (JsonNode w : root.path("workers")) {
            html.append("<tr>").append(td(w.path("id").asText(), ""))
                    .append(td(w.path("host").asText() + " (pid " + w.path("pid").asText() + ")", ""))
                    .append(td(w.path("busy").asText() + "/" + w.path("threads").asText(), ""))
                    .append(td(w.path("started").asText(), "")).append(td(w.path("lastSeen").asText(), ""))
                    .append(td(w.path("configHash").asText(), "muted")).append("</tr>\n");
        }
        return html.toString();
    }

    private static String text(JsonNode n) {
        return n.isNull() || n.isMissingNode() ? "-" : n.asText();
    }

    private static String td(String text, String cls) {
        return "<td" + (cls.isEmpty() ? "" : " class=\"" + escape(cls) + "\"") + ">" + escape(text) + "</td>";
    }

    /** One form per action, each with its own token; plain HTML forms, so they work without JavaScript. */
    private static String actionForms(HttpUser user, List<String> jobs, ConsoleForms forms, String cookie) {
        long now = Instant.now().getEpochSecond();
        StringBuilder options = new StringBuilder();
        jobs.forEach(j -> options.append("<option>").append(escape(j)).append("</option>"));
        String select = "<label>Job <select name=\"job\" required>" + options + "</select></label> ";
        java.util.function.Function<String, String> open = action -> "<form method=\"post\" action=\"actions/" + action
                + "\" id=\"" + action + "-form\" class=\"action\"><input type=\"hidden\" name=\"csrf\" value=\""
                + escape(forms.token(user.name(), action, cookie, now)) + "\">" + select;
        return "<h2>Actions</h2>\n<div class=\"actions\">\n"
                + open.apply("pause") + "<label>Note <input name=\"note\" maxlength=\"" + OperatorActions.MAX_NOTE + "\"></label> "
                + "<label>For <input name=\"for\" size=\"6\" placeholder=\"30m\" title=\"empty: until resumed\"></label> "
                + "<button type=\"submit\">Pause</button></form>\n"
                + open.apply("resume") + "<button type=\"submit\">Resume</button></form>\n"
                + open.apply("trigger") + "<button type=\"submit\">Run now</button></form>\n"
                + open.apply("backfill") + "<label>From <input name=\"from\" required placeholder=\"2026-12-01T00:00:00Z\"></label> "
                + "<label>To <input name=\"to\" required placeholder=\"2026-12-02T00:00:00Z\"></label> "
                + "<label>Rate <input name=\"rate\" size=\"5\" value=\"10/s\"></label> "
                + "<button type=\"submit\">Backfill</button></form>\n</div>\n";
    }

    static String escape(String s) {
        StringBuilder b = new StringBuilder(s.length());
        for (char c : s.toCharArray()) {
            switch (c) {
                case '<' -> b.append("&lt;");
                case '>' -> b.append("&gt;");
                case '&' -> b.append("&amp;");
                case '"' -> b.append("&quot;");
                case '\'' -> b.append("&#39;");
                default -> b.append(c);
            }
        }
        return b.toString();
    }

    static Map<String, String> query(String raw) {
        Map<String, String> m = new HashMap<>();
        if (raw == null || raw.isEmpty()) {
            return m;
        }
        for (String pair : raw.split("&")) {
            int eq = pair.indexOf('=');
            try {
                String k = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
                String v = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
                m.putIfAbsent(k, v);
            } catch (IllegalArgumentException e) {
                // a malformed %-escape: that pair is not there (a form without its token is refused)
            }
        }
        return m;
    }

    // ---------------------------------------------------------------- the actions

    /** What an action answers: a status, and for a 303 the page to go to, else one line. */
    record Answer(int status, String location, String line) {}

    /** {@code POST /actions/<action>} by {@code user} (authenticated by the caller). */
    Answer act(HttpExchange ex, HttpUser user) throws IOException {
        String path = ex.getRequestURI().getPath();
        String action = path.substring(path.lastIndexOf('/') + 1);
        String remote = ex.getRemoteAddress() == null ? "" : ex.getRemoteAddress().getAddress().getHostAddress();
        if (!ACTIONS.contains(action) || !path.equals("/actions/" + action)) {
            return new Answer(404, null, "no such action");
        }
        if (!user.operator()) {
            return refused(user, action, "", remote, 403, "role " + user.role() + " may not act; an operator may");
        }
        String site = ex.getRequestHeaders().getFirst("Sec-Fetch-Site");
        if (site != null && !site.equals("same-origin") && !site.equals("none")) {
            return refused(user, action, "", remote, 403, "the request came from a page of another origin (Sec-Fetch-Site: " + site + ")");
        }
        String origin = ex.getRequestHeaders().getFirst("Origin");
        String host = ex.getRequestHeaders().getFirst("Host");
        if (origin != null && !origin.equals("null") && host != null && !origin.equals("http://" + host) && !origin.equals("https://" + host)) {
            return refused(user, action, "", remote, 403, "the request came from another origin (" + origin + ")");
        }
        Map<String, String> form = form(ex);
        String job = form.getOrDefault("job", "");
        Optional<String> cookie = ConsoleForms.cookieOf(ex.getRequestHeaders().getFirst("Cookie"));
        if (cookie.isEmpty() || !forms.valid(form.get("csrf"), user.name(), action, cookie.get(), Instant.now().getEpochSecond())) {
            return refused(user, action, job, remote, 403, "the form's token is missing, wrong or stale: reload the page and try again");
        }
        String detail;
        try {
            detail = actions.perform(action, job, form, user.name());
        } catch (IllegalArgumentException | IllegalStateException | UnsupportedOperationException e) {
            return refused(user, action, job, remote, 400, e.getMessage());
        } catch (RuntimeException e) { // Redis down or refusing: the action may not have been done
            OperatorActions.log(workerId, user.name(), user.role(), action, job, remote, "failed", String.valueOf(e.getMessage()));
            return new Answer(503, null, action + " of " + job + " failed: " + e.getMessage());
        }
        statusChanged.run();
        OperatorActions.log(workerId, user.name(), user.role(), action, job, remote, "done", detail);
        return new Answer(303, "../?done=" + action + "&job=" + URLEncoder.encode(job, StandardCharsets.UTF_8), null);
    }

    private Answer refused(HttpUser user, String action, String job, String remote, int status, String why) {
        OperatorActions.log(workerId, user.name(), user.role(), action, job, remote, "refused", why);
        return new Answer(status, null, action + (job.isEmpty() ? "" : " of " + job) + " refused: " + why);
    }

    /** An urlencoded form body, at most {@link #MAX_FORM} bytes (more is refused as empty: no token, so 403). */
    private static Map<String, String> form(HttpExchange ex) throws IOException {
        byte[] body = ex.getRequestBody().readNBytes(MAX_FORM + 1);
        if (body.length > MAX_FORM) {
            return Map.of();
        }
        return query(new String(body, StandardCharsets.UTF_8));
    }
}
