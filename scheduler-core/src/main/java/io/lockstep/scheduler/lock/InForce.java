package io.lockstep.scheduler.lock;

import java.time.Duration;
import java.time.Instant;

/**
 * When a job was in force in the cluster (enabled in the config of a live worker), as the store
 * keeps it: what a worker starting with the job enabled reads so that it does not catch up the
 * slots that passed while the cluster ran without it (the job disabled or removed, then re-enabled
 * by a restart). A reload that re-enables a job starts it at its next slot; a restart must agree.
 *
 * <p>How it is kept: one worker per config (the first live one by id of those that run it)
 * stamps the config's enabled jobs and the cluster every {@link #STAMP_EVERY}, and every worker
 * stamps its own at its start, at each reload and at its stop ({@link LockProvider#stampInForce}).
 * A job whose stamp stopped while the cluster's went on was out of force from its last stamp plus
 * {@link #GAP} to the cluster's stamp; when it is stamped again, the store keeps that period
 * ({@link #offFrom}, {@link #offTo}: the latest one only). A slot in such a period is not owed;
 * one after the cluster's last stamp passed while no worker was running and is caught up by the
 * job's {@code catchUp} as before. The precision is {@link #GAP}: a slot up to a minute after the
 * job left force is still caught up (never the other way round: an owed slot is never dropped).
 *
 * @param last the job's last stamp (store time)
 * @param offFrom the start of the latest period it was out of force and the cluster ran (null: none kept)
 * @param offTo that period's end (null when {@code offFrom} is)
 * @param alive the cluster's last stamp (store time): some worker ran then
 */
public record InForce(Instant last, Instant offFrom, Instant offTo, Instant alive) {

    /** How often the keeper of a config stamps its enabled jobs and the cluster. */
    public static final Duration STAMP_EVERY = Duration.ofSeconds(30);
    /** A job unstamped this long after its last stamp while the cluster's stamp moved on was out of force. */
    public static final Duration GAP = STAMP_EVERY.multipliedBy(2);
    /** A job not stamped for this long is forgotten, with its marks (a removed job's marks are pruned). */
    public static final Duration KEEP = Duration.ofDays(7);

    /** Whether {@code slot} passed while the cluster ran without this job (so it is not owed). */
    public boolean outOfForce(Instant slot) {
        if (offFrom != null && !slot.isBefore(offFrom) && !slot.isAfter(offTo)) {
            return true;
        }
        Instant from = last.plus(GAP);
        return alive.isAfter(from) && !slot.isBefore(from) && !slot.isAfter(alive);
    }
}
