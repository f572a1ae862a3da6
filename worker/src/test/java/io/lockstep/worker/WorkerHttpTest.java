package io.lockstep.worker;

import static org.assertj.core.api.Assertions.assertThat;

import io.lockstep.redis.LocalRedisServer;
import io.lockstep.redis.RedisLockProvider;
import io.lockstep.scheduler.Scheduler;
import io.lockstep.scheduler.config.ConfigLoader;
import io.lockstep.scheduler.config.LockstepConfig;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;

/**
 * An application that embeds the scheduler serves the worker's endpoints for it: {@code /metrics}
 * with the scheduler's meters, health, {@code /status.json} and the status page, on a real Redis.
 */
class WorkerHttpTest {

    private static int freePort() throws Exception {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }

    private static HttpResponse<String> get(int port, String path) throws Exception {
        return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void anEmbeddedSchedulerServesTheWorkersEndpoints() throws Exception {
        try (LocalRedisServer redis = LocalRedisServer.start()) {
            LockstepConfig config = ConfigLoader.defaults().builtByReflection(false).load("app.yaml", """
                    redis: { uri: "%s" }
                    worker: { http: { port: %d } }
                    jobs:
                      - { name: invoices, cron: "0 */5 * * * *", class: %s }
                    """.formatted(redis.uri(), freePort(), Noop.class.getName()));
            PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
            try (RedisLockProvider provider = RedisLockProvider.builder().settings(config.redis()).build()) {
                Scheduler scheduler = Scheduler.builder(provider).workerId("app-1").meterRegistry(registry).jobs(config.jobs())
                        .jobFactory(definition -> new Noop()).build();
                scheduler.start();
                try (WorkerHttp http = WorkerHttp.start(config, scheduler, provider, registry)) {
                    assertThat(http.port()).isEqualTo(config.worker().httpPort());
                    assertThat(get(http.port(), "/health/ready").statusCode()).isEqualTo(200);
                    assertThat(get(http.port(), "/metrics").body()).contains("lockstep_redis_up 1.0");
                    HttpResponse<String> status = get(http.port(), "/status.json");
                    assertThat(status.statusCode()).isEqualTo(200);
                    assertThat(status.body()).contains("\"name\":\"invoices\"").contains("\"id\":\"app-1\"");
                    assertThat(get(http.port(), "/").body()).contains("<title>Lockstep status</title>");

                    // F5 of the 2026-12-04 trial: after a reload the status shows the schedule in force, not the startup one.
                    assertThat(status.body()).contains("0 */5 * * * *");
                    scheduler.update(ConfigLoader.defaults().builtByReflection(false).load("app.yaml", """
                            redis: { uri: "%s" }
                            jobs:
                              - { name: invoices, cron: "0 */7 * * * *", class: %s }
                            """.formatted(redis.uri(), Noop.class.getName())).jobs());
                    org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(10)) // the status is read at most every 2 s
                            .until(() -> get(http.port(), "/status.json").body().contains("0 */7 * * * *"));
                    assertThat(get(http.port(), "/status.json").body()).doesNotContain("0 */5 * * * *");
                } finally {
                    scheduler.close();
                }
            }
        }
    }

    /** The application's job. */
    public static final class Noop implements io.lockstep.scheduler.Job {
        @Override
        public void execute(io.lockstep.scheduler.JobContext context) {}
    }
}
