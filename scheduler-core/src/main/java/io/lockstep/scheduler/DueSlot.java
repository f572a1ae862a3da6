package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.ClaimRequest;
import io.lockstep.scheduler.lock.ClaimResult;
import java.time.Duration;
import java.time.Instant;
import java.util.EnumSet;
import java.util.Set;

/**
 * One slot on its way to a decision, and where it stands on that way ({@link Stage}). Its
 * {@link Kind} (what it is: a scheduled claim, a manual run, a catch-up, a recovery) never changes;
 * its stage changes only through the transitions below, each of which checks the stage it comes
 * from: a move the table does not allow is a bug, and throws {@link IllegalStateException} naming
 * the slot and both stages. Its token stays the same across retries (a Redlock split excepted), so a
 * repeated request whose reply was lost gets the same answer ({@link SlotAsks}).
 *
 * <p>The tick thread decides (the {@link Preference}, the {@link Claimer}) by moving the slot on;
 * the {@link SlotQueue} then files it by its stage, once ({@link SlotQueue#place}): queued by its
 * retry time, set aside until a job thread frees, or forgotten.
 *
 * <pre>
 * from                           transition        to                    called by
 * (birth)                        scheduled         UNSHARED              Scheduler.start, Ticker
 * (birth)                        manual            QUEUED                Scheduler (a trigger)
 * (birth)                        backfill          QUEUED                BackfillDrive
 * (birth)                        claim, catchUp,   QUEUED                CatchUpPlan, Recovery
 *                                recovery
 * (birth)                        missed            MISS_ONLY             CatchUpPlan, Ticker (fell behind)
 * (birth)                        excluded          MISS_ONLY (a skip)    Ticker (fell behind), CatchUpPlan (calendars)
 * UNSHARED, MISS_ONLY (no_worker) exclude          MISS_ONLY (a skip)    Ticker (its calendars, asked as it first comes due)
 * (birth)                        unrunnable        MISS_ONLY (no_worker) Ticker, FirstSlots, Reload (a job this worker lacks the labels of)
 * QUEUED (a catch-up)            then              CHAINED               CatchUpPlan
 * CHAINED                        unchain           QUEUED                SlotQueue (the one before decided)
 * UNSHARED                       ours              QUEUED (claim ahead)  Preference
 * UNSHARED                       stepAside         STEPPED_ASIDE         Preference
 * STEPPED_ASIDE                  takeOver          QUEUED                Preference (no record)
 * QUEUED, WAITING_THREAD
 *                                awaitThread       WAITING_THREAD        Claimer (no free thread)
 *                                missOnly          MISS_ONLY             Claimer (past its start deadline)
 *                                toStore           CLAIMING              Claimer
 * MISS_ONLY, REPORTED            toStore           (stays)               Claimer
 * CLAIMING                       won               STAGED or RUNNING     Claimer (claimed ahead, or not)
 * CLAIMING                       retryAt           QUEUED                Claimer (busy, early, no quorum, unanswered)
 * MISS_ONLY, REPORTED            retryAt           (stays)               Claimer
 * CLAIMING, MISS_ONLY            reported          REPORTED              Claimer (unanswered, no quorum)
 * CLAIMING, MISS_ONLY, REPORTED,
 * STEPPED_ASIDE                  decided           DECIDED               Claimer, Preference (a record)
 * UNSHARED, STEPPED_ASIDE, QUEUED,
 * WAITING_THREAD, MISS_ONLY, REPORTED  retired     DECIDED               Ticker (a later slot of a version a reload retired)
 * </pre>
 * STAGED, RUNNING and DECIDED are final: the slot has left the queue's hands.
 *
 * <p>Owned by the tick thread while it decides; guarded by the {@link SlotQueue}'s lock while filed there.
 */
final class DueSlot implements Comparable<DueSlot> {

