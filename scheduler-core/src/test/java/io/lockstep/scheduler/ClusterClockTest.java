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
    void withoutHeartbeatReadingsTheProbeReadsTheStore() {
        InMemoryLockProvider store = InMemoryLockProvider.withClock(() -> Instant.parse("2030-01-01T00:00:00Z").toEpochMilli());
        ClusterClock clock = new ClusterClock(Clock.systemUTC());
        clock.sync(store);
        assertThat(clock.syncDue()).isFalse();
        assertThat(clock.now()).isBetween(Instant.parse("2030-01-01T00:00:00Z"), Instant.parse("2030-01-01T00:00:05Z"));
    }
}
