package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.lockstep.redis.LocalRedisServer;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.zip.ZipFile;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * F2 of the 2026-12-04 trial: the starter in the application a user generates. For each Boot line,
 * an application laid out as start.spring.io makes it (parent {@code spring-boot-starter-parent},
 * web and actuator, the Spring Boot Maven plugin), plus {@code lockstep-spring-boot-starter} exactly
 * as the README says and nothing else (no {@code jedis.version}), is built by its own {@code mvn
 * package} outside this build, then run as two instances ({@code java -jar}) on a real redis-server:
 * the first starts while Redis is down ({@code lockstep.fail-fast=false}, F7) and must serve, health
 * UP, and claim once Redis is up; together they run their {@code @LockstepJob} (every second, a
 * {@code @Service} injected) once per slot, and stop cleanly on SIGTERM. The jar must hold the Jedis
 * that Boot manages (6.0.0 on 3.5, 7.0.0 on 4.0): Lockstep runs on it ({@code JedisLines}).
 *
 * <p>The application resolves Lockstep from the local Maven repository, so this test first copies
 * the artifacts this build made there (core, redis, the starter and the parent POM), as
 * {@code mvn install} would. The first run downloads the Boot applications' dependencies (about
 * 60 MB per Boot line); later runs take about 40 s per line.
 */
class GeneratedBootAppIT {

    @TempDir
    Path dir;

