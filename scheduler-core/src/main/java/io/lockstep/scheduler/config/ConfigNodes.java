package io.lockstep.scheduler.config;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;
import org.yaml.snakeyaml.nodes.Tag;

/**
 * Reads YAML nodes of one file into values, each reader reporting its own problem (file, line, YAML
 * path) and answering empty, so that a load collects every problem before it fails. Replaces
 * {@code ${VAR}} and {@code ${VAR:-default}} from the environment. The sections' readers
 * ({@link ConfigLoader}, {@link RedisSection}, {@link PolicySection}, {@link JobsSection}) build on it.
 * Not thread-safe: one per load.
 */
class ConfigNodes {

    static final Pattern VARIABLE = Pattern.compile("\\$\\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?}");

    final String source;
    final List<ConfigProblem> problems = new ArrayList<>();
    private final Function<String, String> environment;

    ConfigNodes(String source, Function<String, String> environment) {
        this.source = source;
        this.environment = environment;
    }

    
    Optional<Map<String, Node>> mapping(Node node, String path, Set<String> allowed) {
        if (!(node instanceof MappingNode mapping)) {
            problem(node, path.isEmpty() ? "(top level)" : path, "must be a mapping, but was " + describe(node));
            return Optional.empty();
        }
        Map<String, Node> result = new LinkedHashMap<>();
        for (NodeTuple tuple : mapping.getValue()) {
            Node keyNode = tuple.getKeyNode();
            String key = keyNode instanceof ScalarNode s ? s.getValue() : String.valueOf(keyNode);
            String keyPath = path.isEmpty() ? key : path + "." + key;
            if (!allowed.contains(key)) {
                problem(keyNode, keyPath, "unknown key \"" + key + "\"" + suggestion(key, allowed));
                continue;
            }
            if (result.containsKey(key)) {
                problem(keyNode, keyPath, "duplicate key \"" + key + "\" (first at line " + line(result.get(key)) + ")");
                continue;
            }
            result.put(key, tuple.getValueNode());
        }
        return Optional.of(result);
    }

    Optional<Node> required(Map<String, Node> m, String key, Node parent, String path) {
        Node node = m.get(key);
        if (node == null || isNull(node)) {
            problem(node == null ? parent : node, path + "." + key, "is required");
            return Optional.empty();
        }
        return Optional.of(node);
    }

    Optional<String> string(Node node, String path) {
        if (node == null) {
            return Optional.empty();
        }
        if (!(node instanceof ScalarNode scalar)) {
            problem(node, path, "must be a single value, but was " + describe(node));
            return Optional.empty();
        }
        if (isNull(node)) {
            return Optional.of("");
        }
        return substitute(scalar.getValue(), node, path);
    }

    Optional<Duration> duration(Node node, String path) {
        return string(node, path).flatMap(text -> {
            Optional<Duration> d = Durations.parse(text);
            if (d.isEmpty()) {
                problem(node, path, "must be a duration like 250ms, 30s, 5m, 1h, 1d or PT30S, but was \"" + text + "\"");
            } else if (d.get().isNegative()) {
                problem(node, path, "must not be negative, but was \"" + text + "\"");
                return Optional.empty();
            }
            return d;
        });
    }

    Optional<Integer> integer(Node node, String path) {
        return string(node, path).flatMap(text -> {
            try {
                return Optional.of(Integer.parseInt(text.trim()));
            } catch (NumberFormatException e) {
                problem(node, path, "must be a whole number, but was \"" + text + "\"");
                return Optional.empty();
            }
        });
    }

    Optional<Boolean> bool(Node node, String path) {
        return string(node, path).flatMap(text -> {
            switch (text.trim().toLowerCase(Locale.ROOT)) {
                case "true":
                    return Optional.of(true);
                case "false":
                    return Optional.of(false);
                default:
                    problem(node, path, "must be true or false, but was \"" + text + "\"");
                    return Optional.empty();
            }
        });
    }

    /**
     * A list of text items ({@code what} names them in the problem), each with its node (for its
     * line) and index: empty when the node is not a list or an item is not text, each reported.
     */
    Optional<List<Map.Entry<Node, String>>> texts(Node node, String path, String what) {
        if (!(node instanceof SequenceNode sequence)) {
            problem(node, path, "must be a list of " + what + ", but was " + describe(node));
            return Optional.empty();
        }
        List<Map.Entry<Node, String>> items = new ArrayList<>();
        boolean all = true;
        for (int i = 0; i < sequence.getValue().size(); i++) {
            Node item = sequence.getValue().get(i);
            Optional<String> text = string(item, path + "[" + i + "]");
            if (text.isPresent()) {
                items.add(Map.entry(item, text.get()));
            } else {
                all = false;
            }
        }
        return all ? Optional.of(items) : Optional.empty();
    }

