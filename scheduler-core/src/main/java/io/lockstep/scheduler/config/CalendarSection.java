package io.lockstep.scheduler.config;

import io.lockstep.scheduler.JobCalendar;
import io.lockstep.scheduler.JobDefinition;
import io.lockstep.scheduler.calendar.DatesCalendar;
import io.lockstep.scheduler.calendar.DayLists;
import java.nio.file.Path;
import java.time.DateTimeException;
import java.time.LocalDate;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.ScalarNode;

/**
 * Reads the {@code calendars} section: named {@link DatesCalendar}s of {@code dates} (and date
 * ranges), a {@code file} of them (text, or an iCalendar {@code .ics}; relative to the config
 * file's folder) and {@code weekly} windows, each in its {@code zone} (the {@code defaults} zone
 * unless set). Each problem is reported with its line and path; a calendar with one is left out
 * (and a job that names it is then reported too). Not thread-safe: one per load.
 */
final class CalendarSection {

    static final Set<String> KEYS = Set.of("zone", "dates", "file", "weekly");
    private final ConfigNodes nodes;

    CalendarSection(ConfigNodes nodes) {
        this.nodes = nodes;
    }

    /** The calendars by name (none when {@code node} is null); one with a problem (reported) maps to null. */
    Map<String, JobCalendar> read(Node node, ZoneId defaultZone) {
        Map<String, JobCalendar> calendars = new LinkedHashMap<>();
        if (node == null) {
            return calendars;
        }
        if (!(node instanceof MappingNode map)) {
            nodes.problem(node, "calendars", "must be a mapping of calendar names to calendars, but was " + ConfigNodes.describe(node));
            return calendars;
        }
        for (NodeTuple t : map.getValue()) {
            if (!(t.getKeyNode() instanceof ScalarNode key)) {
                nodes.problem(t.getKeyNode(), "calendars", "a calendar's name must be text");
                continue;
            }
            String name = key.getValue();
            String path = "calendars." + name;
            int before = nodes.problems.size();
            if (!JobDefinition.NAME.matcher(name).matches()) {
                nodes.problem(key, path, "a calendar's name must match " + JobDefinition.NAME + ", but was \"" + name + "\"");
                continue;
            }
            Map<String, Node> m = nodes.mapping(t.getValueNode(), path, KEYS).orElse(null);
            if (m == null) {
                calendars.put(name, null);
                continue;
            }
            ZoneId zone = defaultZone;
            if (m.containsKey("zone")) {
                Optional<String> text = nodes.string(m.get("zone"), path + ".zone");
                try {
                    zone = text.map(ZoneId::of).orElse(defaultZone);
                } catch (DateTimeException e) {
                    nodes.problem(m.get("zone"), path + ".zone", "unknown time zone \"" + text.get() + "\" (use a region id such as Europe/Lisbon or UTC)");
                }
            }
            TreeMap<LocalDate, LocalDate> days = new TreeMap<>();
            List<DatesCalendar.Window> windows = new ArrayList<>();
            for (Map.Entry<Node, String> e : items(m.get("dates"), path + ".dates", "dates (YYYY-MM-DD, or FROM..TO)")) {
                try {
                    add(days, DayLists.range(e.getValue()));
                } catch (IllegalArgumentException bad) {
                    nodes.problem(e.getKey(), path + ".dates", bad.getMessage());
                }
            }
            for (Map.Entry<Node, String> e : items(m.get("weekly"), path + ".weekly", "weekly windows (like MON-FRI 09:00-17:00)")) {
                try {
                    windows.add(DayLists.window(e.getValue()));
                } catch (IllegalArgumentException bad) {
                    nodes.problem(e.getKey(), path + ".weekly", bad.getMessage());
                }
            }
            if (m.containsKey("file")) {
                nodes.string(m.get("file"), path + ".file").ifPresent(f -> readFile(f, m.get("file"), path + ".file", days));
            }
            if (nodes.problems.size() == before && days.isEmpty() && windows.isEmpty()) {
                nodes.problem(t.getValueNode(), path, "is empty: give dates, a file or weekly windows");
            }
            // One with a problem is named but null: a job naming it is not reported again.
            calendars.put(name, nodes.problems.size() == before ? new DatesCalendar(name, zone, days, windows) : null);
        }
        return calendars;
    }

    /** A list of text items with their nodes; none when absent or not a list (reported). */
    private List<Map.Entry<Node, String>> items(Node node, String path, String what) {
        return node == null ? List.of() : nodes.texts(node, path, what).orElse(List.of());
    }

    /** A file of dates (or an {@code .ics}), relative to the config file's folder, read as the config itself is (size, UTF-8). */
    private void readFile(String name, Node node, String path, TreeMap<LocalDate, LocalDate> days) {
        Path folder = Path.of(nodes.source).toAbsolutePath().getParent();
        Path file = folder == null ? Path.of(name).toAbsolutePath() : folder.resolve(name);
        try {
            String text = ConfigFile.read(file);
            List<LocalDate[]> ranges = name.toLowerCase(java.util.Locale.ROOT).endsWith(".ics") ? DayLists.ics(text) : DayLists.lines(text);
            ranges.forEach(r -> add(days, r));
        } catch (ConfigException e) {
            ConfigProblem p = e.problems().get(0);
            nodes.problem(node, path, file + (p.line() > 0 ? ":" + p.line() : "") + ": " + p.message());
        } catch (IllegalArgumentException e) {
            nodes.problem(node, path, file + ": " + e.getMessage());
        }
    }

    private static void add(TreeMap<LocalDate, LocalDate> days, LocalDate[] range) {
        days.merge(range[0], range[1], (a, b) -> a.isAfter(b) ? a : b);
    }
}
