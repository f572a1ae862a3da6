package io.lockstep.scheduler;

import io.lockstep.scheduler.config.Durations;
import io.lockstep.scheduler.lock.Expectations;
import io.lockstep.scheduler.lock.Expectations.Notice;
import io.lockstep.scheduler.lock.LockException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Has the store judge the jobs' expectations ({@link Expect}) about once a second, and logs and
 * delivers the verdicts it is handed. Every worker does this for every job with an expectation that
 * is in force here (enabled; an every-worker job has none): the store decides each breach once
 * whoever asks ({@link Expectations}), so no keeper needs electing and a dead worker's part is
 * taken up by the others at their next look.
 *
 * <p>A verdict is logged here at once ({@code expectation_breached}, ERROR, counted in
 * {@code lockstep.expectations.breached}; {@code expectation_met}, INFO), then, from a thread of its
 * own ({@code lockstep-alerts}), recorded logged (retried through a Redis stall), and with webhooks
 * sent, its delivery lease extended
 * before each attempt ({@link Expectations#sending}: a verdict another worker took over meanwhile is
 * not sent here), then recorded delivered. A worker that dies (or is stuck) before that last record
 * leaves the verdict to the next worker that asks after its delivery lease
 * ({@link Alerts#deliveryTime}), which logs it only if it was not logged, and sends it. So a breach
 * is never lost; a worker killed between writing the event and recording it logged (a millisecond),
 * or kept from Redis for longer than half the lease just then, or killed between a webhook's 2xx
 * and the record of delivery, has it written or sent twice (webhooks get the same {@code id}).
 * Thread-safe.
 */
final class ExpectationKeeper implements AutoCloseable {

    /** How often each job is judged. */
    static final Duration PERIOD = Duration.ofSeconds(1);

    private final Expectations store;
    private final String workerId;
    private final JobSet jobs;
    private final Events events;
    private final Webhooks webhooks;
    private final Duration deliveryLease;
    /** Per job: the latest slot judged and the store's clock then, from the last reply. */
    private final Map<String, long[]> judged = new HashMap<>();
    /** Verdicts being delivered here: not delivered twice by this worker when the store hands one back. */
    private final Set<String> inFlight = ConcurrentHashMap.newKeySet();
    private final ExecutorService delivery;
    private final Thread thread;
    private volatile boolean closed;
    /** Whether the last look failed for want of the store: said once per such spell, not every second. */
    private boolean failing;

    ExpectationKeeper(Expectations store, String workerId, JobSet jobs, Events events, Alerts alerts) {
        this.store = store;
        this.workerId = workerId;
        this.jobs = jobs;
        this.events = events;
        this.webhooks = new Webhooks(alerts, events, workerId);
        this.deliveryLease = alerts.deliveryTime();
        this.delivery = new ThreadPoolExecutor(1, 1, 0, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), r -> {
            Thread t = new Thread(r, "lockstep-alerts");
            t.setDaemon(true);
            return t;
        });
        this.thread = new Thread(this::loop, "lockstep-expect");
        this.thread.setDaemon(true);
    }

    /** Whether any job in {@code definitions} has an expectation. */
    static boolean wanted(List<JobDefinition> definitions) {
        return definitions.stream().anyMatch(d -> d.expect().any());
    }

    void open() {
        thread.start();
    }

    /**
     * Each second, one look at every job with an expectation in force here, all in one call of the
     * store (one round trip on Redis, whatever the number of jobs); a job the store could not judge
     * (one Cluster shard down) leaves the others judged.
     */
    private void loop() {
        while (!closed) {
            List<Expectations.Look> looks = new ArrayList<>();
            Map<String, JobDefinition> byName = new HashMap<>();
            boolean failed = false;
            for (ScheduledJob job : jobs.all()) {
                JobDefinition d = job.definition();
                if (d.enabled() && d.expect().any() && !d.runOn().everyWorker()) {
                    try {
                        looks.add(look(d));
                        byName.put(d.name(), d);
                    } catch (VirtualMachineError e) {
                        throw e;
                    } catch (RuntimeException | Error e) { // its schedule's arithmetic: this job is not judged, the others are
                        broken(d.name(), e);
                    }
                }
            }
            try {
                List<Expectations.Judged> results = looks.isEmpty() ? List.of() : store.judge(looks, workerId, deliveryLease);
                for (Expectations.Judged j : results) {
                    if (closed) {
                        break;
                    }
                    if (j.failure() instanceof LockException e) {
                        failed |= failed(j.look().job(), e, failed);
                    } else if (j.failure() != null) {
                        broken(j.look().job(), j.failure());
                    } else {
                        judged(byName.get(j.look().job()), j.judgement());
                        broken.remove(j.look().job());
                    }
                }
            } catch (LockException e) { // a store that could not be asked at all
                failed |= failed(null, e, failed);
            } catch (VirtualMachineError e) {
                throw e;
            } catch (RuntimeException | Error e) {
                broken("", e);
            }
            failing = failed;
            try {
                long jitter = ThreadLocalRandom.current().nextLong(PERIOD.toMillis() / 5);
                TimeUnit.MILLISECONDS.sleep(PERIOD.toMillis() - PERIOD.toMillis() / 10 + jitter);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    /**
     * Redis down (the claims report that too), one Cluster shard down, or a refusal (an ACL without a
     * command): said once per spell, not every second. Always true: this look failed.
     */
    private boolean failed(String job, LockException e, boolean failedThisRound) {
        if (!failing && !failedThisRound) {
            var event = events.warn("expectation_failed");
            if (job != null) {
                event = event.addKeyValue("job", job);
            }
            event.addKeyValue("error", e.getMessage())
                    .log("judging expectations failed (asked again each second; said again once it worked): " + e.getMessage());
        }
        return true;
    }

    /** Jobs (or "" for a whole round) whose looks fail for another reason than the store: each said once until it is judged again. */
    private final Set<String> broken = new java.util.HashSet<>();

    private void broken(String job, Throwable e) {
        if (broken.add(job)) {
            var event = events.warn("expectation_failed");
            if (!job.isEmpty()) {
                event = event.addKeyValue("job", job);
            }
            event.addKeyValue("error", e.toString())
                    .log("judging " + (job.isEmpty() ? "expectations" : job + "'s expectations") + " failed (asked again each second; said once): " + e);
        }
    }

    /**
     * What the store keeps the judgement under: the expectation and the schedule, so that after a
     * change of either the slots due before it are not judged (a cron moved from 03:00 to 02:00 at
     * 02:30 did not owe a 02:00 run).
     */
    static String spec(JobDefinition d) {
        return d.expect().spec() + ";s=" + d.schedule();
    }

    /** One look at one job: the slots due since the last reply whose deadline may have passed. */
    Expectations.Look look(JobDefinition d) {
        Expect e = d.expect();
        long within = e.succeededWithin().toMillis();
        long[] last = judged.get(d.name());
        List<Instant> due = new ArrayList<>();
        if (last != null && within > 0) {
            Instant at = Instant.ofEpochMilli(last[0]);
            Instant until = Instant.ofEpochMilli(last[1] - within);
            while (due.size() < 200) {
                Optional<Instant> next = d.schedule().next(at);
                if (next.isEmpty() || next.get().isAfter(until)) {
                    break;
                }
                due.add(next.get());
                at = next.get();
            }
        }
        return new Expectations.Look(d.name(), spec(d), within, e.successEvery().toMillis(), due);
    }

    /** Takes a job's judgement: where the next look starts, and the verdicts to log and deliver. */
    private void judged(JobDefinition d, Expectations.Judgement j) {
        judged.put(d.name(), new long[] {j.judgedThroughMillis(), j.nowMillis()});
        for (Notice n : j.notices()) {
            if (!inFlight.add(n.id())) {
                continue; // being delivered here already
            }
            try {
                handle(d, n);
            } catch (RuntimeException ex) {
                inFlight.remove(n.id()); // left in the outbox: handed out again after its lease; the next verdict is handled on
                events.warn("expectation_failed").addKeyValue("job", n.job()).addKeyValue("alert_id", n.id())
                        .addKeyValue("error", ex.getMessage())
                        .log("recording a verdict failed (it goes out again after its lease): " + ex.getMessage());
            }
        }
    }

    /**
     * Logs a verdict (unless a worker that died had), then, on the delivery thread, records it
     * logged, sends it to the webhooks and records it delivered. The records are retried while the
     * store does not answer (within half the delivery lease), so that a Redis stall just after the
     * event was written does not leave the verdict to another worker that would write it again.
     */
    private void handle(JobDefinition d, Notice n) {
        String expected = expected(d, n);
        if (!n.logged()) {
            log(n, expected);
        }
        delivery.execute(() -> {
            try {
                if (!n.logged() && !recorded(() -> store.logged(n.job(), n.id()))) {
                    return; // the store stayed away: another worker takes it over after its lease (and logs it again)
                }
                if (!webhooks.any() || webhooks.send(n, Webhooks.body(n, expected),
                        () -> store.sending(n.job(), n.id(), workerId, deliveryLease))) {
                    recorded(() -> store.delivered(n.job(), n.id()));
                }
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt(); // stopping: another worker delivers it after its lease
            } catch (RuntimeException re) {
                events.warn("expectation_failed").addKeyValue("job", n.job()).addKeyValue("alert_id", n.id())
                        .addKeyValue("error", re.getMessage())
                        .log("delivering " + n.id() + " failed here (another worker sends it after its lease): " + re.getMessage());
            } finally {
                inFlight.remove(n.id());
            }
        });
    }

    /** Runs a record in the store, again every 200 ms while the store does not answer, for half the delivery lease at most. */
    private boolean recorded(Runnable record) throws InterruptedException {
        long until = System.nanoTime() + deliveryLease.toNanos() / 2;
        while (true) {
            try {
                record.run();
                return true;
            } catch (LockException e) {
                if (System.nanoTime() - until > 0 || closed) {
                    return false;
                }
                TimeUnit.MILLISECONDS.sleep(200);
            }
        }
    }

    private void log(Notice n, String expected) {
        var event = (n.breached() ? events.error("expectation_breached") : events.info("expectation_met"))
                .addKeyValue("job", n.job()).addKeyValue("expectation", n.expectation()).addKeyValue("expected", expected)
                .addKeyValue("happened", n.happened()).addKeyValue("alert_id", n.id());
        if (n.slotMillis() > 0) {
            event = event.addKeyValue("slot", Instant.ofEpochMilli(n.slotMillis()).toString());
        }
        if (n.deadlineMillis() > 0) {
            event = event.addKeyValue("deadline", Instant.ofEpochMilli(n.deadlineMillis()).toString());
        }
        if (n.lastSuccessMillis() > 0) {
            event = event.addKeyValue("last_success", Instant.ofEpochMilli(n.lastSuccessMillis()).toString());
        }
        if (n.breached()) {
            events.metrics().expectationBreached(n.job(), n.expectation());
            event.log(n.job() + " breached its expectation: expected " + expected + ", but " + n.happened()
                    + (n.slotMillis() > 0 ? " (slot " + Instant.ofEpochMilli(n.slotMillis()) + ")" : ""));
        } else {
            event.log(n.job() + " meets its expectation again (" + n.expectation() + "): " + n.happened());
        }
    }

    /** What was expected, in words: {@code a success within 15m of slot ...} or {@code a success every 26h}. */
    static String expected(JobDefinition d, Notice n) {
        return "successEvery".equals(n.expectation()) ? "a success every " + Durations.format(d.expect().successEvery())
                : "a success within " + Durations.format(d.expect().succeededWithin()) + " of each slot";
    }

    @Override
    public void close() {
        closed = true;
        thread.interrupt();
        delivery.shutdownNow(); // a verdict not delivered yet stays in the store's outbox for another worker
    }
}
