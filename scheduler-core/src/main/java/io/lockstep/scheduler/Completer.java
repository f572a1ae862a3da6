package io.lockstep.scheduler;

import io.lockstep.scheduler.lock.Completion;
import io.lockstep.scheduler.lock.LockException;
import io.lockstep.scheduler.lock.LockProvider;
import io.lockstep.scheduler.lock.Outcome;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * Writes outcomes into slot records and gives leases back, on its own thread
 * ({@code lockstep-complete}), in one batch per round trip: whatever runs ended while the last
 * batch was on the wire go together. A job thread hands its run over and is free at once, instead
 * of holding a thread (and a pooled connection) for a round trip per run. Thread-safe.
 */
final class Completer {

    /** At most this many completions per round trip. */
    private static final int MAX_BATCH = 1_000;

    private record Pending(SlotRun run, Outcome outcome) {}

    private static final Pending STOP = new Pending(null, null);

    private final LockProvider provider;
    private final Events events;
    private final Outage outage;
    private final LinkedBlockingQueue<Pending> queue = new LinkedBlockingQueue<>();
    private final Thread thread;

    Completer(LockProvider provider, Events events, Outage outage) {
        this.provider = provider;
        this.events = events;
        this.outage = outage;
        this.thread = new Thread(this::loop, "lockstep-complete");
        this.thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    /** Queues a run's outcome; it is written with the next batch. */
    void submit(SlotRun run, Outcome outcome) {
        queue.add(new Pending(run, outcome));
    }

    /** Writes what is queued, then stops the thread. */
    void close() {
        queue.add(STOP);
        try {
            thread.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void loop() {
        List<Pending> batch = new ArrayList<>();
        while (true) {
            batch.clear();
            try {
                batch.add(queue.take());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            queue.drainTo(batch, MAX_BATCH - 1);
            boolean stop = batch.remove(STOP);
            if (!batch.isEmpty()) {
                try {
                    send(batch);
                } catch (RuntimeException e) {
                    events.error("tick_failed").addKeyValue("error", Events.describe(e)).setCause(e)
                            .log("unexpected failure writing outcomes; continuing");
                }
            }
            if (stop) {
                if (!queue.isEmpty()) {
                    queue.add(STOP); // outcomes queued after the stop was asked for: write them too
                    continue;
                }
                return;
            }
        }
    }

    private void send(List<Pending> batch) {
        List<Completion> completions = new ArrayList<>(batch.size());
        for (Pending p : batch) {
            completions.add(new Completion(p.run().lease, p.outcome()));
        }
        long sent = System.nanoTime();
        List<Boolean> owned;
        try {
            owned = provider.complete(completions);
            outage.succeeded();
        } catch (LockException e) {
            outage.failed("complete", e);
            return; // the records stay "running": after the lease, a peer finds them (recover policy)
        }
        long durationMs = (System.nanoTime() - sent) / 1_000_000;
        for (int i = 0; i < batch.size(); i++) {
            SlotRun run = batch.get(i).run();
            boolean ours = owned.get(i);
            events.info("slot_released").addKeyValue("job", run.definition.name())
                    .addKeyValue("slot", run.scheduledTime().toString()).addKeyValue("lock_name", run.lockName)
                    .addKeyValue("action", "release").addKeyValue("identifier", run.lease.token())
                    .addKeyValue("duration_ms", durationMs).addKeyValue("success", ours)
                    .addKeyValue("outcome", batch.get(i).outcome().label())
                    .log(ours ? "slot released" : "slot no longer ours; outcome not recorded");
        }
    }
}