    /** Where a slot stands on its way to a decision (see the table above). */
    enum Stage {
        /** A scheduled slot not shared out yet: due its worker's claim lead ({@link ClaimLead}) ahead of its time. */
        UNSHARED,
        /** A peer's slot: due {@link Preference#BACKOFF} after its time, when its record is read. */
        STEPPED_ASIDE,
        /** A catch-up slot ({@code catchUp: all}) queued once the one before it is decided. */
        CHAINED,
        /** Queued for its fire time or its retry time, then claimed (or, once due, on its way to the claimer). */
        QUEUED,
        /** Due, but no job thread was free (or an older slot of the job waits): claimed when one frees. */
        WAITING_THREAD,
        /** In a batch on its way to the store, to start. */
        CLAIMING,
        /** Can no longer start: asks the store only to record the miss; the answer reports it. */
        MISS_ONLY,
        /** Reported missed by this worker (the store did not answer in time): the answer only settles the record. */
        REPORTED,
        /** Won ahead of its time: handed to the {@link Starter}. */
        STAGED,
        /** Won: handed to the {@link Runner}. */
        RUNNING,
        /** Decided otherwise (taken, skipped, missed, ...) or given up on: forgotten. */
        DECIDED
    }

    /** What a slot is; fixed at its birth. */
    enum Kind {
        /** A slot of the job's schedule. */
        CLAIM(ClaimRequest.Mode.CLAIM),
        /** A manual run ({@code trigger}): outside the job's order of slots, with {@link #MANUAL_GRACE}. */
        MANUAL(ClaimRequest.Mode.CLAIM),
        /** Planned by the catch-up at start ({@code catchUp: latest | all}): newer slots of the job wait for it. */
        CATCH_UP(ClaimRequest.Mode.CATCH_UP),
        /** A run whose lease ran out without an outcome, to rerun ({@code recover: rerun}). */
        RECOVER(ClaimRequest.Mode.RECOVER),
        /** A run whose lease ran out without an outcome, to abandon ({@code recover: none}). */
        ABANDON(ClaimRequest.Mode.ABANDON),
        /**
         * A slot of a {@link io.lockstep.scheduler.lock.Backfill}: claimed as a catch-up with no
         * deadline (busy while the job's lease is held or the job is paused), outside the job's
         * order of slots; its driver waits for it ({@link #settled}).
         */
        BACKFILL(ClaimRequest.Mode.CATCH_UP);

        /** What is asked of the store while the slot may still start. */
        final ClaimRequest.Mode mode;

        Kind(ClaimRequest.Mode mode) {
            this.mode = mode;
        }
    }

    /** How late a manual run may still start: {@link JobDefinition#MANUAL_GRACE}, or the job's own grace if longer. */
    static final Duration MANUAL_GRACE = JobDefinition.MANUAL_GRACE;

    // Where each transition may come from (the table above).
    private static final Set<Stage> FROM_QUEUED = EnumSet.of(Stage.QUEUED), FROM_CHAINED = EnumSet.of(Stage.CHAINED),
            FROM_UNSHARED = EnumSet.of(Stage.UNSHARED), FROM_STEPPED_ASIDE = EnumSet.of(Stage.STEPPED_ASIDE),
            FROM_CLAIMING = EnumSet.of(Stage.CLAIMING), FROM_EXCLUDABLE = EnumSet.of(Stage.UNSHARED, Stage.MISS_ONLY);
    /** May still start: claimed, or set aside for a thread, or turned into a miss to record. */
    private static final Set<Stage> TO_CLAIM = EnumSet.of(Stage.QUEUED, Stage.WAITING_THREAD);
    /** Can no longer start: only the miss is asked for. */
    private static final Set<Stage> MISSING = EnumSet.of(Stage.MISS_ONLY, Stage.REPORTED);
    private static final Set<Stage> SENDABLE = EnumSet.of(Stage.QUEUED, Stage.WAITING_THREAD, Stage.MISS_ONLY, Stage.REPORTED);
    private static final Set<Stage> REPORTABLE = EnumSet.of(Stage.CLAIMING, Stage.MISS_ONLY);
    /** Sent to the store: its answer (or its silence) moves the slot on. */
    private static final Set<Stage> ASKED = EnumSet.of(Stage.CLAIMING, Stage.MISS_ONLY, Stage.REPORTED);
    private static final Set<Stage> DECIDABLE = EnumSet.of(Stage.CLAIMING, Stage.MISS_ONLY, Stage.REPORTED, Stage.STEPPED_ASIDE);
    private static final Set<Stage> FILED = EnumSet.of(Stage.UNSHARED, Stage.STEPPED_ASIDE, Stage.QUEUED, Stage.WAITING_THREAD,
            Stage.MISS_ONLY, Stage.REPORTED);

