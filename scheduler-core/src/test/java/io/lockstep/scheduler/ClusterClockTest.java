package io.lockstep.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.lockstep.scheduler.lock.InMemoryLockProvider;
import java.time.Clock;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** The cluster clock: the store's time plus monotonic time, read by its own probe or from heartbeats. */
class ClusterClockTest {

    @Test
    void aHeartbeatsReadingMovesTheClockAndPutsOffItsOwnProbe() {
        // The host's wall clock is an hour off; only the store's readings count.
        ClusterClock clock = new ClusterClock(Clock.offset(Clock.systemUTC(), java.time.Duration.ofHours(1)));
        assertThat(clock.syncDue()).isTrue();
        long store = Instant.parse("2030-01-01T00:00:00Z").toEpochMilli();
        long received = System.nanoTime();
        clock.sample(store, received - 1_000_000, received); // a 1 ms round trip
        assertThat(clock.syncDue()).as("no probe of its own while heartbeats bring readings").isFalse();
        assertThat(clock.now()).isBetween(Instant.ofEpochMilli(store), Instant.ofEpochMilli(store).plusSeconds(5));

        // A reading with a much longer round trip than the anchor's is less precise: it is not taken.
        long later = System.nanoTime();
        clock.sample(store + 60_000, later - 50_000_000, later);
        assertThat(clock.now()).isBefore(Instant.ofEpochMilli(store + 60_000));
        // One about as quick is.
        long again = System.nanoTime();
        clock.sample(store + 60_000, again - 1_200_000, again);
        assertThat(clock.now()).isBetween(Instant.ofEpochMilli(store + 60_000), Instant.ofEpochMilli(store + 65_000));
    }

    @Test
    void anOldAnchorGivesWayToASlowerReadingOnceItMayHaveDriftedFurther() {
        ClusterClock clock = new ClusterClock(Clock.systemUTC());
        long store = Instant.parse("2030-01-01T00:00:00Z").toEpochMilli();
        long anchoredAt = System.nanoTime() - 20_000_000_000L; // an anchor read 20 s ago, with a 1 ms round trip
        clock.sample(store, anchoredAt - 1_000_000, anchoredAt);
        // 20 s later the store's clock may be 20 ms off the anchor's reckoning (1,000 ppm): a reading
        // with a 30 ms round trip (15 ms either way) is the better one, and is taken.
        long now = System.nanoTime();
        clock.sample(store + 20_000 + 500, now - 30_000_000, now);
        assertThat(clock.now()).isAfterOrEqualTo(Instant.ofEpochMilli(store + 20_500));
        // A fresh anchor is not given up for a reading with a round trip 30 times its own.
        long fresh = System.nanoTime();
        clock.sample(store + 21_000, fresh - 1_000_000, fresh);
        long next = System.nanoTime();
        clock.sample(store + 40_000, next - 30_000_000, next);
        assertThat(clock.now()).isBefore(Instant.ofEpochMilli(store + 30_000));
    }

    @Test
    void withoutHeartbeatReadingsTheProbeReadsTheStore() {
        InMemoryLockProvider store = InMemoryLockProvider.withClock(() -> Instant.parse("2030-01-01T00:00:00Z").toEpochMilli());
        ClusterClock clock = new ClusterClock(Clock.systemUTC());
        clock.sync(store);
        assertThat(clock.syncDue()).isFalse();
        assertThat(clock.now()).isBetween(Instant.parse("2030-01-01T00:00:00Z"), Instant.parse("2030-01-01T00:00:05Z"));
    }
}
