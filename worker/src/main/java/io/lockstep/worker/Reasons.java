package io.lockstep.worker;

import java.util.Map;

/** Why a slot was decided without a run (a history entry's {@code reason}), in words for the commands. */
final class Reasons {

    private static final Map<String, String> WORDS = Map.of(
            "overlap", "its job's previous run still held the lease (overlap: skip)",
            "paused", "its job was paused",
            "late", "past misfireGrace by Redis time",
            "reported", "its worker reported it missed (its slot_missed event says why)",
            "order", "a later slot of the job had already started",
            "disowned", "its claim's reply never came and its worker gave up on it",
            "not_started", "claimed, but its worker never started it",
            "no_quorum", "the redlock masters split on its start (no majority agreed); its worker reported it missed",
            "lease_lost", "its run lost its lease without an outcome (its worker died or stalled)");

    private Reasons() {}

    /** The words for {@code reason}; the reason itself when it has none; empty for none. */
    static String describe(String reason) {
        if (reason == null || reason.isEmpty()) {
            return "";
        }
        return WORDS.getOrDefault(reason, reason);
    }
}
