package io.lockstep.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lockstep.scheduler.Job;
import io.lockstep.scheduler.JobFactory;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The jobs directory's class loader, on a JAR compiled here: it brings its own {@code picocli.CommandLine}
 * (a class Lockstep also has), a job, and a factory registration.
 */
class JobsClassLoaderTest {

    @TempDir
    static Path dir;

    static Path jobs;

    /** The same JAR without the factory registration. */
    static Path jobsWithoutFactory;

    @BeforeAll
    static void buildJobsJar() throws IOException {
        Path src = dir.resolve("src");
        Path classes = dir.resolve("classes");
        jobs = dir.resolve("jobs");
        Files.createDirectories(classes);
        Files.createDirectories(jobs);
        Map<String, String> sources = Map.of(
                "picocli/CommandLine.java", "package picocli; public class CommandLine { public static String origin() { return \"jobs\"; } }",
                "acme/EchoJob.java", "package acme; public class EchoJob implements io.lockstep.scheduler.Job {"
                        + " public void execute(io.lockstep.scheduler.JobContext c) { } }");
        for (Map.Entry<String, String> source : sources.entrySet()) {
            Path file = src.resolve(source.getKey());
            Files.createDirectories(file.getParent());
            Files.writeString(file, source.getValue());
        }
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        int exit = javac.run(null, null, null, "-d", classes.toString(), "-cp", System.getProperty("java.class.path"),
                src.resolve("picocli/CommandLine.java").toString(), src.resolve("acme/EchoJob.java").toString());
        assertThat(exit).as("javac").isZero();
        jobsWithoutFactory = dir.resolve("jobs-without-factory");
        Files.createDirectories(jobsWithoutFactory);
        try (OutputStream file = Files.newOutputStream(jobsWithoutFactory.resolve("acme-jobs.jar"));
                JarOutputStream jar = new JarOutputStream(file);
                Stream<Path> walk = Files.walk(classes)) {
            for (Path c : walk.filter(Files::isRegularFile).toList()) {
                jar.putNextEntry(new JarEntry(classes.relativize(c).toString().replace('\\', '/')));
                jar.write(Files.readAllBytes(c));
            }
        }
        Files.copy(jobsWithoutFactory.resolve("acme-jobs.jar"), jobs.resolve("acme-jobs.jar"));
        try (OutputStream file = Files.newOutputStream(jobs.resolve("acme-factory.jar")); JarOutputStream jar = new JarOutputStream(file)) {
            jar.putNextEntry(new JarEntry("META-INF/services/" + JobFactory.class.getName()));
            jar.write("acme.NoSuchFactory\n".getBytes(StandardCharsets.UTF_8));
        }
        Files.writeString(jobs.resolve("notes.txt"), "not a jar: ignored");
    }

    private static JobsClassLoader loader() throws IOException {
        return new JobsClassLoader(JobsDirectory.jars(jobs), JobsClassLoaderTest.class.getClassLoader(), jobs.toString());
    }

    @Test
    void aClassTheJobsBringIsTheirsEvenWhereLockstepHasOneOfTheSameName() throws Exception {
        try (JobsClassLoader loader = loader()) {
            Class<?> theirs = loader.loadClass("picocli.CommandLine");
            assertThat(theirs).isNotSameAs(picocli.CommandLine.class);
            assertThat(theirs.getClassLoader()).isSameAs(loader);
            assertThat(theirs.getMethod("origin").invoke(null)).isEqualTo("jobs");
        }
    }

    @Test
    void theJobApiSlf4jAndJedisAreShared() throws Exception {
        try (JobsClassLoader loader = loader()) {
            assertThat(loader.loadClass(Job.class.getName())).isSameAs(Job.class);
            assertThat(loader.loadClass(org.slf4j.Logger.class.getName())).isSameAs(org.slf4j.Logger.class);
            assertThat(loader.loadClass(redis.clients.jedis.UnifiedJedis.class.getName())).isSameAs(redis.clients.jedis.UnifiedJedis.class);
            Class<?> job = loader.loadClass("acme.EchoJob");
            assertThat(Job.class.isAssignableFrom(job)).as("a job class of the jobs directory is a Lockstep Job").isTrue();
        }
    }

