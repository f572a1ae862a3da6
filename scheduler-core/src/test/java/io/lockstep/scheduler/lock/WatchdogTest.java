package io.lockstep.scheduler.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The watchdog on its own, renewing through a renewer that answers from a set of owned names. Leases
 * are 2 s or more, so that a stall of a second on a busy machine loses none the test expects kept;
 * the tests wait on renewal rounds and reports, not on time.
 */
class WatchdogTest {

    private static final Duration LEASE = Duration.ofSeconds(2);

    private final Set<String> owned = ConcurrentHashMap.newKeySet();
    private final List<List<String>> rounds = new CopyOnWriteArrayList<>();
    private final List<String> lost = new CopyOnWriteArrayList<>();
    private volatile boolean unreachable;
    private final Watchdog<String> watchdog = new Watchdog<>("test-watchdog", leases -> {
        if (unreachable) {
            throw new LockException("test", "unreachable", null);
        }
        rounds.add(List.copyOf(leases));
        List<Boolean> answers = new ArrayList<>();
        leases.forEach(l -> answers.add(owned.contains(l)));
        return answers;
    }, (watch, reason) -> lost.add(watch.lease() + ": " + reason));

    @AfterEach
    void close() {
        watchdog.close();
    }

    @Test
    void leasesDueTogetherAreRenewedInOneRoundAndKeptAlive() {
        owned.addAll(List.of("a", "b", "c"));
        long now = System.nanoTime();
        List<Watchdog<String>.Watch> watches = new ArrayList<>();
        for (String name : List.of("a", "b", "c")) {
            watches.add(watchdog.watch(name, LEASE, now, true));
        }
        // Four rounds, one every lease/3: the last one past the first lease's end.
        await().atMost(Duration.ofSeconds(15)).until(() -> rounds.size() >= 4);
        assertThat(rounds.get(0)).containsExactlyInAnyOrder("a", "b", "c");
        assertThat(watches).allSatisfy(w -> assertThat(w.isLost()).isFalse());
        assertThat(System.nanoTime() - now).isGreaterThan(LEASE.toNanos()); // alive past one lease
        assertThat(lost).isEmpty();
    }

    /**
     * A new lease wakes the watchdog only when it is due before the watchdog's sleep ends: a short
     * lease watched while the watchdog sleeps for a long one's renewal is still renewed in time.
     */
    @Test
    void aLeaseDueBeforeTheWatchdogsSleepEndsWakesIt() {
        owned.addAll(List.of("long", "short"));
        watchdog.watch("long", Duration.ofSeconds(60), System.nanoTime(), true); // next renewal in about 20 s
        await().atMost(Duration.ofSeconds(5)).until(() -> Thread.getAllStackTraces().keySet().stream()
                .anyMatch(t -> t.getName().equals("test-watchdog") && t.getState() == Thread.State.TIMED_WAITING));
        // 2 s, renewed about every 670 ms: ten times shorter than the long lease's sleep, and long enough
        // that a loaded machine's scheduling delay (two test JVMs share two cores) cannot lose it.
        Watchdog<String>.Watch shortLease = watchdog.watch("short", Duration.ofSeconds(2), System.nanoTime(), true);
        await().atMost(Duration.ofSeconds(10)).until(() -> rounds.stream().filter(r -> r.contains("short")).count() >= 3);
        assertThat(shortLease.isLost()).as("renewed within its 2 s lease, not at the long lease's renewal").isFalse();
        assertThat(rounds).allSatisfy(r -> assertThat(r).doesNotContain("long"));

        assertThat(lost).isEmpty();
    }

    @Test
    void aRefusedRenewalIsReportedOnceAndNotRenewedAgain() {
        owned.add("mine");
        Watchdog<String>.Watch mine = watchdog.watch("mine", LEASE, System.nanoTime(), true);
        Watchdog<String>.Watch taken = watchdog.watch("taken", LEASE, System.nanoTime(), true);
        await().atMost(Duration.ofSeconds(10)).until(() -> !lost.isEmpty());
        assertThat(lost).containsExactly("taken: renewal refused: the token no longer owns the lease");
        assertThat(taken.isLost()).isTrue();
        assertThat(taken.remaining()).isZero();
        int roundsThen = rounds.size();
        await().atMost(Duration.ofSeconds(10)).until(() -> rounds.size() >= roundsThen + 2);
        assertThat(rounds.subList(roundsThen, rounds.size())).allSatisfy(round -> assertThat(round).containsExactly("mine"));
        assertThat(mine.isLost()).isFalse();
    }