    /** A node as plain Java values (maps, lists, strings, numbers, booleans, null), variables replaced. */
    Object plain(Node node, String path) {
        if (node instanceof MappingNode mapping) {
            Map<String, Object> map = new LinkedHashMap<>();
            for (NodeTuple tuple : mapping.getValue()) {
                String key = tuple.getKeyNode() instanceof ScalarNode s ? s.getValue() : String.valueOf(tuple.getKeyNode());
                if (map.containsKey(key)) {
                    problem(tuple.getKeyNode(), path + "." + key, "duplicate key \"" + key + "\"");
                    continue;
                }
                map.put(key, plain(tuple.getValueNode(), path + "." + key));
            }
            return map;
        }
        if (node instanceof SequenceNode sequence) {
            List<Object> list = new ArrayList<>();
            for (int i = 0; i < sequence.getValue().size(); i++) {
                list.add(plain(sequence.getValue().get(i), path + "[" + i + "]"));
            }
            return list;
        }
        ScalarNode scalar = (ScalarNode) node;
        if (isNull(node)) {
            return null;
        }
        String text = substitute(scalar.getValue(), node, path).orElse("");
        Tag tag = scalar.getTag();
        try {
            if (Tag.INT.equals(tag)) {
                long value = Long.parseLong(text.replace("_", ""));
                return value == (int) value ? (Object) (int) value : (Object) value;
            }
            if (Tag.FLOAT.equals(tag)) {
                return Double.parseDouble(text);
            }
        } catch (NumberFormatException e) {
            return text;
        }
        if (Tag.BOOL.equals(tag)) {
            return Boolean.parseBoolean(text);
        }
        return text;
    }

    Optional<String> substitute(String value, Node node, String path) {
        Matcher m = VARIABLE.matcher(value);
        StringBuilder out = new StringBuilder();
        boolean ok = true;
        while (m.find()) {
            String name = m.group(1);
            String fromEnv = environment.apply(name);
            String replacement;
            if (m.group(2) != null) {
                replacement = fromEnv == null || fromEnv.isEmpty() ? m.group(3) : fromEnv;
            } else if (fromEnv == null) {
                problem(node, path, "environment variable " + name + " is not set (write ${" + name + ":-default} to give a default)");
                ok = false;
                replacement = "";
            } else {
                replacement = fromEnv;
            }
            m.appendReplacement(out, Matcher.quoteReplacement(replacement));
        }
        m.appendTail(out);
        return ok ? Optional.of(out.toString()) : Optional.empty();
    }

    boolean isNull(Node node) {
        return node instanceof ScalarNode && Tag.NULL.equals(node.getTag());
    }

    /** Records a problem once (a job's keys are read both as a job and as its policies). */
    void problem(Node node, String path, String message) {
        ConfigProblem p = new ConfigProblem(source, line(node), path, message);
        if (!problems.contains(p)) {
            problems.add(p);
        }
    }

    int line(Node node) {
        return node == null || node.getStartMark() == null ? 0 : node.getStartMark().getLine() + 1;
    }

    static String describe(Node node) {
        if (node instanceof MappingNode) {
            return "a mapping";
        }
        if (node instanceof SequenceNode) {
            return "a list";
        }
        if (node instanceof ScalarNode scalar) {
            return Tag.NULL.equals(scalar.getTag()) ? "empty" : "\"" + scalar.getValue() + "\"";
        }
        return "nothing";
    }

    static String suggestion(String key, Set<String> allowed) {
        String lower = key.toLowerCase(Locale.ROOT);
        if (allowed.contains("enabled") && (lower.equals("paused") || lower.equals("pause") || lower.equals("disabled"))) {
            // A job's state is not config: the YAML says whether it runs at all, an operator pauses it.
            return " (a job that must not run: \"enabled: false\"; to stop it for a while without a deploy: "
                    + "\"lockstep pause --job NAME\", then \"lockstep resume\")";
        }
        return io.lockstep.scheduler.Params.suggestion(key, allowed);
    }
}
