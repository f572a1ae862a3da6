package io.lockstep.scheduler.lock;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Where a store judges the jobs' expectations ({@code expect:}), so that each breach is decided
 * once in the cluster, on the store's clock, whichever workers ask and however often
 * ({@link LockProvider#expectations}). Every live worker asks about every job with an expectation
 * about once a second; the store reads the job's history of runs and decisions since its last look,
 * judges, and keeps each new verdict ({@link Notice}) in an outbox until a worker says it was
 * logged and then delivered. A verdict is handed to the worker whose call decided it, with a
 * delivery lease it extends before each attempt ({@link #sending}); a worker that dies (or is stuck)
 * before it delivered leaves the verdict to the next worker that asks once that lease has run out
 * ({@link Notice#logged} tells it whether the event was already written). Thread-safe.
 */
public interface Expectations {

    /**
     * Judges one job: reads what it did since the last look, then decides each slot of {@code due}
     * whose deadline has passed ({@code succeededWithin}) and the dead-man's switch
     * ({@code successEvery}).
     *
     * @param spec what the expectation and the job's schedule are; after a change of either, the
     *     slots due before it are not judged
     * @param withinMillis {@code succeededWithin}, 0 for none
     * @param everyMillis {@code successEvery}, 0 for none
     * @param due the job's slots after {@link Judgement#judgedThrough} of the last reply, oldest first,
     *     whose deadline may have passed (the store checks each by its own clock); empty on a first call
     * @param deliveryLease how long a worker has to log and deliver a verdict before another may
     * @return what is decided, and the verdicts this worker is to deliver
     */
    Judgement judge(String job, String spec, long withinMillis, long everyMillis, List<Instant> due, String workerId,
            Duration deliveryLease);

    /** One job to judge ({@link #judge(List, String, Duration)}): the arguments of {@link #judge} that differ per job. */
    record Look(String job, String spec, long withinMillis, long everyMillis, List<Instant> due) {
        public Look {
            Objects.requireNonNull(job, "job");
            due = List.copyOf(due);
        }
    }

    /**
     * What became of one {@link Look}: its judgement, or the failure that kept it from being judged
     * (a {@link LockException}: one Cluster shard down, say), which leaves the other looks standing.
     */
    record Judged(Look look, Judgement judgement, RuntimeException failure) {}

    /**
     * Judges several jobs at once, as {@link #judge} each: a store may do it in one round trip
     * (Redis pipelines them). One result per look, in their order; what kept a look from being judged
     * is its result's failure, never the others' once any was judged. This default asks one by one.
     *
     * @throws LockException when the store could not be asked at all (none judged)
     */
    default List<Judged> judge(List<Look> looks, String workerId, Duration deliveryLease) {
        List<Judged> out = new java.util.ArrayList<>(looks.size());
        for (Look l : looks) {
            try {
                out.add(new Judged(l, judge(l.job(), l.spec(), l.withinMillis(), l.everyMillis(), l.due(), workerId, deliveryLease), null));
            } catch (RuntimeException e) { // this job's look; the others are judged on
                out.add(new Judged(l, null, e));
            }
        }
        return out;
    }

    /** The verdict's event was written: a worker that delivers it after this one died does not log it again. */
    void logged(String job, String id);

    /**
     * The delivery of a verdict this worker holds begins, or goes on (before each attempt): its lease
     * is extended by {@code lease} from now.
     *
     * @return false when another worker took it over meanwhile (this one's lease had run out): do not send it
     */
    boolean sending(String job, String id, String workerId, Duration lease);

    /** The verdict was delivered (or there was nowhere to deliver it): it leaves the outbox. */
    void delivered(String job, String id);

    /** Where each job's expectations stand, for {@code status}; a job never judged is absent. */
    Map<String, State> states(List<String> jobs);

    /**
     * One verdict.
     *
     * @param id unique per breach or clearance (webhook receivers may drop a repeat by it)
     * @param kind {@code breached} or {@code met}
     * @param expectation {@code succeededWithin} or {@code successEvery}
     * @param slotMillis the slot judged ({@code succeededWithin}), else 0
     * @param deadlineMillis by when the success was expected (store ms)
     * @param happened what happened instead ({@code failed}, {@code missed (order)}, {@code no outcome},
     *     {@code no success since ...}), or for {@code met} the success that cleared it
     * @param lastSuccessMillis the job's last success known to the store (its outcome's store time), 0 for none
     * @param decidedMillis when it was decided (store ms)
     * @param logged its event was already written by a worker that then died before delivering it
     */
    record Notice(String id, String job, String kind, String expectation, long slotMillis, long deadlineMillis,
            String happened, long lastSuccessMillis, long decidedMillis, boolean logged) {
        public Notice {
            Objects.requireNonNull(id, "id");
            Objects.requireNonNull(job, "job");
        }

        public boolean breached() {
            return "breached".equals(kind);
        }
    }

    /**
     * The reply to {@link #judge}.
     *
     * @param judgedThroughMillis the latest slot judged (the next call's {@code due} starts after it)
     * @param nowMillis the store's clock when it judged
     * @param notices the verdicts this worker is to log and deliver, new ones and those a dead worker left
     */
    record Judgement(long judgedThroughMillis, long nowMillis, List<Notice> notices) {
        public Judgement {
            notices = List.copyOf(notices);
        }
    }

    /**
     * Where a job's expectations stand.
     *
     * @param withinBreachSlotMillis the latest slot breached under {@code succeededWithin} and not cleared since, 0 for none
     * @param everyBreachMillis when the open {@code successEvery} breach was decided, 0 for none
     * @param lastSuccessMillis the last success the store knows of, 0 for none
     */
    record State(long withinBreachSlotMillis, long everyBreachMillis, long lastSuccessMillis) {
        public boolean breached() {
            return withinBreachSlotMillis > 0 || everyBreachMillis > 0;
        }
    }
}
