package io.lockstep.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lockstep.redis.LocalRedisServer;
import io.lockstep.redis.RedisAdmin;
import io.lockstep.redis.RedisLockProvider;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpMethod;
import org.springframework.security.config.Customizer;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.core.userdetails.User;
import org.springframework.security.provisioning.InMemoryUserDetailsManager;
import org.springframework.security.web.SecurityFilterChain;

/**
 * The actuator endpoint's write operation in a web application with its own Spring Security, over
 * real HTTP and a real Redis: an operator (role {@code LOCKSTEP_OPERATOR}) pauses, resumes and
 * triggers, each recorded with their name; an authenticated user without the role, and an
 * anonymous one the application lets through, get 403 and change nothing.
 */
class ActuatorActionsTest {

    /** Stopped by its shutdown hook at the JVM's exit (as {@link StarterSpringBootTest}'s). */
    private static final LocalRedisServer redis = LocalRedisServer.start();

    /** The application: the starter's job, and security as an application writes it (basic auth, CSRF off for the actuator). */
    @SpringBootConfiguration
    @EnableAutoConfiguration
    @Import(LockstepStarterTest.Reports.class)
    static class SecuredApp {

        @Bean
        SecurityFilterChain security(HttpSecurity http) throws Exception {
            return http.authorizeHttpRequests(a -> a.requestMatchers(HttpMethod.GET, "/actuator/lockstep").authenticated()
                            .requestMatchers("/actuator/lockstep").permitAll() // the endpoint's own check is what this test shows
                            .anyRequest().denyAll())
                    .httpBasic(Customizer.withDefaults())
                    .csrf(c -> c.ignoringRequestMatchers("/actuator/**"))
                    .build();
        }

        @Bean
        InMemoryUserDetailsManager users() {
            return new InMemoryUserDetailsManager(
                    User.withUsername("ops").password("{noop}ops-password").roles(LockstepEndpoint.OPERATOR_ROLE).build(),
                    User.withUsername("dev").password("{noop}dev-password").roles("VIEWER").build(),
                    User.withUsername("platform").password("{noop}platform-password").roles("PLATFORM").build());
        }
    }

    private static String basic(String user, String password) {
        return "Basic " + Base64.getEncoder().encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8));
    }

    private static HttpResponse<String> post(int port, String authorization, String json) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/actuator/lockstep"))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(json));
        if (authorization != null) {
            b.header("Authorization", authorization);
        }
        return HttpClient.newHttpClient().send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void anOperatorActsThroughTheActuatorAndNobodyElseCan() throws Exception {
        LockstepStarterTest.RUNS.clear();
        try (ConfigurableApplicationContext app = new SpringApplicationBuilder(SecuredApp.class).web(WebApplicationType.SERVLET)
                .properties("server.port=0", "server.address=127.0.0.1", "management.endpoints.web.exposure.include=lockstep",
                        "lockstep.redis.uri=" + redis.uri(), "lockstep.redis.key-prefix=actuator-" + System.nanoTime(),
                        "lockstep.worker.id=app-1", "tick.cron=0 0 3 * * *")
                .run()) {
            int port = Integer.parseInt(app.getEnvironment().getProperty("local.server.port"));
            RedisAdmin admin = RedisAdmin.of(app.getBean(RedisLockProvider.class));
            String pause = "{\"action\":\"pause\",\"job\":\"tick\",\"note\":\"deploy\",\"duration\":\"5m\"}";

            HttpResponse<String> viewer = post(port, basic("dev", "dev-password"), pause);
            assertThat(viewer.statusCode()).isEqualTo(403);
            assertThat(viewer.body()).contains("role LOCKSTEP_OPERATOR needed");
            HttpResponse<String> anonymous = post(port, null, pause);
            assertThat(anonymous.statusCode()).isEqualTo(403);
            assertThat(anonymous.body()).contains("an authenticated user in the role LOCKSTEP_OPERATOR may act");
            assertThat(admin.job("tick", 1).pause()).as("nothing changed").isEmpty();
            assertThat(post(port, basic("dev", "wrong"), pause).statusCode()).as("the application's own refusal").isEqualTo(401);

            HttpResponse<String> paused = post(port, basic("ops", "ops-password"), pause);
            assertThat(paused.statusCode()).as(paused.body()).isEqualTo(200);
            assertThat(paused.body()).contains("\"by\":\"ops\"");
            assertThat(admin.job("tick", 1).pause()).hasValueSatisfying(p -> {
                assertThat(p.by()).isEqualTo("ops");
                assertThat(p.note()).isEqualTo("deploy");
                assertThat(p.until()).isPresent();
            });
            assertThat(post(port, basic("ops", "ops-password"), "{\"action\":\"pause\",\"job\":\"nope\"}").statusCode()).isEqualTo(400);
            assertThat(post(port, basic("ops", "ops-password"), "{\"action\":\"pause\",\"job\":\"tick\",\"duration\":\"soon\"}")
                    .statusCode()).isEqualTo(400);
            assertThat(post(port, basic("ops", "ops-password"), "{\"action\":\"resume\",\"job\":\"tick\"}").statusCode()).isEqualTo(200);
            assertThat(admin.job("tick", 1).pause()).isEmpty();

            HttpResponse<String> trigger = post(port, basic("ops", "ops-password"), "{\"action\":\"trigger\",\"job\":\"tick\"}");
            assertThat(trigger.statusCode()).as(trigger.body()).isEqualTo(200);
            String slot = trigger.body().replaceFirst(".*\"detail\":\"slot ([^\"]+)\".*", "$1");
            await().atMost(Duration.ofSeconds(15)).until(() -> LockstepStarterTest.RUNS.containsKey("tick@" + slot));
            assertThat(admin.actions("tick", 10)).extracting(a -> a.action() + " " + a.by())
                    .containsExactly("trigger ops", "resume ops", "pause ops");
        }
    }

    /** {@code lockstep.endpoint.operator-role}: the application's own role name decides, and only it. */
    @Test
    void theApplicationNamesTheRoleThatMayAct() throws Exception {
        try (ConfigurableApplicationContext app = new SpringApplicationBuilder(SecuredApp.class).web(WebApplicationType.SERVLET)
                .properties("server.port=0", "server.address=127.0.0.1", "management.endpoints.web.exposure.include=lockstep",
                        "lockstep.redis.uri=" + redis.uri(), "lockstep.redis.key-prefix=actuator-role-" + System.nanoTime(),
                        "lockstep.worker.id=app-2", "tick.cron=0 0 3 * * *", "lockstep.endpoint.operator-role=PLATFORM")
                .run()) {
            int port = Integer.parseInt(app.getEnvironment().getProperty("local.server.port"));
            RedisAdmin admin = RedisAdmin.of(app.getBean(RedisLockProvider.class));
            String pause = "{\"action\":\"pause\",\"job\":\"tick\",\"note\":\"deploy\"}";
            HttpResponse<String> ops = post(port, basic("ops", "ops-password"), pause);
            assertThat(ops.statusCode()).as("the default role no longer acts").isEqualTo(403);
            assertThat(ops.body()).contains("role PLATFORM needed");
            assertThat(admin.job("tick", 1).pause()).isEmpty();
            HttpResponse<String> platform = post(port, basic("platform", "platform-password"), pause);
            assertThat(platform.statusCode()).as(platform.body()).isEqualTo(200);
            assertThat(admin.job("tick", 1).pause()).hasValueSatisfying(p -> assertThat(p.by()).isEqualTo("platform"));
        }
    }
}
