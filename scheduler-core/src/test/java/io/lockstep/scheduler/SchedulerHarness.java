package io.lockstep.scheduler;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Schedulers for one test and the events they log: {@link #start} builds and starts one, and after
 * the test every scheduler is closed and the event capture stopped. Register it with
 * {@code @RegisterExtension final SchedulerHarness harness = new SchedulerHarness();}.
 */
final class SchedulerHarness implements BeforeEachCallback, AfterEachCallback {

    private final List<Scheduler> schedulers = new ArrayList<>();
    private CapturedEvents events;

    @Override
    public void beforeEach(ExtensionContext context) {
        events = new CapturedEvents();
    }

    @Override
    public void afterEach(ExtensionContext context) {
        closeAll();
        events.close();
    }

    /** Closes every scheduler started so far (draining them), for a test that looks at what follows. */
    void closeAll() {
        schedulers.forEach(Scheduler::close);
    }

    /** Builds and starts a scheduler that is closed after the test. */
    Scheduler start(Scheduler.Builder builder) {
        Scheduler s = builder.build();
        schedulers.add(s);
        s.start();
        return s;
    }

    /** The events logged during this test. */
    CapturedEvents events() {
        return events;
    }
}
