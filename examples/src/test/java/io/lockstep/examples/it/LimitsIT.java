package io.lockstep.examples.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.lockstep.examples.cli.CliRun;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A cluster-wide limit on 3 worker JVMs and a real Redis: 6 jobs share a limit of 2, each run
 * taking 1 s, three due at one second and three the next. By the jobs' own timestamps never more
 * than 2 ran at once; the permits went in slot order (a slot waiting since the first second started
 * no later than any of the next); a worker SIGKILLed while it holds a permit loses it after its lease, the run it
 * cut off is run again elsewhere (recover: rerun), and no slot is lost (audit holds); status
 * shows the limit's holders.
 */
class LimitsIT {

    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;

    record Run(String job, Instant slot, long start, long end, int permit, long token, String worker) {
        static Run parse(String line) {
            String[] p = line.split(" ");
            return new Run(p[0], Instant.parse(p[1]), Long.parseLong(p[2]), Long.parseLong(p[3]), Integer.parseInt(p[4]),
                    Long.parseLong(p[5]), p[6]);
        }
    }

    private List<Run> runs(Path log) throws IOException {
        if (!Files.exists(log)) {
            return List.of();
        }
        return Files.readAllLines(log).stream().filter(l -> !l.isBlank()).map(Run::parse).toList();
    }

    @Test
    void neverMoreThanTwoAtOnceInSlotOrderAndAKilledHoldersPermitReturnsWithinALease() throws Exception {
        Path log = dir.resolve("runs.log");
        StringBuilder yaml = new StringBuilder("""
                limits: { reporting-db: 2 }
                defaults:
                  lease: 3s
                  misfireGrace: 10s
                  recover: rerun
                jobs:
                """);
        for (int i = 1; i <= 6; i++) {
            yaml.append("""
                      - name: report-%d
                        cron: "%s * * * * *"
                        class: io.lockstep.examples.it.jobs.PermitJob
                        params: { limit: reporting-db, ms: 1000, log: "%s" }
                        uses: [reporting-db]
                    """.formatted(i, i <= 3 ? "0/4" : "1/4", log));
        }
        try (Cluster cluster = new Cluster(dir, yaml.toString())) {
            cluster.start("w1");
            cluster.start("w2");
            cluster.start("w3");
            cluster.awaitStarted();
            await().atMost(Duration.ofSeconds(30)).until(() -> runs(log).size() >= 12);

            // Kill a worker while it holds a permit (status names the holders, and which permit).
            String[] victim = new String[1];
            int[] victimPermit = new int[1];
            await().atMost(Duration.ofSeconds(20)).until(() -> {
                JsonNode limit = status(cluster).path("limits").get(0);
                for (JsonNode h : limit.path("holders")) {
                    String holder = h.path("holder").asText();
                    victim[0] = holder.substring(holder.lastIndexOf(" on ") + 4);
                    victimPermit[0] = h.path("permit").asInt();
                    return true;
                }
                return false;
            });
            WorkerProcess killed = cluster.workers.stream().filter(w -> w.id.equals(victim[0])).findFirst().orElseThrow();
            killed.signal("KILL");
            long killedAt = System.currentTimeMillis();
            assertThat(killed.waitForExit(Duration.ofSeconds(10))).isNotZero();
            // Its permit comes back once its lease (3 s) runs out: runs take it again, and the rest go on.
            await().atMost(Duration.ofSeconds(60)).until(() -> runs(log).stream()
                    .filter(r -> r.start() > killedAt + 3_000).count() >= 8
                    && runs(log).stream().anyMatch(r -> r.start() > killedAt && r.permit() == victimPermit[0]));
            for (WorkerProcess w : cluster.workers) {
                if (w != killed) {
                    assertThat(w.terminate()).as(w.stderr()).isZero();
                }
            }

            List<Run> runs = runs(log);
            // never more than 2 at once: every start and end, in time order (an end before a start at the same ms)
            List<long[]> edges = new ArrayList<>();
            for (Run r : runs) {
                edges.add(new long[] {r.start(), 1});
                edges.add(new long[] {r.end(), -1});
            }
            edges.sort(Comparator.<long[]>comparingLong(e -> e[0]).thenComparingLong(e -> e[1]));
            int at = 0;
            int most = 0;
            for (long[] e : edges) {
                at += (int) e[1];
                most = Math.max(most, at);
            }
            assertThat(most).as("runs at once, by their own clocks (the killed run's interval is not logged)").isEqualTo(2);
            assertThat(runs).allSatisfy(r -> assertThat(r.permit()).isBetween(0, 1));

            // in slot order: a run of an earlier slot never started after a later slot's (beyond the waiters'
            // polling, 250 ms: two waiters entitled to two free permits take them in either order), reruns aside
            for (Run early : runs) {
                boolean rerun = cluster.events("slot_recovered").stream().anyMatch(e -> e.path("job").asText().equals(early.job())
                        && WorkerProcess.slot(e).equals(early.slot()));
                for (Run late : runs) {
                    if (!rerun && early.slot().isBefore(late.slot())) {
                        assertThat(early.start()).as("%s started after %s", early, late).isLessThanOrEqualTo(late.start() + 400);
                    }
                }
            }
            assertThat(cluster.events("limit_waiting")).as("slots waited for a permit").isNotEmpty();
            assertThat(cluster.events("slot_missed").stream().filter(e -> "limit".equals(e.path("code").asText())))
                    .as("every slot got its permit within its grace").isEmpty();
            cluster.assertAuditHolds();
        }
    }

    private static JsonNode status(Cluster cluster) throws IOException {
        CliRun status = CliRun.of("status", "--config", cluster.config.toString(), "--json");
        assertThat(status.exit()).as(status.err()).isZero();
        return JSON.readTree(status.out());
    }
}
