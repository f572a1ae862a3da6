package io.lockstep.scheduler.lock;

import java.util.List;

/**
 * The lock store beneath the scheduler: claims slots, renews and completes their leases, and tells
 * its own time. Implementations must be thread-safe; the scheduler calls them from its tick thread
 * (claims), its watchdog (renewals) and its job threads (completion).
 *
 * <p>Every operation is all-or-nothing from the caller's view: an implementation that cannot tell
 * what happened throws {@link LockException}, and the scheduler then treats the slots as not claimed
 * and the leases as not renewed (fail closed). Claims must be idempotent per token: repeating a
 * request whose reply was lost answers {@link ClaimResult.Status#CLAIMED} again with the same
 * fencing token.
 */
public interface LockProvider extends AutoCloseable {

    /**
     * Claims a batch of slots, deciding each by the store's clock: too early, claimed, already
     * taken, skipped because the job's exclusive lease is held, or recorded as missed.
     *
     * @return one result per request, in order
     * @throws LockException when the store could not be reached or answered ambiguously
     */
    List<ClaimResult> claim(List<ClaimRequest> requests);

    /**
     * For each job, the slots whose runs lost their lease without an outcome (by the store's clock:
     * neither renewed nor completed within their ttl), and when the next of the others would.
     * Deciding what to do with an expired run takes a {@link ClaimRequest.Mode#RECOVER} or
     * {@link ClaimRequest.Mode#ABANDON} claim.
     *
     * @return one entry per job, in order
     * @throws LockException when the store could not be reached
     */
    List<RunsInFlight> runsInFlight(List<String> jobs);

    /**
     * What the records of these slots say: nobody decided it, it is claimed ahead and not started,
     * a run holds it (with the lease end of each), or it is decided. One round trip; on Redlock a
     * kind counts when a majority of the masters agree, else the slot reads as undecided (a claim
     * then decides it).
     *
     * @return one state per slot, in order
     * @throws LockException when the store could not be reached
     */
    List<SlotState> slotStates(List<SlotState.Ref> slots);

    /**
     * The latest slot of each job that the cluster decided (claimed, skipped or recorded as missed),
     * kept for {@link ClaimRequest#LAST_SLOT_TTL}; a job the store knows nothing of is absent.
     *
     * @throws LockException when the store could not be reached
     */
    java.util.Map<String, java.time.Instant> lastSlots(List<String> jobs);

    /**
     * Stamps the jobs of this worker's config as enabled ({@code enabled}) and disabled
     * ({@code disabled}) now, by the store's clock; {@code fresh}: the first stamp of this worker's
     * life, which starts a new run of disabled stamps (the whole cluster may have been down just
     * before it, and that time is owed) ({@link InForce} says who calls it and when, and
     * what the store keeps). Jobs stamped by nobody for {@link InForce#KEEP} are forgotten, with
     * their marks once they decided nothing for as long. Best effort for the caller: a stamp that
     * did not land is sent again with the next heartbeat. A store without memberships keeps none.
     *
     * @throws LockException when the store could not be reached
     */
    default void stampInForce(java.util.Collection<String> enabled, java.util.Collection<String> disabled, boolean fresh) {}

    /**
     * The periods each of {@code jobs} was out of force, as {@link #stampInForce} kept them; a job
     * with none kept is absent, and is caught up as before.
     *
     * @throws LockException when the store could not be reached
     */
    default java.util.Map<String, InForce> inForce(List<String> jobs) {
        return java.util.Map.of();
    }

    /**
     * Starts runs claimed ahead ({@link StartRequest}): each staged claim the token still holds is
     * recorded as started and its lease extended to its full ttl, unless the slot's grace passed
     * ({@link StartAnswer#LATE}, recorded as missed) or the job was paused ({@link StartAnswer#PAUSED},
     * recorded as skipped), each by the store's clock. Retry-safe: a start repeated after its reply
     * was lost gets the same answer.
     *
     * @return one reply per request, in order, each with the store's clock as late as it could read
     *     it before the reply left (a started run begins {@link StartReply#startDelayNanos} after it arrives)
     * @throws LockException when the store could not be reached or answered ambiguously
     */
    List<StartReply> start(List<StartRequest> requests);