    final ScheduledJob job;
    final Instant slot;
    private final Kind kind;
    /** A manual run ({@code trigger}): {@link Kind#MANUAL}. */
    final boolean manual;
    /** A backfill's slot ({@link Kind#BACKFILL}): the backfill's id; null otherwise. */
    final String backfill;
    /**
     * A backfill's slot: completed with the status of the store's last answer ({@link ClaimResult.Status#CLAIMED}
     * when it won; {@link ClaimResult.Status#UNANSWERED} when given up unanswered) as the slot leaves the
     * queue's hands; null for any other slot.
     */
    final java.util.concurrent.CompletableFuture<ClaimResult.Status> settled;
    /** The status of the store's latest answer about it (only a backfill's slot keeps it). */
    private volatile ClaimResult.Status answer = ClaimResult.Status.UNANSWERED;
    /** A catch-up: until when it may still start (then only recorded missed); a recovery: until when a split is asked again. */
    private Instant deadline;
    private Stage stage;
    /** When it is due (in the queue): its fire time, its retry time, or when it is shared out. */
    private Instant retryAt;
    /** How long before its slot the store may decide it: {@link Preference#AHEAD} once shared out to us. */
    private Duration ahead = Duration.ZERO;
    /** Its token, and what its requests so far tell: the same on every request for it, whatever its stage. */
    final SlotAsks asks = new SlotAsks();
    /** Why the slot is reported missed, and the same as a short code for {@code lockstep.slots.missed}. */
    private String missReason, missCode;
    /** {@link Stage#STEPPED_ASIDE}: the worker it was given to. */
    private String preferred;
    /** Excluded by the job's calendars: recorded skipped (reason {@link #CALENDAR}) instead of missed. */
    private boolean skip;
    /** An excluded slot born as the job's next: leads its schedule once, as an unshared slot would. */
    private boolean leadsOnce;
    /** A slot of a job this worker may not run ({@link RunOn}): only its miss is recorded, once its grace passed, unless decided. */
    private boolean watch;
    /** Its calendars were asked when it came due ({@link #calendarsPending}). */
    private boolean calendarsAsked;
    /** The catch-up slot to claim once this one is decided ({@code catchUp: all}, oldest first). */
    private DueSlot next;

    private DueSlot(ScheduledJob job, Instant slot, Kind kind, Stage stage, Instant retryAt, Instant deadline) {
        this(job, slot, kind, stage, retryAt, deadline, null);
    }

    private DueSlot(ScheduledJob job, Instant slot, Kind kind, Stage stage, Instant retryAt, Instant deadline, String backfill) {
        this.job = job;
        this.slot = slot;
        this.kind = kind;
        this.manual = kind == Kind.MANUAL;
        this.backfill = backfill;
        this.settled = backfill == null ? null : new java.util.concurrent.CompletableFuture<>();
        this.stage = stage;
        this.retryAt = retryAt;
        this.deadline = deadline;
    }

    /** A job's next scheduled slot: due {@code lead} ahead of its time ({@link ClaimLead}), when it is shared out. */
    static DueSlot scheduled(ScheduledJob job, Instant slot, Duration lead) {
        return new DueSlot(job, slot, Kind.CLAIM, Stage.UNSHARED, slot.minus(lead), Instant.MAX);
    }

    /** {@link #scheduled(ScheduledJob, Instant, Duration)} {@link Preference#AHEAD} ahead (a store that stages every claim ahead). */
    static DueSlot scheduled(ScheduledJob job, Instant slot) {
        return scheduled(job, slot, Preference.AHEAD);
    }

    /** A slot of the job's schedule claimed by every worker at its time (not shared out). */
    static DueSlot claim(ScheduledJob job, Instant slot) {
        return new DueSlot(job, slot, Kind.CLAIM, Stage.QUEUED, slot, Instant.MAX);
    }

    /** A manual run of {@code job} requested at {@code slot}. */
    static DueSlot manual(ScheduledJob job, Instant slot) {
        return new DueSlot(job, slot, Kind.MANUAL, Stage.QUEUED, slot, Instant.MAX);
    }

