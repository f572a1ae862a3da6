package io.lockstep.benchmarks;

import io.lockstep.redis.LocalRedisServer;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.resps.Slowlog;

/**
 * Where Redis spends its time, script by script: every top-level call of the window goes to the
 * slow log (threshold 0), and each {@code EVALSHA} is told apart by the keys it declares (a claim's
 * fifth key is a pause key, a start's fourth, an outcome's fourth is a history stream). Per script:
 * calls, slots (its keys over the keys one slot takes), Redis microseconds per call and per slot.
 * Only with {@code -Dbench.profile=true}: the slow log costs the server a little on every call.
 */
final class ScriptProfile {

    private ScriptProfile() {}

    static boolean enabled() {
        return Boolean.getBoolean("bench.profile");
    }

    static void start(List<LocalRedisServer> masters) {
        for (LocalRedisServer m : masters) {
            try (Jedis r = new Jedis(m.host(), m.port())) {
                r.configSet("slowlog-log-slower-than", "0");
                r.configSet("slowlog-max-len", "500000");
                r.slowlogReset();
            }
        }
    }

    /** Per script: {calls, slots, microseconds}. */
    static Map<String, long[]> stop(List<LocalRedisServer> masters) {
        Map<String, long[]> by = new TreeMap<>();
        for (LocalRedisServer m : masters) {
            try (Jedis r = new Jedis(m.host(), m.port())) {
                List<Slowlog> log = r.slowlogGet(-1L);
                r.configSet("slowlog-log-slower-than", "10000");
                r.slowlogReset();
                for (Slowlog entry : log) {
                    List<String> args = entry.getArgs();
                    String command = args.isEmpty() ? "?" : args.get(0).toLowerCase(Locale.ROOT);
                    String name = command;
                    long slots = 1;
                    if (command.equals("evalsha") && args.size() > 3) {
                        int keys = Integer.parseInt(args.get(2));
                        String[] kind = kind(args.subList(3, Math.min(args.size(), 3 + Math.min(keys, 6))));
                        name = kind[0];
                        slots = Math.max(1, keys / Integer.parseInt(kind[1]));
                    }
                    long[] v = by.computeIfAbsent(name, k -> new long[3]);
                    v[0]++;
                    v[1] += slots;
                    v[2] += entry.getExecutionTime();
                }
            }
        }
        return by;
    }

    /** A script's name and keys per slot, from the first keys it declares. */
    private static String[] kind(List<String> keys) {
        if (keys.size() >= 5 && keys.get(4).endsWith(":paused")) {
            return new String[] {"claim.lua", "6"};
        }
        if (keys.size() >= 4 && keys.get(3).endsWith(":paused")) {
            return new String[] {"start.lua", "6"};
        }
        if (keys.size() >= 4 && keys.get(3).endsWith(":history")) {
            return new String[] {"complete.lua", "5"};
        }
        if (keys.size() >= 5 && keys.get(0).contains(":slot:") && keys.get(3).endsWith(":marks")) {
            return new String[] {"recover.lua", "5"};
        }
        if (!keys.isEmpty() && keys.get(0).endsWith("{workers}:info")) {
            return new String[] {"heartbeat.lua", "6"};
        }
        if (keys.size() == 1 && keys.get(0).endsWith(":running")) {
            return new String[] {"runs.lua", "1"};
        }
        return new String[] {"other script", "1"};
    }

    /**
     * One line per script (and per command, which the slow log also lists from inside scripts):
     * calls, slots per call, µs per call, µs per slot it carried. The log keeps the last 500,000
     * entries, so in a busy window it holds the window's later part: the averages stand, the
     * counts are of that part.
     */
    static String format(Map<String, long[]> by) {
        StringBuilder s = new StringBuilder();
        by.forEach((name, v) -> s.append(String.format(Locale.ROOT, "%n    %-16s %8d calls, %6.1f slots/call, %8.1f us/call, %6.2f us per slot",
                name, v[0], (double) v[1] / v[0], (double) v[2] / v[0], (double) v[2] / Math.max(1, v[1]))));
        return s.toString();
    }
}
