package io.lockstep.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Redlock's fan-out is bounded per node (m15 of the 2026-12-01 review: it was an unbounded cached
 * pool, so a stalled master piled up a thread per call, and each call landed late when it came
 * back). The fan-out itself is generic; its nodes here are names, one of which stalls.
 */
class QuorumTest {

    @Test
    void aStalledNodeHoldsAtMostTheBoundOfCallsAndTheRestAreNotSentToIt() throws InterruptedException {
        int bound = 4;
        Quorum<String> quorum = new Quorum<>(List.of("a", "b", "c"), List.of("a", "b", "c"), bound);
        CountDownLatch stalled = new CountDownLatch(1);
        AtomicInteger sentToB = new AtomicInteger();
        java.util.function.Function<String, String> call = node -> {
            if (node.equals("b")) {
                sentToB.incrementAndGet();
                try {
                    stalled.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return "ok";
        };
        for (int i = 0; i < bound; i++) {
            List<Quorum.Vote<String>> votes = quorum.ask(call, Duration.ofMillis(20));
            assertThat(Quorum.counting(votes)).as("a and c decide").isEqualTo(2);
            assertThat(votes.get(1).failure()).startsWith("no answer within");
        }
        List<Quorum.Vote<String>> full = quorum.ask(call, Duration.ofMillis(20));
        assertThat(full.get(1).kind()).isEqualTo(Quorum.Kind.FAILED);
        assertThat(full.get(1).failure()).startsWith("busy: 4 calls in flight");
        assertThat(Quorum.counting(full)).as("the others still decide").isEqualTo(2);
        assertThat(sentToB).as("calls sent to the stalled node").hasValue(bound);

        stalled.countDown(); // it answers again: its calls return, and the next ones are sent
        await().atMost(Duration.ofSeconds(5)).until(() -> Quorum.counting(quorum.ask(call, Duration.ofMillis(200))) == 3);
        assertThat(sentToB.get()).isGreaterThan(bound);
    }
}