    @Test
    void lockstepsOwnDependenciesAreNotVisibleToTheJobs() throws Exception {
        try (JobsClassLoader loader = loader()) {
            assertThat(getClass().getClassLoader().loadClass("com.fasterxml.jackson.databind.ObjectMapper")).isNotNull();
            assertThatThrownBy(() -> loader.loadClass("com.fasterxml.jackson.databind.ObjectMapper"))
                    .isInstanceOf(ClassNotFoundException.class);
            assertThatThrownBy(() -> loader.loadClass("com.cronutils.model.Cron")).isInstanceOf(ClassNotFoundException.class);
        }
    }

    @Test
    void aFactoryRegistrationIsFoundInTheJobsJarsOnly() throws Exception {
        try (JobsClassLoader loader = loader()) {
            List<URL> found = Collections.list(loader.getResources("META-INF/services/" + JobFactory.class.getName()));
            assertThat(found).hasSize(1);
            assertThat(found.get(0).toString()).contains("acme-factory.jar");
            assertThat(loader.getResource("logback.xml")).as("Lockstep's own resources stay its own").isNull();
        }
    }

    @Test
    void theCommandRunsWithTheJobsLoaderAsContextClassLoaderAndItIsRestoredAfter() throws Exception {
        JobsDirectory directory = new JobsDirectory();
        directory.dir = jobs;
        ClassLoader before = Thread.currentThread().getContextClassLoader();
        ClassLoader[] during = new ClassLoader[1];
        int exit = directory.run(new PrintWriter(new StringWriter()), () -> {
            during[0] = Thread.currentThread().getContextClassLoader();
            return 0;
        });
        assertThat(exit).isZero();
        assertThat(during[0]).isInstanceOf(JobsClassLoader.class);
        assertThat(Thread.currentThread().getContextClassLoader()).isSameAs(before);
    }

    @Test
    void validateLoadsJobClassesFromTheJobsDirectoryAndSaysWhereOneIsMissing() throws IOException {
        Path config = dir.resolve("jobs.yaml");
        Files.writeString(config, "jobs:\n  - name: echo\n    cron: \"@daily\"\n    class: acme.EchoJob\n");
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int exit = WorkerMain.execute(new PrintWriter(out, true), new PrintWriter(err, true), "validate", "--config", config.toString(),
                "--jobs", jobsWithoutFactory.toString());
        assertThat(exit).as(err.toString()).isZero();
        assertThat(out.toString()).contains("valid, 1 job");

        assertThat(WorkerMain.execute(new PrintWriter(new StringWriter()), new PrintWriter(new StringWriter()), "validate",
                "--config", config.toString())).as("without the jobs directory the class is not there").isEqualTo(WorkerMain.BAD_INPUT);

        Files.writeString(config, "jobs:\n  - name: echo\n    cron: \"@daily\"\n    class: acme.NoSuchJob\n");
        err.getBuffer().setLength(0);
        exit = WorkerMain.execute(new PrintWriter(new StringWriter()), new PrintWriter(err, true), "validate", "--config", config.toString(),
                "--jobs", jobsWithoutFactory.toString());
        assertThat(exit).isEqualTo(WorkerMain.BAD_INPUT);
        assertThat(err.toString()).contains("class acme.NoSuchJob not found in the jobs directory " + jobsWithoutFactory);
    }

    @Test
    void aJobsDirectoryThatIsNotOneIsOneLineAndExit2() throws Exception {
        JobsDirectory directory = new JobsDirectory();
        directory.dir = dir.resolve("no-such-dir");
        StringWriter err = new StringWriter();
        boolean[] ran = new boolean[1];
        int exit = directory.run(new PrintWriter(err, true), () -> {
            ran[0] = true;
            return 0;
        });
        assertThat(exit).isEqualTo(WorkerMain.BAD_INPUT);
        assertThat(ran[0]).isFalse();
        assertThat(err.toString()).isEqualTo("error: the jobs directory " + directory.dir + " (--jobs or $LOCKSTEP_JOBS) is not a directory"
                + System.lineSeparator());
    }
}
