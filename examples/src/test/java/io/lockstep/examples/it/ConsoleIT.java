package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.lockstep.examples.cli.CliRun;
import io.lockstep.redis.RedisFixture;
import java.io.File;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.Select;
import org.springframework.security.crypto.bcrypt.BCrypt;

/**
 * The status page's actions ({@code worker.http.auth}) in a real headless Chromium driven by
 * Selenium (Debian's {@code chromium} and {@code chromium-driver}; nothing is downloaded), on worker
 * JVMs and a real Redis: a viewer reads but cannot act (403, nothing changes); an operator pauses,
 * resumes and triggers from the page's forms, each recorded with the user in the job's history
 * and logged as {@code operator_action}; a POST without its form's token is refused; wrong
 * credentials are refused as fast for a name nobody has as for a wrong password; the page reads
 * without JavaScript.
 */
class ConsoleIT {

    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;

    static Optional<String[]> chromium() {
        for (String[] pair : List.of(new String[] {"/usr/bin/chromium", "/usr/bin/chromedriver"},
                new String[] {"/usr/bin/chromium-browser", "/usr/bin/chromedriver"})) {
            if (Files.isExecutable(Path.of(pair[0])) && Files.isExecutable(Path.of(pair[1]))) {
                return Optional.of(pair);
            }
        }
        return Optional.empty();
    }

