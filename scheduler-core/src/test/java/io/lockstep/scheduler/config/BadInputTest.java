package io.lockstep.scheduler.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Files that are not a config at all: each gets one located problem, quickly, and nothing runs. */
class BadInputTest {

    private static final ConfigLoader LOADER = ConfigLoader.defaults().checkingClasses(false);

    @TempDir
    Path dir;

    private List<String> problems(Path file) {
        ConfigException e = catchThrowableOfType(ConfigException.class, () -> LOADER.load(file));
        assertThat(e).as("rejected").isNotNull();
        return e.problems().stream().map(ConfigProblem::toString).toList();
    }

    private Path write(String name, byte[] content) throws IOException {
        return Files.write(dir.resolve(name), content);
    }

    @Test
    void aBillionLaughsIsRefusedWithoutExpandingIt() throws IOException {
        StringBuilder yaml = new StringBuilder("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for (int i = 1; i < 10; i++) {
            yaml.append("a").append(i).append(": &a").append(i).append(" [");
            for (int j = 0; j < 10; j++) {
                yaml.append(j == 0 ? "" : ", ").append("*a").append(i - 1);
            }
            yaml.append("]\n");
        }
        yaml.append("jobs: [ { name: a, cron: \"@daily\", class: x.A, params: { bomb: *a9 } } ]\n");
        List<String> problems = problems(write("bomb.yaml", yaml.toString().getBytes(StandardCharsets.UTF_8)));
        assertThat(problems).singleElement().asString().startsWith(dir.resolve("bomb.yaml") + ":")
                .contains("invalid YAML").contains("aliases");
    }

    @Test
    void aFileOverTheSizeLimitIsRefusedFromItsSizeBeforeBeingDecoded() throws IOException {
        // One byte over the limit (16 MiB: small enough to write for real where files cannot be sparse),
        // beginning with a byte that is not UTF-8: read and decoded before the size check, it would be
        // refused as "not valid UTF-8" at offset 0 instead.
        Path big = dir.resolve("big.yaml");
        long size = ConfigFile.MAX_BYTES + 1;
        try (RandomAccessFile f = new RandomAccessFile(big.toFile(), "rw")) {
            f.write(0xff);
            f.setLength(size);
        }
        assertThat(problems(big)).singleElement().asString()
                .isEqualTo(big + ": file is " + size + " bytes; a config may be at most 16777216 bytes (is this the right file?)");
    }

    @Test
    void invalidUtf8IsAProblemOnItsLine() throws IOException {
        byte[] text = "jobs:\n  - name: a\n    cron: \"@daily\"\n    class: x.A\n    params: { label: caf\u00e9 }\n"
                .getBytes(StandardCharsets.ISO_8859_1); // é as one Latin-1 byte
        assertThat(problems(write("latin1.yaml", text))).singleElement().asString()
                .isEqualTo(dir.resolve("latin1.yaml") + ":5: not valid UTF-8: byte 0xe9 at offset 76 (save the file as UTF-8)");
    }

    @Test
    void aTabIndentedFileIsAProblemOnItsLine() throws IOException {
        String yaml = "jobs:\n\t- name: a\n\t  cron: \"@daily\"\n";
        assertThat(problems(write("tabs.yaml", yaml.getBytes(StandardCharsets.UTF_8)))).singleElement().asString()
                .startsWith(dir.resolve("tabs.yaml") + ":2: invalid YAML");
    }

    @Test
    void aDuplicateKeyIsAProblemOnItsLine() throws IOException {
        String yaml = "jobs:\n  - name: a\n    cron: \"@daily\"\n    cron: \"@hourly\"\n    class: x.A\n";
        assertThat(problems(write("dup.yaml", yaml.getBytes(StandardCharsets.UTF_8)))).singleElement().asString()
                .isEqualTo(dir.resolve("dup.yaml") + ":4: jobs[0].cron: duplicate key \"cron\" (first at line 3)");
    }

    @Test
    void aJobLevelUnknownKeyIsReportedOnce() throws IOException {
        String yaml = "jobs:\n  - name: a\n    cron: \"@daily\"\n    class: x.A\n    leas: 5s\n";
        assertThat(problems(write("typo.yaml", yaml.getBytes(StandardCharsets.UTF_8)))).singleElement().asString()
                .isEqualTo(dir.resolve("typo.yaml") + ":5: jobs[0].leas: unknown key \"leas\" (did you mean \"lease\"?)");
    }

    @Test
    void aMissingFileIsOneLineWithoutAnExceptionName() {
        assertThat(problems(dir.resolve("nope.yaml"))).containsExactly(dir.resolve("nope.yaml") + ": file not found");
    }

    @Test
    void aJobClassWhoseConstructorThrowsIsAProblemOfTheJob() throws IOException {
        String yaml = "jobs:\n  - name: broken\n    cron: \"@daily\"\n    class: " + Broken.class.getName() + "\n";
        List<String> problems;
        try {
            ConfigLoader.defaults().load(write("ctor.yaml", yaml.getBytes(StandardCharsets.UTF_8)));
            throw new AssertionError("expected the config to be rejected");
        } catch (ConfigException e) {
            problems = e.problems().stream().map(ConfigProblem::toString).toList();
        }
        assertThat(problems).containsExactly(dir.resolve("ctor.yaml") + ":4: jobs[0].class: constructor of "
                + Broken.class.getName() + " failed: java.lang.IllegalStateException: needs a database");
    }

    /** A job whose constructor throws. */
    public static final class Broken implements io.lockstep.scheduler.Job {
        public Broken() {
            throw new IllegalStateException("needs a database");
        }

        @Override
        public void execute(io.lockstep.scheduler.JobContext context) {}
    }
}