    /**
     * How close to its slot (by this store's clock) a claim made ahead must be decided to be the
     * run's start ({@link ClaimResult#started}): the scheduler sends its claims inside it, so that
     * a slot costs the claim and the outcome, no start. {@link java.time.Duration#ZERO} (the
     * default): this store stages every claim made ahead, and the scheduler claims
     * {@link io.lockstep.scheduler.JobDefinition#CLAIM_AHEAD} ahead and starts them.
     */
    default java.time.Duration startWindow() {
        return java.time.Duration.ZERO;
    }

    /**
     * Extends every lease in the batch by its ttl, each only if its token still owns it.
     *
     * @return per lease, in order, whether it was still owned and is now extended
     * @throws LockException when the store could not be reached
     */
    List<Boolean> renew(List<Lease> leases);

    /**
     * Turns each slot record into a done marker carrying the outcome and removes the lease, both
     * only if the token still owns them. A run that was revoked, recovered by another worker or
     * abandoned no longer owns its slot: its outcome never overwrites a newer one. A hand-over
     * ({@link Completion#handOver()}, or an {@link Outcome#NOT_STARTED} run) leaves the slot to a
     * peer instead: the outcome goes to the history and the run counts as dead at once, so that the
     * next look at the job's runs reruns it ({@link ClaimRequest.Mode#RECOVER}; a run that never
     * started is run whatever the recover policy, within its grace).
     *
     * @return per completion, in order, whether the token still owned the slot
     * @throws LockException when the store could not be reached
     */
    List<Boolean> complete(List<Completion> completions);

    /**
     * Appends to the history of each slot the outcome of a run that ended after it no longer owned
     * its slot ({@link #complete} answered false: its lease ran out and a peer recovered or abandoned
     * it, or a newer run replaced it), marked late ({@code reason: late}), so that the record never
     * claims a run was lost when its worker later reports it finished. It changes no decision.
     * Retry-safe: a repeat adds nothing.
     *
     * @param workerId the worker whose runs these were
     * @return per completion, whether its outcome is now in the history (false: the store keeps no
     *     history, or the slot's record is gone)
     * @throws LockException when the store could not be reached
     */
    default List<Boolean> recordLate(String workerId, List<Completion> completions) {
        return completions.stream().map(c -> false).toList();
    }

    /** {@link #complete(List)} of one run. */
    default boolean complete(Lease lease, Outcome outcome) {
        return complete(List.of(new Completion(lease, outcome))).get(0);
    }

    /**
     * The store's clock in epoch milliseconds, read with one round trip; the scheduler uses it to
     * estimate how far the local clock is off.
     *
     * @throws LockException when the store could not be reached
     */
    long serverTimeMillis();

    /**
     * Saves a run's checkpoint in its slot's record, if {@code lease}'s token still holds the slot
     * as a running run (fenced: a run that lost its slot writes nothing). Stores that keep no
     * checkpoints refuse.
     *
     * @return whether it was saved
     * @throws LockException when the store cannot be reached
     * @throws UnsupportedOperationException when the store keeps no checkpoints
     */
    default boolean checkpoint(Lease lease, Checkpoint checkpoint) {
        throw new UnsupportedOperationException(describe() + " keeps no checkpoints");
    }

    /**
     * The last checkpoint saved in a slot's record, by this run or an earlier run of the slot.
     *
     * @throws LockException when the store cannot be reached
     * @throws UnsupportedOperationException when the store keeps no checkpoints
     */
    default java.util.Optional<Checkpoint> lastCheckpoint(String job, java.time.Instant slot) {
        throw new UnsupportedOperationException(describe() + " keeps no checkpoints");
    }

    /** The name of the lock a lease is held under, as the {@code lock_name} event field shows it. */
    default String lockName(Lease lease) {
        return lease.job() + ":" + lease.slot().toEpochMilli();
    }

    /** A short description for logs, without credentials, for example {@code redis 10.0.0.5:6379}. */
    String describe();

