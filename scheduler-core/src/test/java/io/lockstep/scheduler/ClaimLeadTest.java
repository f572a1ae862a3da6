package io.lockstep.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.lockstep.scheduler.lock.ClaimRequest;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** {@link ClaimLead}: the claim lead follows how early an instant's last claim was decided. */
class ClaimLeadTest {

    private static final long T = 1_000_000_000_000L;

    @Test
    void theLeadStartsInsideTheWindowGrowsWhenAnInstantsLastClaimLandsLateAndShrinksBack() {
        ClaimLead lead = ClaimLead.forWindow(ClaimRequest.START_WINDOW);
        long base = ClaimRequest.START_WINDOW.minus(ClaimLead.LEAD_MARGIN).toMillis();
        assertThat(lead.current()).isEqualTo(Duration.ofMillis(base));
        // Instant T: answers in hand from 45 ms before the slot to 25 ms after it (too many claims for the window).
        lead.observe(T, 45);
        lead.observe(T, -25);
        assertThat(lead.current()).as("settled only when the next instant's answers come").isEqualTo(Duration.ofMillis(base));
        lead.observe(T + 1_000, 40);
        assertThat(lead.current()).as("grown by the shortfall: 10 ms to spare wanted, -25 had")
                .isEqualTo(Duration.ofMillis(base + ClaimLead.MARGIN_MILLIS + 25));
        lead.observe(T - 1_000, 0); // a straggler of an earlier instant changes nothing
        // Instant T+1s: the last answer had 40 ms to spare: back toward the window by half the excess over 30 ms.
        lead.observe(T + 2_000, 200);
        assertThat(lead.current()).isEqualTo(Duration.ofMillis(base + 35 - 5));
        for (int i = 3; i < 20; i++) {
            lead.observe(T + i * 1_000L, 200); // plenty to spare each time
        }
        assertThat(lead.current()).as("never below the window's").isEqualTo(Duration.ofMillis(base));
        for (int i = 20; i < 40; i++) {
            lead.observe(T + i * 1_000L, -500); // in hand half a second late each time
        }
        assertThat(lead.current()).as("never beyond what a store may decide ahead").isEqualTo(Preference.AHEAD);
    }

    @Test
    void aStoreThatStagesEveryClaimAheadHasAFixedLeadOfTheWholeAhead() {
        ClaimLead lead = ClaimLead.forWindow(Duration.ZERO);
        assertThat(lead.current()).isEqualTo(Preference.AHEAD);
        lead.observe(T, -100);
        lead.observe(T + 1_000, -100);
        assertThat(lead.current()).isEqualTo(Preference.AHEAD);
    }
}
