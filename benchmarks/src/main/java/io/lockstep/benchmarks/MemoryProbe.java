package io.lockstep.benchmarks;

import io.lockstep.redis.RedisLockProvider;
import io.lockstep.scheduler.Scheduler;
import io.lockstep.scheduler.config.ConfigLoader;
import io.lockstep.scheduler.config.LockstepConfig;
import java.lang.management.ManagementFactory;

/**
 * Run in a fresh JVM: loads a config of many jobs and starts a worker on it exactly as the
 * {@code run} command does, then prints {@code load_ms start_ms heap_before_kb heap_after_kb
 * since_jvm_start_ms}. Heap figures are taken right after a full GC.
 */
public final class MemoryProbe {

    private MemoryProbe() {}

    public static void main(String[] args) throws Exception {
        long heapBefore = heapAfterGc();
        long t0 = System.nanoTime();
        LockstepConfig config = ConfigLoader.defaults().load(java.nio.file.Path.of(args[0]));
        long loaded = System.nanoTime();
        try (RedisLockProvider provider = RedisLockProvider.builder().settings(config.redis()).build();
             Scheduler scheduler = Scheduler.builder(provider).workerId("memory").threads(config.worker().threads())
                     .jobs(config.jobs()).build()) {
            scheduler.start();
            long started = System.nanoTime();
            long sinceJvm = System.currentTimeMillis() - ManagementFactory.getRuntimeMXBean().getStartTime();
            long heapAfter = heapAfterGc();
            System.out.println((loaded - t0) / 1_000_000 + " " + (started - loaded) / 1_000_000 + " " + heapBefore / 1024
                    + " " + heapAfter / 1024 + " " + sinceJvm);
            if (Boolean.getBoolean("probe.hold")) {
                Thread.sleep(30_000); // -Dprobe.hold=true: time to take a class histogram (jcmd PID GC.class_histogram)
            }
        }
    }

    private static long heapAfterGc() {
        System.gc();
        System.gc();
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }
}