    /**
     * A slot of backfill {@code id}, due now ({@code now}); {@link #recordDeadline()} counts from
     * now, not from the slot: its record lives that long from its claim.
     */
    static DueSlot backfill(ScheduledJob job, Instant slot, String id, Instant now) {
        return new DueSlot(job, slot, Kind.BACKFILL, Stage.QUEUED, now, now, id);
    }

    /** A slot the cluster missed while down, to run until {@code deadline}; due at {@code at}. */
    static DueSlot catchUp(ScheduledJob job, Instant slot, Instant deadline, Instant at) {
        return new DueSlot(job, slot, Kind.CATCH_UP, Stage.QUEUED, at, deadline);
    }

    /** A slot of the job's schedule that can no longer start, due at {@code at} to be recorded as missed. */
    static DueSlot missed(ScheduledJob job, Instant slot, String reason, String code, Instant at) {
        DueSlot d = new DueSlot(job, slot, Kind.CLAIM, Stage.MISS_ONLY, at, Instant.MAX);
        d.missReason = reason;
        d.missCode = code;
        return d;
    }

    /** The reason and code of a slot the job's calendars exclude (its record's and its {@code slot_skipped} event's). */
    static final String CALENDAR = "calendar";

    /**
     * A slot of the job's schedule that its calendars exclude ({@code why}: {@code skipOn holidays}),
     * due at {@code at} to be recorded skipped (never before its slot: the store answers early): a
     * slot passed while this worker fell behind or the cluster was down ({@link #exclude} for the rest).
     */
    static DueSlot excluded(ScheduledJob job, Instant slot, String why, Instant at) {
        DueSlot d = new DueSlot(job, slot, Kind.CLAIM, Stage.MISS_ONLY, at, Instant.MAX);
        d.exclude(why);
        return d;
    }

    /**
     * The job's next slot after the schedule gave {@code slot}: {@link #scheduled} to claim, or
     * {@link #unrunnable} when this worker may not run the job. Its calendars are asked when it
     * comes due ({@link #exclude}), not now: an application's calendar may change until then.
     */
    static DueSlot next(ScheduledJob job, Instant slot, Duration lead) {
        if (!job.here()) {
            DueSlot d = unrunnable(job, slot, slot);
            d.leadsOnce = true;
            return d;
        }
        return scheduled(job, slot, lead);
    }

    /**
     * Its job's calendars exclude it ({@code why}), as they say now that it came due for the first
     * time: a scheduled slot not shared out yet, or a slot of a job this worker may not run (any
     * worker may record a calendar's skip), becomes a skip to record at its time.
     */
    void exclude(String why) {
        move("exclude", Stage.MISS_ONLY, FROM_EXCLUDABLE);
        missReason = "calendar: " + why;
        missCode = CALENDAR;
        skip = true;
        watch = false;
        if (retryAt.isBefore(slot)) {
            retryAt = slot; // never before its slot: the store would answer early
        }
    }

    /** Whether its calendars are still to be asked ({@link #exclude}): once, when it first comes due. */
    boolean calendarsPending() {
        return !calendarsAsked && (stage == Stage.UNSHARED || (watch && stage == Stage.MISS_ONLY)) && job.definition().calendars().any();
    }

    /** Its calendars were asked (and did not exclude it). */
    void calendarsAsked() {
        calendarsAsked = true;
    }

    /** How long past a labelled job's grace a worker without its labels records the slot missed: a labelled peer decides first. */
    static final Duration NO_WORKER_MARGIN = Duration.ofSeconds(1);

    /**
     * A slot of a job this worker may not run ({@link RunOn}): due {@link #NO_WORKER_MARGIN} past its
     * grace (and no sooner than {@code at}), when only its miss is asked for ({@code code: no_worker}):
     * a worker with the labels decided it by then, or none is alive and the slot is reported, not silent.
     */
    static DueSlot unrunnable(ScheduledJob job, Instant slot, Instant at) {
        Instant due = slot.plus(job.definition().misfireGrace()).plus(NO_WORKER_MARGIN);
        DueSlot d = missed(job, slot, "no live worker with its " + job.definition().runOn() + " decided it within misfireGrace "
                + "(this worker lacks them)", "no_worker", due.isAfter(at) ? due : at);
        d.watch = true;
        return d;
    }

