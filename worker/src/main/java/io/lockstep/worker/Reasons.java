package io.lockstep.worker;

import java.util.Map;

/** Why a slot was decided without a run (a history entry's {@code reason}), in words for the commands. */
final class Reasons {

    private static final Map<String, String> WORDS = Map.ofEntries(
            Map.entry("overlap", "its job's previous run still held the lease (overlap: skip)"),
            Map.entry("paused", "its job was paused"),
            Map.entry("calendar", "its job's calendars exclude it (skipOn / onlyOn)"),
            Map.entry("late", "past misfireGrace by Redis time"),
            Map.entry("reported", "its worker reported it missed (its slot_missed event says why)"),
            Map.entry("order", "a later slot of the job had already started"),
            Map.entry("disowned", "its claim's reply never came and its worker gave up on it"),
            Map.entry("not_started", "claimed, but its worker never started it"),
            Map.entry("no_quorum", "the redlock masters split on its start (no majority agreed); its worker reported it missed"),
            Map.entry("lease_lost", "its run lost its lease without an outcome (its worker died or stalled)"),
            Map.entry("handed_over", "its worker handed the run over at its stop (recover: rerun)"),
            // The codes of the workers' slot_missed events, kept as the reason of the slot's decision:
            Map.entry("outage", "its worker could not reach Redis within misfireGrace and reported it missed"),
            Map.entry("no_thread", "its worker had no free job thread within misfireGrace and reported it missed"),
            Map.entry("fell_behind", "its worker fell behind its schedule (a stall, a starved CPU) and reported it missed"),
            Map.entry("catch_up", "it could not be caught up (no free job thread, or the job's lease was held) and was reported missed"),
            Map.entry("no_worker", "no worker with the job's runOn labels decided it within misfireGrace; a worker without them reported it"),
            Map.entry("cluster_down", "no worker ran at its time, and more slots passed than catchUp takes"),
            Map.entry("unconfirmed", "its claim was not acknowledged by the replicas in time (redis.waitReplicas) and was reported missed"));

    private Reasons() {}

    /** The words for {@code reason}; the reason itself when it has none; empty for none. */
    static String describe(String reason) {
        if (reason == null || reason.isEmpty()) {
            return "";
        }
        return WORDS.getOrDefault(reason, reason);
    }
}