    @ParameterizedTest(name = "Spring Boot {0}")
    @CsvSource({"3.5.7, spring-boot-starter-web, 6.0.0", "4.0.7, spring-boot-starter-webmvc, 7.0.0"})
    void anApplicationGeneratedForBootRunsItsJobOnTheJedisBootManages(String boot, String web, String jedis) throws Exception {
        String version = System.getProperty("lockstep.version");
        Path repo = Path.of(System.getProperty("lockstep.localRepository", System.getProperty("user.home") + "/.m2/repository"));
        Assumptions.assumeTrue(version != null, "run by failsafe (it passes lockstep.version)");
        publish(repo, version);
        Path app = generate(boot, web, version);
        Path log = dir.resolve("build.log");
        int built = run(app, log, List.of(maven(), "-B", "-q", "package", "-DskipTests", "-Dmaven.repo.local=" + repo));
        assertThat(built).as("mvn package of the generated Boot %s application (see %s):%n%s", boot, log, tail(log)).isZero();
        Path jar = app.resolve("target/demo-0.0.1-SNAPSHOT.jar");
        try (ZipFile zip = new ZipFile(jar.toFile())) {
            assertThat(zip.stream().map(e -> e.getName()).filter(n -> n.startsWith("BOOT-INF/lib/jedis-")))
                    .as("the Jedis Boot %s manages, with no override", boot).containsExactly("BOOT-INF/lib/jedis-" + jedis + ".jar");
        }

        Path ticks = dir.resolve("ticks.txt");
        try (LocalRedisServer redis = LocalRedisServer.start()) {
            redis.kill(); // down when the first instance starts
            // The first instance starts while Redis is down (lockstep.fail-fast=false): it serves, and
            // claims once Redis is up. The second starts after, as a default application does.
            App first = App.start(jar, ticks, dir.resolve("first.log"), redis, "first", "--lockstep.fail-fast=false");
            App second = null;
            try {
                assertThat(first.health()).as("the first instance serves while Redis is down").contains("\"status\":\"UP\"");
                assertThat(ticks).doesNotExist();
                redis.restart();
                second = App.start(jar, ticks, dir.resolve("second.log"), redis, "second");
                await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(200)).failFast(first::assertAlive)
                        .failFast(second::assertAlive).until(() -> Files.exists(ticks) && Files.readAllLines(ticks).size() >= 6);
                assertThat(first.output()).as("the first instance claims once Redis is up").contains("worker started");
                assertThat(second.health()).contains("\"status\":\"UP\"");
            } finally {
                first.stop();
                if (second != null) {
                    second.stop();
                }
            }
            List<String> slots = Files.readAllLines(ticks);
            assertThat(slots).as("each slot ran once across the two instances, with the service injected")
                    .allMatch(l -> l.startsWith("hello ")).doesNotHaveDuplicates();
            for (App instance : List.of(first, second)) {
                assertThat(instance.output()).as("%s's output", instance.name).doesNotContain("NoClassDefFoundError", "NoSuchMethodError",
                        "AbstractMethodError", "ClassCastException", "ERROR").contains("worker stopped");
            }
        }
    }

    /** One instance of the generated application: {@code java -jar}, on its own HTTP port. */
    private record App(String name, Process process, Path log, int port) {

        static App start(Path jar, Path ticks, Path log, LocalRedisServer redis, String name, String... args) throws IOException {
            int port;
            try (ServerSocket free = new ServerSocket(0)) {
                port = free.getLocalPort();
            }
            List<String> command = new java.util.ArrayList<>(List.of(java(), "-Dticks.file=" + ticks, "-jar", jar.toString(),
                    "--lockstep.redis.uri=" + redis.uri(), "--lockstep.redis.timeout=500ms", "--server.port=" + port,
                    "--lockstep.worker.id=" + name));
            command.addAll(List.of(args));
            App app = new App(name, new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start(), log, port);
            await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(200)).failFast(app::assertAlive)
                    .until(() -> app.output().contains("Started DemoApplication"));
            return app;
        }

        void assertAlive() throws IOException {
            assertThat(process.isAlive()).as("%s is up; its output:%n%s", name, tail(log)).isTrue();
        }

        String output() throws IOException {
            return Files.readString(log);
        }

        String health() throws IOException, InterruptedException {
            return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/actuator/health"))
                    .build(), HttpResponse.BodyHandlers.ofString()).body();
        }

        /** SIGTERM: Boot's graceful stop, Lockstep drains first. */
        void stop() throws InterruptedException {
            process.destroy();
            if (!process.waitFor(60, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        }
    }

    /** Copies the artifacts this build made into the local repository, as {@code mvn install} would. */
    private static void publish(Path repo, String version) throws IOException {
        Path root = Path.of("..").toAbsolutePath().normalize();
        copy(root.resolve(".flattened-pom.xml"), repo, "lockstep-parent", version, "pom");
        for (String[] module : new String[][] {{"scheduler-core", "scheduler-core"}, {"scheduler-redis", "scheduler-redis"},
                {"spring-boot-starter", "lockstep-spring-boot-starter"}}) {
            Path target = root.resolve(module[0]).resolve("target");
            copy(root.resolve(module[0]).resolve(".flattened-pom.xml"), repo, module[1], version, "pom");
            copy(target.resolve(module[1] + "-" + version + ".jar"), repo, module[1], version, "jar");
        }
    }

    private static void copy(Path from, Path repo, String artifact, String version, String extension) throws IOException {
        assertThat(from).as("built by this build before the integration tests").isRegularFile();
        Path to = repo.resolve("io/lockstep").resolve(artifact).resolve(version).resolve(artifact + "-" + version + "." + extension);
        Files.createDirectories(to.getParent());
        Files.copy(from, to, StandardCopyOption.REPLACE_EXISTING);
    }

    /** The application as start.spring.io lays it out (web and actuator), plus the starter and one job. */
    private Path generate(String boot, String web, String version) throws IOException {
        Path app = dir.resolve("demo");
        Path pkg = app.resolve("src/main/java/com/example/demo");
        Files.createDirectories(pkg);
        Files.createDirectories(app.resolve("src/main/resources"));
        Files.writeString(app.resolve("pom.xml"), """
                <?xml version="1.0" encoding="UTF-8"?>
                <project xmlns="http://maven.apache.org/POM/4.0.0" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
                  xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 https://maven.apache.org/xsd/maven-4.0.0.xsd">
                  <modelVersion>4.0.0</modelVersion>
                  <parent>
                    <groupId>org.springframework.boot</groupId>
                    <artifactId>spring-boot-starter-parent</artifactId>
                    <version>%s</version>
                    <relativePath/>
                  </parent>
                  <groupId>com.example</groupId>
                  <artifactId>demo</artifactId>
                  <version>0.0.1-SNAPSHOT</version>
                  <name>demo</name>
                  <properties>
                    <java.version>17</java.version>
                  </properties>
                  <dependencies>
                    <dependency>
                      <groupId>org.springframework.boot</groupId>
                      <artifactId>%s</artifactId>
                    </dependency>
                    <dependency>
                      <groupId>org.springframework.boot</groupId>
                      <artifactId>spring-boot-starter-actuator</artifactId>
                    </dependency>
                    <dependency>
                      <groupId>io.lockstep</groupId>
                      <artifactId>lockstep-spring-boot-starter</artifactId>
                      <version>%s</version>
                    </dependency>
                  </dependencies>
                  <build>
                    <plugins>
                      <plugin>
                        <groupId>org.springframework.boot</groupId>
                        <artifactId>spring-boot-maven-plugin</artifactId>
                      </plugin>
                    </plugins>
                  </build>
                </project>
                """.formatted(boot, web, version));
        Files.writeString(app.resolve("src/main/resources/application.properties"), "spring.application.name=demo\n"); // as generated
        Files.writeString(pkg.resolve("DemoApplication.java"), """
                package com.example.demo;

                import org.springframework.boot.SpringApplication;
                import org.springframework.boot.autoconfigure.SpringBootApplication;

                @SpringBootApplication
                public class DemoApplication {
                    public static void main(String[] args) {
                        SpringApplication.run(DemoApplication.class, args);
                    }
                }
                """);
        Files.writeString(pkg.resolve("Greeter.java"), """
                package com.example.demo;

                import org.springframework.stereotype.Service;

                @Service
                public class Greeter {
                    String greet(Object who) {
                        return "hello " + who;
                    }
                }
                """);
        Files.writeString(pkg.resolve("Ticks.java"), """
                package com.example.demo;

                import io.lockstep.scheduler.JobContext;
                import io.lockstep.spring.LockstepJob;
                import java.io.IOException;
                import java.nio.file.Files;
                import java.nio.file.Path;
                import java.nio.file.StandardOpenOption;
                import org.springframework.stereotype.Component;

                @Component
                public class Ticks {
                    private final Greeter greeter;

                    Ticks(Greeter greeter) {
                        this.greeter = greeter;
                    }

                    @LockstepJob(name = "tick", cron = "* * * * * *")
                    void tick(JobContext run) throws IOException {
                        Files.writeString(Path.of(System.getProperty("ticks.file")), greeter.greet(run.scheduledTime()) + "\\n",
                                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
                    }
                }
                """);
        return app;
    }

    private static int run(Path dir, Path log, List<String> command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        if (!p.waitFor(15, TimeUnit.MINUTES)) {
            p.destroyForcibly();
            return -1;
        }
        return p.exitValue();
    }

    private static String tail(Path log) throws IOException {
        List<String> lines = Files.exists(log) ? Files.readAllLines(log) : List.of();
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
    }

    private static String maven() {
        String home = System.getProperty("maven.home");
        return home != null && Files.isExecutable(Path.of(home, "bin", "mvn")) ? Path.of(home, "bin", "mvn").toString() : "mvn";
    }

    private static String java() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }
}
