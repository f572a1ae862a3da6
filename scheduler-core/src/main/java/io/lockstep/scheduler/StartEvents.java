package io.lockstep.scheduler;

/**
 * The events and metrics of the ends of a run claimed ahead that never starts ({@link Starter}):
 * each is reported once, here; what becomes of the claim (handed back or not) is the Starter's.
 */
final class StartEvents {

    private final Events events;

    StartEvents(Events events) {
        this.events = events;
    }

    /** The store answered LATE: the slot's grace had passed by its clock (recorded missed there). */
    void late(SlotRun run) {
        missed(run, "late_start", "started too late: the slot's misfireGrace had passed by the lock store's clock "
                + "when its run was to start (the worker stalled after claiming it ahead)");
    }

    /** The store answered PAUSED: the job was paused since the claim (recorded skipped there). */
    void paused(SlotRun run) {
        events.metrics().skipped(run.definition.name(), "paused");
        events.info("slot_skipped").addKeyValue("job", run.definition.name()).addKeyValue("slot", run.scheduledTime().toString())
                .addKeyValue("lock_name", run.lockName).addKeyValue("reason", "paused")
                .log("slot skipped: the job was paused before its start");
    }

    /**
     * The store's parts split on the start with no majority (Redlock: say paused on one live master,
     * started on another): the store recorded it missed wherever the claim was ours, and nobody else
     * reports it; this is its one report ({@code no_quorum}, a miss this worker decided alone).
     */
    void split(SlotRun run) {
        missed(run, "no_quorum", "no majority of the redlock masters agreed on its start (say the job paused on one and not on"
                + " another, a master down): not started, and recorded missed where the claim was this worker's");
    }

    /** The slot's one {@code slot_missed}, decided at its start by the store ({@code code}, {@code reason}). */
    private void missed(SlotRun run, String code, String reason) {
        events.metrics().missed(run.definition.name(), code, 1);
        events.warn("slot_missed").addKeyValue("job", run.definition.name()).addKeyValue("slot", run.scheduledTime().toString())
                .addKeyValue("lock_name", run.lockName).addKeyValue("reason", reason).addKeyValue("code", code).log("slot missed");
    }

    /** The claim was no longer ours, or its short lease ran out before its start could be recorded. */
    void leaseLost(SlotRun run, String reason) {
        events.warn("lease_lost").addKeyValue("job", run.definition.name()).addKeyValue("slot", run.scheduledTime().toString())
                .addKeyValue("lock_name", run.lockName).addKeyValue("action", "expire")
                .addKeyValue("identifier", run.lease.token()).addKeyValue("success", false)
                .addKeyValue("reason", reason).log("lease lost before start; job not started, handed back to run on a peer");
        events.metrics().leaseLost(run.definition.name(), "before_start");
    }

    /** The worker stops before the slot's start: the claim goes back to the peers. */
    void handedOver(SlotRun run) {
        events.info("slot_handed_over").addKeyValue("job", run.definition.name())
                .addKeyValue("slot", run.scheduledTime().toString()).addKeyValue("lock_name", run.lockName)
                .addKeyValue("identifier", run.lease.token())
                .addKeyValue("reason", "the worker is stopping before the slot's start; a peer runs it")
                .log("slot claimed ahead handed back unstarted");
    }
}