    private static String basic(String user, String password) {
        return "Basic " + Base64.getEncoder().encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void anOperatorActsFromThePageAViewerCannotAndForgedOrWrongRequestsAreRefused() throws Exception {
        Optional<String[]> browser = chromium();
        Assumptions.assumeTrue(browser.isPresent(), "the console test needs Chromium and its driver: install the Debian packages chromium and chromium-driver");
        String token = "lst_test-token-0123456789abcdef";
        String victorLine = "victor:viewer:" + BCrypt.hashpw("victor-password", BCrypt.gensalt(10)) + "\n";
        Files.writeString(dir.resolve("users.txt"), "# name:role:hash\n"
                + "alice:operator:" + BCrypt.hashpw("alice-password", BCrypt.gensalt(10)) + "\n"
                + victorLine
                + "robot:operator:sha256:" + io.lockstep.examples.it.ConsoleIT.sha256(token) + "\n");
        String jobs = "jobs:\n"
                + "  - { name: tick, cron: \"* * * * * *\", class: io.lockstep.examples.HeartbeatJob, lease: 2s, misfireGrace: 2s }\n"
                + "  - { name: report, cron: \"0 0 3 * * *\", class: io.lockstep.examples.HeartbeatJob }\n";
        try (Cluster cluster = new Cluster(dir, jobs)) {
            cluster.editConfig("worker:\n", "worker:\n  http:\n    port: ${HTTP_PORT:-0}\n    auth:\n      users: users.txt\n");
            int port = RedisFixture.freeLoopbackPort();
            WorkerProcess w1 = cluster.startWithEnv("w1", Map.of("HTTP_PORT", Integer.toString(port)));
            cluster.start("w2");
            cluster.awaitStarted();
            URI base = URI.create("http://127.0.0.1:" + port + "/");
            HttpClient http = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NEVER).build();
            String alice = basic("alice", "alice-password");
            String victor = basic("victor", "victor-password");

            // Without credentials, or with wrong ones: 401, the probes excepted.
            assertThat(get(http, base, null).statusCode()).isEqualTo(401);
            assertThat(get(http, base.resolve("status.json"), basic("alice", "wrong")).statusCode()).isEqualTo(401);
            assertThat(get(http, base.resolve("metrics"), "Bearer lst_wrong").statusCode()).isEqualTo(401);
            assertThat(get(http, base.resolve("health/ready"), null).statusCode()).isEqualTo(200);
            assertThat(get(http, base.resolve("status.json"), "Bearer " + token).statusCode()).isEqualTo(200);

            // A malformed form is answered (here: no token, 403), not dropped.
            assertThat(post(http, base.resolve("actions/pause"), alice, "job=%zz&csrf=%", "lockstep_csrf=" + "y".repeat(24)).statusCode())
                    .isEqualTo(403);

            // The page reads without JavaScript: the server renders the jobs and workers.
            String plain = get(http, base, victor).body();
            assertThat(plain).contains("<tr data-job=\"tick\">", "<tr data-job=\"report\">", "signed in as victor (viewer, read-only)")
                    .doesNotContain("<form");

            ChromeOptions options = new ChromeOptions();
            options.setBinary(browser.get()[0]);
            options.addArguments("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,900",
                    "--user-data-dir=" + Files.createTempDirectory("chromium-"));
            ChromeDriverService service = new ChromeDriverService.Builder().usingDriverExecutable(new File(browser.get()[1])).build();
            ChromeDriver driver = new ChromeDriver(service, options);
            try {
                // A viewer sees the page and no form; a POST of theirs is refused and changes nothing.
                as(driver, victor);
                driver.get(base.toString());
                await().atMost(Duration.ofSeconds(10)).until(() -> driver.findElements(By.cssSelector("#jobs tr[data-job=tick]")).size() == 1);
                assertThat(driver.findElement(By.id("who")).getText()).isEqualTo("signed in as victor (viewer, read-only)");
                assertThat(driver.findElements(By.tagName("form"))).isEmpty();
                HttpResponse<String> viewerPost = post(http, base.resolve("actions/pause"), victor, "job=tick&note=x", null);
                assertThat(viewerPost.statusCode()).isEqualTo(403);
                assertThat(viewerPost.body()).contains("role viewer may not act");
                assertThat(job(status(http, base, alice), "tick").path("paused").isNull()).isTrue();

                // An operator pauses tick from the page, with a note and a length.
                as(driver, alice);
                driver.get(base.toString());
                new Select(driver.findElement(By.cssSelector("#pause-form select[name=job]"))).selectByVisibleText("tick");
                driver.findElement(By.cssSelector("#pause-form input[name=note]")).sendKeys("db migration");
                driver.findElement(By.cssSelector("#pause-form input[name=for]")).sendKeys("10m");
                driver.findElement(By.cssSelector("#pause-form button")).click();
                await().atMost(Duration.ofSeconds(10)).until(() -> driver.findElements(By.id("flash")).size() == 1);
                assertThat(driver.findElement(By.id("flash")).getText()).isEqualTo("paused tick");
                JsonNode paused = job(status(http, base, alice), "tick").path("paused");
                assertThat(paused.path("by").asText()).isEqualTo("alice");
                assertThat(paused.path("note").asText()).isEqualTo("db migration");
                assertThat(paused.path("until").isNull()).isFalse();
                assertThat(get(http, base, victor).body()).contains("paused by alice: db migration");
                await().atMost(Duration.ofSeconds(10)).until(() -> cluster.events("slot_skipped").stream()
                        .anyMatch(e -> e.path("job").asText().equals("tick") && e.path("reason").asText().equals("paused")));
                if (System.getProperty("lockstep.console.screenshot") != null) {
                    await().atMost(Duration.ofSeconds(10)).until(() -> !driver.findElement(By.id("updated")).getText().equals("as loaded"));
                    Files.write(Path.of(System.getProperty("lockstep.console.screenshot")), driver.getScreenshotAs(OutputType.BYTES));
                }

                // ... resumes it ...
                new Select(driver.findElement(By.cssSelector("#resume-form select[name=job]"))).selectByVisibleText("tick");
                driver.findElement(By.cssSelector("#resume-form button")).click();
                await().atMost(Duration.ofSeconds(10)).until(() -> driver.findElement(By.id("flash")).getText().equals("resumed tick"));
                assertThat(job(status(http, base, alice), "tick").path("paused").isNull()).isTrue();
                int ranBefore = cluster.events("job_succeeded").size();
                await().atMost(Duration.ofSeconds(10)).until(() -> cluster.events("job_succeeded").stream().skip(ranBefore)
                        .anyMatch(e -> e.path("job").asText().equals("tick")));

                // ... and runs report now.
                new Select(driver.findElement(By.cssSelector("#trigger-form select[name=job]"))).selectByVisibleText("report");
                driver.findElement(By.cssSelector("#trigger-form button")).click();
                await().atMost(Duration.ofSeconds(10)).until(() -> driver.findElement(By.id("flash")).getText().startsWith("requested a manual run of report"));
                await().atMost(Duration.ofSeconds(20)).until(() -> cluster.events("job_succeeded").stream()
                        .anyMatch(e -> e.path("job").asText().equals("report")));

                // A forged POST: the operator's own credentials, but no token, a wrong one, or another site's origin.
                String cookie = driver.manage().getCookieNamed("lockstep_csrf").getValue();
                String formToken = driver.findElement(By.cssSelector("#pause-form input[name=csrf]")).getAttribute("value");
                assertThat(post(http, base.resolve("actions/pause"), alice, "job=tick", "lockstep_csrf=" + cookie).statusCode()).isEqualTo(403);
                assertThat(post(http, base.resolve("actions/pause"), alice, "job=tick&csrf=" + formToken, null).statusCode())
                        .as("the token without its cookie").isEqualTo(403);
                assertThat(post(http, base.resolve("actions/pause"), alice, "job=tick&csrf=" + formToken, "lockstep_csrf=" + "x".repeat(24))
                        .statusCode()).as("the token with another cookie").isEqualTo(403);
                assertThat(post(http, base.resolve("actions/resume"), alice, "job=tick&csrf=" + formToken, "lockstep_csrf=" + cookie)
                        .statusCode()).as("another form's token").isEqualTo(403);
                assertThat(post(http, base.resolve("actions/pause"), basic("victor", "victor-password"), "job=tick&csrf=" + formToken,
                        "lockstep_csrf=" + cookie).statusCode()).as("another user's token").isEqualTo(403);
                // A page of another origin that posts the form by itself, in the operator's browser.
                try (Attacker attacker = new Attacker(base.resolve("actions/pause").toString())) {
                    driver.get(attacker.url());
                    await().atMost(Duration.ofSeconds(10)).until(() -> driver.getPageSource().contains("refused"));
                    assertThat(driver.getPageSource()).contains("pause refused: the request came from a page of another origin");
                }
                assertThat(job(status(http, base, alice), "tick").path("paused").isNull())
                        .as("no forged pause took").isTrue();
            } finally {
                driver.quit();
            }

            // The records: the job's history names the user of each action, and each is an operator_action event.
            CliRun tickHistory = CliRun.of("history", "--config", cluster.config.toString(), "--job", "tick");
            assertThat(tickHistory.out()).containsPattern("resume +alice").containsPattern("pause +alice +for 10m: db migration");
            CliRun reportHistory = CliRun.of("history", "--config", cluster.config.toString(), "--job", "report");
            assertThat(reportHistory.out()).contains("(manual, by alice)").containsPattern("trigger +alice");
            List<JsonNode> actions = cluster.events("operator_action");
            assertThat(actions).filteredOn(e -> e.path("outcome").asText().equals("done"))
                    .extracting(e -> e.path("user").asText() + " " + e.path("action").asText() + " " + e.path("job").asText())
                    .containsExactly("alice pause tick", "alice resume tick", "alice trigger report");
            assertThat(actions).filteredOn(e -> e.path("outcome").asText().equals("refused"))
                    .extracting(e -> e.path("user").asText()).containsOnly("victor", "alice").hasSize(8);

            // Wrong credentials: a name nobody has costs what a wrong password does (both run bcrypt).
            List<Long> unknown = new ArrayList<>();
            List<Long> wrong = new ArrayList<>();
            for (int i = 0; i < 15; i++) {
                unknown.add(timed(http, base, basic("mallory" + i, "alice-password")));
                wrong.add(timed(http, base, basic("alice", "wrong-" + i)));
            }
            double ratio = (double) median(unknown) / median(wrong);
            System.out.printf("console refusal timing: unknown name median %.1f ms, wrong password median %.1f ms, ratio %.2f%n",
                    median(unknown) / 1e6, median(wrong) / 1e6, ratio);
            assertThat(ratio).as("unknown %s vs wrong password %s (ns)", unknown, wrong).isBetween(0.5, 2.0);
            assertThat(median(wrong)).as("a wrong password is checked by bcrypt, not remembered").isGreaterThan(5_000_000L);

            // The users file edited and the worker sent SIGHUP: alice removed, robot made a viewer. It counts at
            // once, although alice's and robot's credentials passed within the minute they are remembered for.
            assertThat(get(http, base, alice).statusCode()).isEqualTo(200);
            assertThat(get(http, base, "Bearer " + token).body()).contains("signed in as robot (operator)");
            Files.writeString(dir.resolve("users.txt"), victorLine + "robot:viewer:sha256:" + io.lockstep.examples.it.ConsoleIT.sha256(token) + "\n");
            w1.signal("HUP");
            await().atMost(Duration.ofSeconds(10)).until(() -> !w1.events("console_users_reloaded").isEmpty());
            assertThat(w1.events("console_users_reloaded").get(0).path("users").asInt()).isEqualTo(2);
            assertThat(w1.events("config_restart_needed")).as("no restart needed for the users").isEmpty();
            assertThat(get(http, base, alice).statusCode()).as("a removed user, remembered before").isEqualTo(401);
            assertThat(get(http, base, "Bearer " + token).body()).contains("signed in as robot (viewer, read-only)").doesNotContain("<form");
            cluster.assertAuditHolds();
        }
    }