    /** A run of {@code job} that lost its lease without an outcome, rerun or abandoned by {@code policy} (split: asked until {@code deadline}). */
    static DueSlot recovery(ScheduledJob job, Instant slot, Recover policy, Instant deadline) {
        return new DueSlot(job, slot, policy == Recover.RERUN ? Kind.RECOVER : Kind.ABANDON, Stage.QUEUED, slot, deadline);
    }

    /** Chains {@code after} behind this catch-up slot: queued once this one is decided. */
    void then(DueSlot after) {
        after.move("then", Stage.CHAINED, FROM_QUEUED);
        next = after;
    }

    /**
     * The catch-up slot before it was decided: due at {@code at}, with a start deadline of its own
     * from then (the record ttl, as the chain's first had from the plan): each link of a
     * {@code catchUp: all} chain waits for the one before it, so a deadline shared from the plan
     * would cut a long chain short.
     */
    DueSlot unchain(Instant at) {
        move("unchain", Stage.QUEUED, FROM_CHAINED);
        retryAt = at;
        if (kind == Kind.CATCH_UP) {
            deadline = at.plus(ClaimRequest.recordTtl(definition().lease(), definition().misfireGrace()));
        }
        return this;
    }

    /** Shared out to us: claimed now, ahead of its time (the store may decide it up to {@link Preference#AHEAD} ahead). */
    void ours() {
        move("ours", Stage.QUEUED, FROM_UNSHARED);
        ahead = Preference.AHEAD;
    }

    /** Shared out to the peer {@code worker}: its record is read at {@code at}. */
    void stepAside(String worker, Instant at) {
        move("stepAside", Stage.STEPPED_ASIDE, FROM_UNSHARED);
        preferred = worker;
        retryAt = at;
    }

    /** A peer's slot without a record after the backoff: claimed like any from now on. */
    void takeOver() {
        move("takeOver", Stage.QUEUED, FROM_STEPPED_ASIDE);
    }

    /** No free job thread (or an older slot of the job waits): claimed again when one frees. */
    void awaitThread() {
        move("awaitThread", Stage.WAITING_THREAD, TO_CLAIM);
    }

    /** Put in a batch for the store: a slot that may start is claimed; one that can no longer start goes as it is (its miss). */
    void toStore() {
        move("toStore", TO_CLAIM.contains(stage) ? Stage.CLAIMING : stage, SENDABLE);
    }

    /**
     * A claim that can no longer start becomes a request that only records the miss (with the
     * same token: if an earlier claim of ours won after all, the store disowns it).
     */
    void missOnly(String reason, String code) {
        move("missOnly", Stage.MISS_ONLY, TO_CLAIM);
        because(reason, code);
    }

    /** Reported missed by this worker (the store did not answer in time); what is still sent only settles the record. */
    void reported(String reason, String code) {
        move("reported", Stage.REPORTED, REPORTABLE);
        because(reason, code);
    }

    /** Asked again at {@code at}: a claim is queued again, a miss to record stays one. */
    void retryAt(Instant at) {
        move("retryAt", stage == Stage.CLAIMING ? Stage.QUEUED : stage, ASKED);
        retryAt = at;
    }

    /** Won: handed to the {@link Starter} ({@code staged}, claimed ahead) or to the {@link Runner}. */
    void won(boolean staged) {
        move("won", staged ? Stage.STAGED : Stage.RUNNING, FROM_CLAIMING);
    }

    /** Decided otherwise (or given up on, or a peer's record settles it): forgotten. */
    void decided() {
        move("decided", Stage.DECIDED, DECIDABLE);
    }

    /** A slot after the reload that retired its job's version ({@link JobSet#claimable}): dropped unasked. */
    void retired() {
        move("retired", Stage.DECIDED, FILED);
    }

    private void move(String transition, Stage to, Set<Stage> from) {
        if (!from.contains(stage)) {
            throw new IllegalStateException("slot " + key() + ": " + transition + " cannot move it from " + stage + " to "
                    + to + " (allowed from " + from + ")");
        }
        stage = to;
        if (settled != null && (to == Stage.RUNNING || to == Stage.STAGED || to == Stage.DECIDED)) {
            settled.complete(to == Stage.DECIDED ? answer : ClaimResult.Status.CLAIMED);
        }
    }

    /** The store answered {@code status} about it (kept for a backfill's driver: {@link #settled}). */
    void answered(ClaimResult.Status status) {
        if (settled != null) {
            answer = status;
        }
    }

