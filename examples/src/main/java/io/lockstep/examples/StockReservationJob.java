package io.lockstep.examples;

import io.lockstep.redis.RedisLocks;
import io.lockstep.scheduler.Job;
import io.lockstep.scheduler.JobContext;
import io.lockstep.scheduler.config.ConfigLoader;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.RedisClient;

/**
 * A scheduled reservation: each slot reserves stock for one order, fenced by the job's own fencing
 * token. It shows the end-to-end answer to a lost lease: a run whose worker was paused past its
 * lease finds, when it wakes, that a newer run (higher token) has been at the stock, and its late
 * write is refused. Job tokens and the lock tokens of {@link StockReservation#reserve(String, int)}
 * can guard the same stock: both are max(counter + 1, Redis time in microseconds) on the same
 * server, so they order by when they were taken, whichever counter they came from.
 *
 * <pre>{@code
 * - name: reserve-stock
 *   cron: "*&#47;2 * * * * *"
 *   class: io.lockstep.examples.StockReservationJob
 *   params: { redis: "redis://127.0.0.1:6379", sku: sku-42, quantity: 1 }
 * }</pre>
 *
 * <p>{@code pauseBeforeWrite} (a duration, default none) stalls between the stock read and the
 * write, ignoring interrupts, so that tests can pause the worker right there.
 */
public class StockReservationJob implements Job {

    private static final Logger LOG = LoggerFactory.getLogger("io.lockstep.events");

    /** The job's {@code params}. */
    public record Params(String redis, String sku, Integer quantity, String pauseBeforeWrite) {
        public Params {
            if (redis == null || sku == null) {
                throw new IllegalArgumentException("params.redis and params.sku are required");
            }
            quantity = quantity == null ? 1 : quantity;
        }
    }

    private volatile StockReservation stock;

    @Override
    public void execute(JobContext context) {
        Params params = context.params(Params.class);
        String order = context.jobName() + "@" + context.scheduledTime() + "#" + context.fencingToken();
        Duration pause = params.pauseBeforeWrite() == null ? Duration.ZERO
                : ConfigLoader.parseDuration(params.pauseBeforeWrite()).orElseThrow(() -> new IllegalArgumentException(
                        "params.pauseBeforeWrite must be a duration such as 1500ms, but was " + params.pauseBeforeWrite()));
        context.checkLease(); // the last check: from here on only the fence protects the stock
        LOG.atInfo().addKeyValue("event", "stock_reserving").addKeyValue("worker", context.workerId())
                .addKeyValue("job", context.jobName()).addKeyValue("slot", context.scheduledTime().toString())
                .addKeyValue("fencing_token", context.fencingToken()).addKeyValue("order", order).log("reserving stock");
        StockReservation.Outcome outcome = stock(params).reserve(context.fencingToken(), order, params.quantity(), pause);
        LOG.atInfo().addKeyValue("event", "stock_" + outcome.name().toLowerCase()).addKeyValue("worker", context.workerId())
                .addKeyValue("job", context.jobName()).addKeyValue("slot", context.scheduledTime().toString())
                .addKeyValue("fencing_token", context.fencingToken()).addKeyValue("order", order)
                .log("reservation " + outcome.name().toLowerCase());
        if (outcome == StockReservation.Outcome.STALE) {
            throw new IllegalStateException("fenced write refused: token " + context.fencingToken()
                    + " is older than the stock's " + stock(params).fence());
        }
    }

    private StockReservation stock(Params params) {
        StockReservation s = stock;
        if (s == null) {
            synchronized (this) {
                if (stock == null) {
                    RedisClient client = RedisClient.create(java.net.URI.create(params.redis()));
                    stock = new StockReservation(client, RedisLocks.on(client), params.sku());
                }
                s = stock;
            }
        }
        return s;
    }
}