    /** Every request of the browser carries {@code authorization} (as a browser that was asked for basic credentials does). */
    private static void as(ChromeDriver driver, String authorization) {
        driver.executeCdpCommand("Network.enable", Map.of());
        driver.executeCdpCommand("Network.setExtraHTTPHeaders", Map.of("headers", Map.of("Authorization", authorization)));
    }

    private static HttpResponse<String> get(HttpClient http, URI uri, String authorization) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(10));
        if (authorization != null) {
            b.header("Authorization", authorization);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static HttpResponse<String> post(HttpClient http, URI uri, String authorization, String form, String cookie) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(10)).header("Authorization", authorization)
                .header("Content-Type", "application/x-www-form-urlencoded").POST(HttpRequest.BodyPublishers.ofString(form));
        if (cookie != null) {
            b.header("Cookie", cookie);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static JsonNode status(HttpClient http, URI base, String authorization) throws Exception {
        HttpResponse<String> r = get(http, base.resolve("status.json"), authorization);
        assertThat(r.statusCode()).isEqualTo(200);
        return JSON.readTree(r.body());
    }

    private static JsonNode job(JsonNode status, String name) {
        for (JsonNode j : status.path("jobs")) {
            if (j.path("name").asText().equals(name)) {
                return j;
            }
        }
        throw new AssertionError("no job " + name + " in " + status);
    }

    private static long timed(HttpClient http, URI base, String authorization) throws Exception {
        long start = System.nanoTime();
        assertThat(get(http, base.resolve("status.json"), authorization).statusCode()).isEqualTo(401);
        return System.nanoTime() - start;
    }

    private static long median(List<Long> values) {
        List<Long> sorted = new ArrayList<>(values);
        Collections.sort(sorted);
        return sorted.get(sorted.size() / 2);
    }

    static String sha256(String text) throws Exception {
        return java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8)));
    }

    /** A page on another origin (another port) that posts a pause to the console as soon as it loads. */
    static final class Attacker implements AutoCloseable {
        final com.sun.net.httpserver.HttpServer server;

        Attacker(String target) throws java.io.IOException {
            server = com.sun.net.httpserver.HttpServer.create(new java.net.InetSocketAddress("127.0.0.1", 0), 0);
            byte[] page = ("<!doctype html><form id=f method=post action=\"" + target + "\"><input name=job value=tick>"
                    + "<input name=note value=forged></form><script>document.getElementById('f').submit()</script>")
                    .getBytes(StandardCharsets.UTF_8);
            server.createContext("/", ex -> {
                ex.getResponseHeaders().set("Content-Type", "text/html; charset=utf-8");
                ex.sendResponseHeaders(200, page.length);
                ex.getResponseBody().write(page);
                ex.close();
            });
            server.start();
        }

        String url() {
            return "http://127.0.0.1:" + server.getAddress().getPort() + "/";
        }

        @Override
        public void close() {
            server.stop(0);
        }
    }
}