    /**
     * Records {@code self} as alive until {@code ttl} passes without another heartbeat, forgets the
     * workers whose ttl passed, and answers every live worker (this one included) with when the
     * store last heard from it, and the manual runs requested lately. One small write per call. A
     * store without membership answers only {@code self} and no trigger.
     *
     * @throws LockException when the store could not be reached
     */
    default Heartbeat heartbeat(WorkerInfo self, java.time.Duration ttl) {
        return new Heartbeat(List.of(self), List.of());
    }

    /**
     * Publishes the job definitions that {@code configHash} stands for (job name to its canonical
     * description), so that peers can tell which jobs differ; kept as long as a worker with that
     * hash heartbeats. Written once per worker start.
     *
     * @throws LockException when the store could not be reached
     */
    default void publishConfig(String configHash, java.util.Map<String, String> jobs) {}

    /**
     * The job definitions published under {@code configHash}; empty when none are (any more).
     *
     * @throws LockException when the store could not be reached
     */
    default java.util.Map<String, String> config(String configHash) {
        return java.util.Map.of();
    }

    /** Removes this worker from the live workers at once (a clean stop); best effort. */
    default void leave(String workerId) {}

    /**
     * Asks the live worker {@code workerId} to drain ({@code lockstep drain}): its next heartbeat
     * answers {@link Heartbeat#drainWithin}, once. Stores that keep no heartbeats refuse.
     *
     * @throws LockException when the store cannot be reached
     * @throws UnsupportedOperationException when the store keeps no heartbeats
     */
    default void requestDrain(String workerId, java.time.Duration within) {
        throw new UnsupportedOperationException(describe() + " keeps no heartbeats to carry a drain request");
    }

    /** Releases connections this provider created; a no-op for ones handed in by the caller. */
    @Override
    default void close() {}

    /**
     * What the store knows of these slots of {@code job} for a backfill ({@link Backfill.View}):
     * which were decided, from which slot on it can tell, and the job's backfill and its cursor.
     *
     * @param backfill the backfill asking (its slots decided when it was asked for count as decided),
     *     or null before one is asked for
     * @param recordTtl the job's slot record ttl ({@link ClaimRequest#recordTtl(java.time.Duration, java.time.Duration)})
     * @throws UnsupportedOperationException when the store keeps no backfills
     */
    default Backfill.View backfillView(String job, String backfill, List<java.time.Instant> slots, java.time.Duration recordTtl) {
        throw new UnsupportedOperationException(describe() + " keeps no backfills");
    }

    /**
     * Stores a new backfill ({@code io.lockstep.scheduler.BackfillPlan#request} checks it and calls
     * this): the job's backfill mark, which from now on leaves every undecided slot of the range to
     * it, the slots of the range already decided, and the request every worker hears of.
     *
     * @param decided the range's slots decided when it was planned
     * @throws IllegalStateException when the job has a backfill that has neither ended nor been cancelled
     * @throws UnsupportedOperationException when the store keeps no backfills
     */
    default Backfill requestBackfill(String job, java.time.Instant from, java.time.Instant to, double perSecond, String by,
            java.util.Collection<java.time.Instant> decided) {
        throw new UnsupportedOperationException(describe() + " keeps no backfills");
    }

    /** Cancels {@code job}'s backfill: no slot is claimed for it once this returns. Empty when it has none. */
    default java.util.Optional<Backfill> cancelBackfill(String job) {
        throw new UnsupportedOperationException(describe() + " keeps no backfills");
    }

    /** Every backfill the store keeps, with its progress. */
    default List<Backfill.Entry> backfills() {
        return List.of();
    }

    /**
     * Keeps a backfill's progress for {@code status} and the CLI. A progress whose state is not
     * {@code running} also ends the backfill: the store claims no more slots for it.
     */
    default void backfillProgress(Backfill backfill, Backfill.Progress progress) {
        throw new UnsupportedOperationException(describe() + " keeps no backfills");
    }

    /**
     * Where the jobs' expectations are judged ({@code expect:}), or empty when this store cannot
     * judge them (a worker then refuses a config that has any).
     */
    default java.util.Optional<Expectations> expectations() {
        return java.util.Optional.empty();
    }

    /**
     * The cluster-wide concurrency limits ({@code limits:}), or empty when this store keeps none (a
     * worker then refuses a config whose jobs use one).
     */
    default java.util.Optional<Permits> permits() {
        return java.util.Optional.empty();
    }
}
