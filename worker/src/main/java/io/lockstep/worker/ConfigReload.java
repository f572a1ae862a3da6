package io.lockstep.worker;

import io.lockstep.scheduler.LockstepException;
import io.lockstep.scheduler.ScheduleUpdate;
import io.lockstep.scheduler.Scheduler;
import io.lockstep.scheduler.config.HttpUser;
import io.lockstep.scheduler.config.LockstepConfig;
import io.lockstep.scheduler.config.WorkerSettings;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.ClosedWatchServiceException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardWatchEventKinds;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A running worker's reload of its config file: on SIGHUP, and with {@code worker.reload: watch}
 * when the file changes. The file is loaded and checked as at the start (every job class too);
 * an invalid file changes nothing and is reported ({@code config_reload_failed}, with the same
 * lines {@code validate} prints): the worker goes on with the jobs in force, and its heartbeat
 * keeps their hash, which {@code status} shows. A valid one goes to {@link Scheduler#update}
 * ({@code schedule_updated}). Only {@code jobs:} and the console's users file are reloaded (the
 * users file is read again at each reload, so SIGHUP after editing it; {@code console_users_reloaded}):
 * a changed {@code redis:}, {@code worker:}, {@code history:} or {@code alerts:} section, or
 * authentication turned on or off, takes a restart, and says so ({@code config_restart_needed}).
 * Reloads run one at a time, on the worker's main thread.
 */
final class ConfigReload implements AutoCloseable {

    /** Several writes of one save (an editor's, a ConfigMap's symlink swap) come as one reload. */
    static final long SETTLE_MILLIS = 300;
    private static final long SETTLE_MAX_MILLIS = 3_000;
    private static final Logger EVENTS = LoggerFactory.getLogger("io.lockstep.events");

    private final Path file;
    private final Scheduler scheduler;
    private final boolean factory;
    private LockstepConfig inForce;
    private final java.util.function.Predicate<List<HttpUser>> http;
    private WatchService watch;

    ConfigReload(Path file, Scheduler scheduler, boolean factory, LockstepConfig loaded) {
        this(file, scheduler, factory, loaded, null);
    }

    /**
     * @param http puts a changed users file ({@code worker.http.auth.users}) in force, and says
     *     whether it could ({@link WorkerHttp#replaceUsers}); null without HTTP endpoints
     */
    ConfigReload(Path file, Scheduler scheduler, boolean factory, LockstepConfig loaded, java.util.function.Predicate<List<HttpUser>> http) {
        this.file = file.toAbsolutePath();
        this.scheduler = scheduler;
        this.factory = factory;
        this.inForce = loaded;
        this.http = http;
    }

    /**
     * Watches the file's directory and puts {@code request} in {@code requests} when the file
     * changes (created, modified or replaced), once per burst of changes.
     */
    void watch(BlockingQueue<String> requests, String request, String loadedVersion) throws IOException {
        watch = FileSystems.getDefault().newWatchService();
        file.getParent().register(watch, StandardWatchEventKinds.ENTRY_CREATE, StandardWatchEventKinds.ENTRY_MODIFY,
                StandardWatchEventKinds.ENTRY_DELETE);
        if (!java.util.Objects.equals(version(file), loadedVersion)) {
            requests.add(request); // changed while the worker started, before the watch
        }
        Thread t = new Thread(() -> {
            try {
                while (true) {
                    WatchKey key = watch.take();
                    boolean ours = ours(key);
                    if (!key.reset()) {
                        stopped();
                        return;
                    }
                    if (ours) {
                        if (!settle(watch)) {
                            stopped();
                            return;
                        }
                        requests.add(request);
                    }
                }
            } catch (InterruptedException | ClosedWatchServiceException e) {
                // closed: the worker is stopping
            }
        }, "lockstep-config-watch");
        t.setDaemon(true);
        t.start();
    }

    private void stopped() {
        EVENTS.atWarn().addKeyValue("event", "config_watch_stopped").addKeyValue("worker", scheduler.workerId())
                .addKeyValue("config", file.toString()).log("the config file's directory can no longer be watched; reload with SIGHUP");
    }

    /**
     * Whether the key's events touch the file (or Kubernetes' {@code ..data} swap of a ConfigMap's
     * files); lost events ({@code OVERFLOW}) may have, so they count too.
     */
    private boolean ours(WatchKey key) {
        return key.pollEvents().stream().anyMatch(e -> e.kind() == StandardWatchEventKinds.OVERFLOW
                || e.context() instanceof Path p && (p.equals(file.getFileName()) || p.toString().startsWith("..")));
    }

