package io.lockstep.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** {@link FanOut}: every run once, on the pool or handed back, whatever the pool does. */
class FanOutTest {

    private static final List<Integer> RUNS = IntStream.range(0, 333).boxed().toList();

    @Test
    void everyRunRunsOnceOnThePoolsThreadsNotTheCallers() throws InterruptedException {
        ExecutorService pool = Executors.newFixedThreadPool(64);
        Set<Integer> ran = ConcurrentHashMap.newKeySet();
        AtomicInteger times = new AtomicInteger();
        Set<String> threads = ConcurrentHashMap.newKeySet();
        Thread caller = Thread.currentThread();
        FanOut.start(RUNS, pool, r -> {
            ran.add(r);
            times.incrementAndGet();
            threads.add(Thread.currentThread().getName());
            assertThat(Thread.currentThread()).isNotSameAs(caller);
        }, r -> { throw new AssertionError("refused " + r); });
        await().atMost(Duration.ofSeconds(10)).until(() -> times.get() >= RUNS.size());
        pool.shutdown(); // only now: a pool shut down before every task is handed refuses the rest
        assertThat(pool.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        assertThat(ran).containsExactlyInAnyOrderElementsOf(RUNS);
        assertThat(times).hasValue(RUNS.size());
        assertThat(threads.size()).as("spread over the pool").isGreaterThan(1);
    }

    @Test
    void aPoolThatRefusesPartWayHandsEveryRunItNeverRanBackOnce() throws InterruptedException {
        ExecutorService pool = Executors.newFixedThreadPool(8);
        AtomicInteger accepted = new AtomicInteger();
        java.util.concurrent.Executor refusingAfter50 = task -> {
            if (accepted.incrementAndGet() > 50) {
                throw new RejectedExecutionException("shut down");
            }
            pool.execute(task);
        };
        Set<Integer> ran = ConcurrentHashMap.newKeySet();
        Set<Integer> refused = ConcurrentHashMap.newKeySet();
        AtomicInteger times = new AtomicInteger();
        FanOut.start(RUNS, refusingAfter50, r -> {
            ran.add(r);
            times.incrementAndGet();
        }, r -> {
            refused.add(r);
            times.incrementAndGet();
        });
        await().atMost(Duration.ofSeconds(10)).until(() -> times.get() >= RUNS.size());
        pool.shutdown();
        assertThat(pool.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        assertThat(ran).hasSize(50);
        assertThat(refused).hasSize(RUNS.size() - 50).doesNotContainAnyElementsOf(ran);
        assertThat(times).as("each once").hasValue(RUNS.size());
    }

    @Test
    void aPoolThatRefusesAtOnceHandsEveryRunBackOnTheCallersThread() {
        Set<Integer> refused = ConcurrentHashMap.newKeySet();
        FanOut.start(RUNS, task -> { throw new RejectedExecutionException("shut down"); },
                r -> { throw new AssertionError("ran " + r); }, refused::add);
        assertThat(refused).containsExactlyInAnyOrderElementsOf(RUNS);
    }

    @Test
    void runsDroppedFromAPoolShutDownNowAreHandedBackOnceEach() throws InterruptedException {
        ExecutorService pool = Executors.newSingleThreadExecutor();
        java.util.concurrent.CountDownLatch blocker = new java.util.concurrent.CountDownLatch(1);
        pool.execute(() -> {
            try {
                blocker.await(); // the only thread is busy: every fan-out task waits in the queue
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        Set<Integer> ran = ConcurrentHashMap.newKeySet();
        Set<Integer> refused = ConcurrentHashMap.newKeySet();
        FanOut.start(RUNS, pool, ran::add, refused::add);
        for (Runnable never : pool.shutdownNow()) {
            if (never instanceof FanOut<?> f) {
                f.dropped();
            }
        }
        assertThat(pool.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
        assertThat(ran).isEmpty();
        assertThat(refused).containsExactlyInAnyOrderElementsOf(RUNS);
    }
}
