package io.lockstep.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * How workers of key layout {@value RedisKeys#LAYOUT} keep away from workers of an older one on the
 * same Redis. Layout 1's never see a newer layout's slot records, so side by side both would run
 * every slot; layout 2's keep an exclusive job's lease where layout 3's do not look, so side by side
 * two runs of it could overlap. So they never run side by side:
 * <ul>
 *   <li>a worker refuses to start while a live worker of another layout is in the workers' list
 *       (its heartbeat entry has no {@code layout}, or another): one line naming each, and a
 *       non-zero exit (checked when it first publishes its config, before its first claim:
 *       {@link LayoutGuard#publish}; the operators' commands, which touch only their own
 *       layout's keys, work beside either);</li>
 *   <li>a running worker holds every job of its config paused in layout 1's keys
 *       ({@code <prefix>:{<job>}:paused}, what a layout 1 worker reads before each claim and each
 *       start), with a ttl of {@link #PAUSE_TTL}, rewritten before it runs out: a layout 1 worker started
 *       later (a host rolled back, one forgotten) runs nothing and records every slot as paused,
 *       with {@link #NOTE} as the pause's note. Each worker writes them when it publishes its
 *       config (its start, each reload); after that one worker per config keeps them (the first of
 *       the live ones that run it, by id), every {@link #REWRITE}, one script call per job: an idle
 *       cluster of 1,000 jobs sends about 4 calls a second for it. The same write drops layout 1's running index of
 *       each job ({@code <prefix>:{<job>}:running}): the claims its stopped workers handed back
 *       unstarted (a layout 1 worker runs those whatever the pause) and the runs its killed
 *       workers left are not run by a layout 1 worker again (a newer worker never knew of
 *       them: stop the old workers gracefully). A layout 2 worker needs no hold: it looks for
 *       other layouts itself and refuses to start beside this one. Manual runs and operators' commands have keys of
 *       their own per layout, so a layout 1 worker never sees layout 2's;</li>
 *   <li>such a worker is left out of the view slots are shared over, and reported (event
 *       {@code layout_mixed}) each time the set of them changes.</li>
 * </ul>
 * An upgrade across layouts is therefore stop all, then start all (the README's "Upgrading"). The
 * held pauses end {@link #PAUSE_TTL} after the last new worker stops, so a rollback to layout 1
 * runs again by itself after that. Thread-safe.
 */
final class LegacyLayout {

    /** How long the held pauses outlive the last rewrite; rewritten every {@link #REWRITE}. */
    static final Duration PAUSE_TTL = Duration.ofMinutes(10);
    static final Duration REWRITE = Duration.ofMinutes(4);
    static final String BY = "lockstep key layout " + RedisKeys.LAYOUT;
    static final String NOTE = "held by workers of key layout " + RedisKeys.LAYOUT
            + " (a newer Lockstep) on this Redis: stop this worker, or stop those for "
            + PAUSE_TTL.toMinutes() + " minutes to run this version";

    private final RedisCalls calls;
    private final String prefix;
    private static final LuaScript HOLD = LuaScript.load("hold_legacy.lua");

    private volatile Collection<String> jobs = List.of();
    private volatile boolean holding;
    private volatile long rewrittenAt;
    /** Jobs whose hold was not written (their master did not answer), written again with the next heartbeat. */
    private volatile Collection<String> pending = List.of();
    private volatile String reported = "";

    LegacyLayout(RedisCalls calls, String prefix) {
        this.calls = calls;
        this.prefix = prefix;
    }

    /** Layout 1's pause key of a job. */
    static String pauseKey(String prefix, String job) {
        return prefix + ":{" + job + "}:paused";
    }

    /** Whether {@link #hold} was called: the worker's config was published once. */
    boolean holding() {
        return holding;
    }

    /**
     * Holds these jobs paused for layout 1 workers from now on (the config published, at start and
     * at each reload). Best effort: a job whose master did not answer is written again with a later
     * heartbeat ({@link #refresh}), by this worker, keeper or not.
     */
    void hold(Collection<String> jobs, long serverMillis) {
        this.jobs = List.copyOf(jobs);
        holding = true;
        pending = write(this.jobs, serverMillis);
        if (pending.isEmpty()) {
            rewrittenAt = System.nanoTime();
        }
    }

    /**
     * Called with each heartbeat: writes again the jobs whose master did not answer last time, and
     * all of them when {@link #REWRITE} has passed if this worker keeps the holds ({@code keeper}:
     * the first live worker by id of those that run its config, so every config's jobs have one).
     * Best effort.
     */
    void refresh(long serverMillis, boolean keeper) {
        boolean due = keeper && System.nanoTime() - rewrittenAt >= REWRITE.toNanos();
        Collection<String> retry = pending;
        if (!due && retry.isEmpty()) {
            return;
        }
        List<String> failed = write(due ? jobs : retry, serverMillis);
        pending = failed;
        if (due && failed.isEmpty()) {
            rewrittenAt = System.nanoTime();
        }
    }

    /** Writes the holds of these jobs (one script call each, one round trip); returns those whose master did not answer. */
    private List<String> write(Collection<String> held, long serverMillis) {
        if (held.isEmpty()) {
            return List.of();
        }
        List<String> all = List.copyOf(held);
        try {
            List<Object> replies = calls.batch("hold layout 1 paused", all, job -> new RedisCalls.Call(HOLD,
                    List.of(pauseKey(prefix, job), prefix + ":{" + job + "}:running"),
                    List.of(BY, NOTE, Long.toString(serverMillis), Long.toString(PAUSE_TTL.toMillis()))), RedisCalls.Replicas.NONE)
                    .replies();
            List<String> failed = new ArrayList<>();
            for (int i = 0; i < all.size(); i++) {
                if (replies.get(i) instanceof ScriptPipeline.CallFailed) {
                    failed.add(all.get(i));
                }
            }
            return failed;
        } catch (RuntimeException e) {
            return all; // nothing answered
        }
    }

    /**
     * Reports (event {@code layout_mixed}) the live workers of another layout when they are not the
     * ones reported last; {@code others} as "id on host (version)".
     */
    void report(List<String> others) {
        String now = String.join(", ", others);
        if (now.equals(reported)) {
            return;
        }
        reported = now;
        if (!others.isEmpty()) {
            org.slf4j.LoggerFactory.getLogger("io.lockstep.events").atError().addKeyValue("event", "layout_mixed")
                    .addKeyValue("layout", RedisKeys.LAYOUT).addKeyValue("others", new ArrayList<>(others))
                    .log("workers of an older key layout are live on this Redis (" + now + "); they run nothing, their "
                            + "jobs are held paused for them; stop them (see the README's Upgrading)");
        }
    }

    /** The one line a worker refuses to start with while {@code others} (of another layout) are live. */
    static String refusal(String target, List<String> others) {
        return target + ": live workers of an older key layout use this Redis (" + String.join(", ", others)
                + "); this version (key layout " + RedisKeys.LAYOUT + ") must not run beside them: stop every one "
                + "of them, then start this one (see the README's Upgrading)";
    }
}