    /**
     * Waits until the file has been quiet for {@link #SETTLE_MILLIS} (other files of the directory
     * do not count), and at most {@link #SETTLE_MAX_MILLIS}.
     */
    private boolean settle(WatchService watch) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(SETTLE_MAX_MILLIS);
        long quietUntil = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(SETTLE_MILLIS);
        while (true) {
            long now = System.nanoTime();
            long wait = Math.min(quietUntil, end) - now;
            if (wait <= 0) {
                return true;
            }
            WatchKey more = watch.poll(wait, TimeUnit.NANOSECONDS);
            if (more != null) {
                boolean touched = ours(more);
                if (!more.reset()) {
                    return false;
                }
                if (touched) {
                    quietUntil = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(SETTLE_MILLIS);
                }
            }
        }
    }

    /** A digest of the file's bytes (a change within the file system's time granularity shows too), or null if unreadable. */
    static String version(Path file) {
        try {
            return java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(file)));
        } catch (IOException | java.security.NoSuchAlgorithmException e) {
            return null;
        }
    }

    /** Loads the file and puts its jobs in force, or reports why not; never throws for a bad file. */
    void reload(String why) {
        StringWriter problems = new StringWriter();
        Optional<LockstepConfig> loaded = Configs.load(file, new PrintWriter(problems), true, factory);
        if (loaded.isEmpty()) {
            failed(why, "load", problems.toString().strip().lines().toList());
            return;
        }
        LockstepConfig next = loaded.get();
        boolean usersApplied = users(next.worker().httpUsers()); // first: a job the update refuses does not keep a revoked user in
        ScheduleUpdate update;
        try {
            update = scheduler.update(next.jobs());
        } catch (VirtualMachineError e) {
            throw e; // the worker's main loop drains on its way out
        } catch (RuntimeException | Error e) { // whatever a job's factory or constructor throws: the worker goes on, and drains at its stop
            failed(why, "update", List.of(e instanceof LockstepException || e instanceof IllegalArgumentException
                    ? String.valueOf(e.getMessage()) : String.valueOf(e)));
            return;
        }
        List<String> restart = new ArrayList<>();
        if (!next.redis().equals(inForce.redis())) {
            restart.add("redis");
        }
        if (!withoutUsers(next.worker()).equals(withoutUsers(inForce.worker()))) {
            restart.add("worker");
        }
        if (!usersApplied) {
            restart.add("worker.http.auth"); // turned on or off: which endpoints ask for a user is set at the start
        }
        if (next.historyKeep() != inForce.historyKeep()) {
            restart.add("history");
        }
        if (!next.alerts().equals(inForce.alerts())) {
            restart.add("alerts");
        }
        if (!restart.isEmpty()) {
            EVENTS.atWarn().addKeyValue("event", "config_restart_needed").addKeyValue("worker", scheduler.workerId())
                    .addKeyValue("config", file.toString()).addKeyValue("sections", String.join(",", restart))
                    .log("the jobs were reloaded; the changed " + String.join(", ", restart) + " section(s) take effect at the next restart");
        }
        inForce = new LockstepConfig(inForce.source(), inForce.redis(), inForce.worker(), next.jobs(), inForce.historyKeep(), inForce.alerts());
        EVENTS.atInfo().addKeyValue("event", "config_reloaded").addKeyValue("worker", scheduler.workerId())
                .addKeyValue("config", file.toString()).addKeyValue("trigger", why).addKeyValue("config_hash", update.configHash())
                .log("config reloaded");
    }

    /**
     * Puts a changed users file in force ({@code console_users_reloaded}), whatever becomes of the
     * jobs; false when the change takes a restart (authentication turned on or off). Without HTTP
     * endpoints nothing serves the users: they are only taken note of.
     */
    private boolean users(List<HttpUser> users) {
        WorkerSettings w = inForce.worker();
        if (users.equals(w.httpUsers())) {
            return true;
        }
        if (http != null && !http.test(users)) {
            return false;
        }
        inForce = new LockstepConfig(inForce.source(), inForce.redis(), new WorkerSettings(w.id(), w.threads(), w.shutdownTimeout(),
                w.httpPort(), w.httpBind(), w.watch(), w.labels(), users), inForce.jobs(), inForce.historyKeep(), inForce.alerts());
        if (http != null) {
            EVENTS.atInfo().addKeyValue("event", "console_users_reloaded").addKeyValue("worker", scheduler.workerId())
                    .addKeyValue("config", file.toString()).addKeyValue("users", users.size())
                    .log("the console's users file was reloaded: {} users; credentials proved before are asked again", users.size());
        }
        return true;
    }

    /** The worker settings but the users file's contents, which a reload can put in force. */
    private static WorkerSettings withoutUsers(WorkerSettings w) {
        return new WorkerSettings(w.id(), w.threads(), w.shutdownTimeout(), w.httpPort(), w.httpBind(), w.watch(), w.labels());
    }

    /**
     * A reload that did not put the jobs in force: {@code stage} {@code load} (the file did not load:
     * nothing changed) or {@code update} (the file loaded, the scheduler refused the jobs: a changed
     * users file was put in force all the same, as {@code console_users_reloaded} said).
     */
    private void failed(String why, String stage, List<String> problems) {
        EVENTS.atError().addKeyValue("event", "config_reload_failed").addKeyValue("worker", scheduler.workerId())
                .addKeyValue("config", file.toString()).addKeyValue("trigger", why).addKeyValue("stage", stage)
                .addKeyValue("problems", problems)
                .log((stage.equals("load") ? "the config file was not reloaded" : "the reloaded jobs were refused")
                        + "; the jobs in force go on unchanged: " + String.join("; ", problems));
    }

    @Override
    public void close() {
        if (watch != null) {
            try {
                watch.close();
            } catch (IOException e) {
                // nothing left to do
            }
        }
    }
}