    private void because(String reason, String code) {
        if (missReason == null) {
            missReason = reason;
            missCode = code;
        }
    }

    /** Where the slot stands. */
    Stage stage() {
        return stage;
    }

    Kind kind() {
        return kind;
    }

    Instant retryAt() {
        return retryAt;
    }

    /** What is asked of the store: the kind's request while the slot may start, else only the miss (or the calendar's skip). */
    ClaimRequest.Mode mode() {
        return MISSING.contains(stage) ? (skip ? ClaimRequest.Mode.SKIP_ONLY : ClaimRequest.Mode.MISS_ONLY) : kind.mode;
    }

    /** Whether only a decision without a run is asked (a miss or a calendar's skip): the slot never starts. */
    boolean recordOnly() {
        return MISSING.contains(stage);
    }

    /** A slot of a job this worker may not run: only watched for a miss to report. */
    boolean watch() {
        return watch;
    }

    /** Excluded by the job's calendars: recorded and reported skipped, never run. */
    boolean skip() {
        return skip;
    }

    /** How long before its slot the store may decide it: only a slot shared out to us, while it may start. */
    Duration ahead() {
        return MISSING.contains(stage) ? Duration.ZERO : ahead;
    }

    /** Whether this is a recovery (rerun or abandonment) of a run that lost its lease: not a claim. */
    boolean recovery() {
        return kind == Kind.RECOVER || kind == Kind.ABANDON;
    }

    /**
     * Whether the job's next slot is queued now that this one is first due: only a scheduled slot
     * not shared out yet. (A manual run is outside the job's schedule: queueing a slot after it
     * would start a second copy of the schedule, every later slot claimed twice by this worker.)
     */
    boolean leadsSchedule() {
        return stage == Stage.UNSHARED || leadsOnce;
    }

    /** Its follower is queued: an excluded slot leads once (a retry of its skip must not queue another). */
    void led() {
        leadsOnce = false;
    }

    /**
     * Whether winning it starts a run, so that it needs a free job thread. An abandonment reserves
     * none (abandoning a dead run must not wait for a thread): when it wins a claim that never
     * started, the run takes a thread then.
     */
    boolean needsThread() {
        ClaimRequest.Mode m = mode();
        return m == ClaimRequest.Mode.CLAIM || m == ClaimRequest.Mode.CATCH_UP || m == ClaimRequest.Mode.RECOVER;
    }

    String missReason() {
        return missReason;
    }

    String missCode() {
        return missCode;
    }

    String preferred() {
        return preferred;
    }

    DueSlot next() {
        return next;
    }

    /** A catch-up's start deadline, a recovery's retry deadline (see {@link #deadline}). */
    Instant deadline() {
        return deadline;
    }

    /** How late the store may still let this slot be claimed. */
    Duration grace() {
        Duration own = definition().misfireGrace();
        return manual && own.compareTo(MANUAL_GRACE) < 0 ? MANUAL_GRACE : own;
    }

    JobDefinition definition() {
        return job.definition();
    }

    /**
     * Until when the slot may start: a plain claim within its grace, a catch-up until its deadline.
     * Past it, the slot is only recorded as missed; a slot waiting for a thread is looked at then.
     */
    Instant startDeadline() {
        return switch (mode()) {
            case CLAIM -> slot.plus(grace());
            // A backfill's slot waits for as long as the backfill runs, a week at most (a finite bound: Waiting does arithmetic on it).
            case CATCH_UP -> kind == Kind.BACKFILL ? deadline.plus(ClaimRequest.LAST_SLOT_TTL) : deadline;
            default -> Instant.MAX;
        };
    }

    /**
     * How long the store can still tell what became of the slot: its record lives at least this long
     * after the slot. Past it, a request whose answer never came is given up.
     */
    Instant recordDeadline() {
        JobDefinition d = definition();
        return (kind == Kind.BACKFILL ? deadline : slot).plus(ClaimRequest.recordTtl(d.lease(), grace()));
    }

    String key() {
        return definition().name() + "@" + slot.toEpochMilli();
    }

    @Override
    public int compareTo(DueSlot other) {
        return retryAt.compareTo(other.retryAt);
    }

    @Override
    public String toString() {
        return key() + " " + kind + " " + stage;
    }
}