    @Test
    void aLeaseNobodyCouldRenewIsLostWhenItsDeadlinePasses() {
        owned.add("x");
        unreachable = true;
        Watchdog<String>.Watch x = watchdog.watch("x", LEASE, System.nanoTime(), true);
        await().atMost(Duration.ofSeconds(10)).until(x::isLost);
        await().atMost(Duration.ofSeconds(5)).until(() -> lost.equals(List.of("x: lease deadline passed without a confirmed renewal")));
    }

    @Test
    void aDeadlinePassedWhileNobodyLookedIsReportedExactlyOnce() {
        // As if the process had been paused: the deadline is long gone when the job returns and stops watching.
        Watchdog<String>.Watch w = watchdog.watch("paused", LEASE, System.nanoTime() - 2 * LEASE.toNanos(), true);
        w.stop();
        await().atMost(Duration.ofSeconds(5)).until(() -> lost.size() == 1);
        assertThat(lost).containsExactly("paused: lease deadline passed without a confirmed renewal");
        assertThat(w.markLost("again")).isFalse();
        assertThat(watchdog.size()).isZero();
    }

    @Test
    void aRenewalNeverMovesTheDeadlineBack() {
        Watchdog<String>.Watch w = watchdog.watch("r", Duration.ofSeconds(60), System.nanoTime(), false);
        w.renewed(System.nanoTime() - Duration.ofSeconds(61).toNanos());
        assertThat(w.isLost()).isFalse();
        assertThat(w.remaining()).isGreaterThan(Duration.ofSeconds(59));
    }

    // ---------------------------------------------------------------- deadlines fire on time (issue: lease loss noticed late)

    @Test
    void aDeadlineFiresWhileARenewalRoundIsStillBlockedOnTheStore() throws Exception {
        java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch blocked = new java.util.concurrent.CountDownLatch(1);
        List<String> gone = new CopyOnWriteArrayList<>();
        Watchdog<String> stuck = new Watchdog<>("stuck-watchdog", leases -> {
            blocked.countDown();
            try {
                release.await(); // a round that hangs for the client's whole timeout, and longer
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return List.of(true);
        }, (watch, reason) -> gone.add(watch.lease()));
        try {
            Watchdog<String>.Watch w = stuck.watch("held", LEASE, System.nanoTime(), true);
            assertThat(blocked.await(10, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
            // The round is still on the wire; the holder must hear of its deadline anyway.
            await().atMost(Duration.ofSeconds(10)).until(() -> gone.contains("held"));
            assertThat(release.getCount()).isEqualTo(1);
            assertThat(w.isLost()).isTrue();
        } finally {
            release.countDown();
            stuck.close();
        }
    }

    @Test
    void theDeadlineLeavesADriftAllowanceOfOnePercentAndTwoMilliseconds() {
        long sent = System.nanoTime();
        Watchdog<String>.Watch w = watchdog.watch("x", Duration.ofSeconds(10), sent, false);
        assertThat(w.deadlineNanos() - sent).isEqualTo(Duration.ofMillis(10_000 - 100 - 2).toNanos());
        w.renewed(sent + 1_000);
        assertThat(w.deadlineNanos() - sent).isEqualTo(Duration.ofMillis(10_000 - 100 - 2).toNanos() + 1_000);
    }

    @Test
    void aRenewerThatThrowsAnErrorDoesNotKillTheWatchdog() {
        java.util.concurrent.atomic.AtomicInteger calls = new java.util.concurrent.atomic.AtomicInteger();
        List<String> renewed = new CopyOnWriteArrayList<>();
        Watchdog<String> fragile = new Watchdog<>("fragile-watchdog", leases -> {
            if (calls.incrementAndGet() == 1) {
                throw new StackOverflowError("renewer blew up");
            }
            return List.of(true);
        }, new Watchdog.Listener<>() {
            @Override
            public void lost(Watchdog<String>.Watch watch, String reason) {}

            @Override
            public void renewed(Watchdog<String>.Watch watch, long durationMs) {
                renewed.add(watch.lease());
            }
        });
        try {
            fragile.watch("kept", LEASE, System.nanoTime(), true);
            await().atMost(Duration.ofSeconds(10)).until(() -> renewed.size() >= 2);
            assertThat(calls.get()).isGreaterThanOrEqualTo(3);
        } finally {
            fragile.close();
        }
    }
}
