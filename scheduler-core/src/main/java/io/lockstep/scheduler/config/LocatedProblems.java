package io.lockstep.scheduler.config;

import java.io.StringReader;
import java.util.ArrayList;
import java.util.List;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.error.YAMLException;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;

/**
 * Gives a line to the params problems raised after a load, for {@link ConfigLoader#located}: a job
 * an application's factory built is checked against its params type only then, and its problem
 * reads {@code job NAME: params...} with no line. Read again, the YAML it came from tells where that
 * job and that key are, so the problem can read {@code source:line: jobs[i].params.key: ...}, as the
 * loader reports the jobs it builds itself.
 *
 * <p>Apart from the loader because it loads nothing: it reads the text only to find nodes, never
 * fails (YAML it cannot read, or a problem it cannot place, leaves the problems as they are), and
 * runs long after the load, on a problem the loader never saw. Stateless.
 */
final class LocatedProblems {

    private LocatedProblems() {}

    /** {@code e}'s problems, those of a job's params placed in {@code text}, which {@code source} names. */
    static ConfigException in(String source, String text, ConfigException e) {
        Node root;
        try {
            LoaderOptions options = new LoaderOptions();
            options.setMaxAliasesForCollections(ConfigFile.MAX_ALIASES);
            options.setCodePointLimit((int) ConfigFile.MAX_BYTES);
            root = new Yaml(options).compose(new StringReader(text));
        } catch (YAMLException unreadable) {
            return e;
        }
        Node jobs = root instanceof MappingNode top ? value(top, "jobs") : null;
        List<ConfigProblem> placed = new ArrayList<>();
        for (ConfigProblem p : e.problems()) {
            ConfigProblem at = p;
            if (p.line() == 0 && p.file().startsWith("job ") && p.path().startsWith("params") && jobs instanceof SequenceNode list) {
                String name = p.file().substring(4);
                for (int i = 0; i < list.getValue().size(); i++) {
                    Node job = list.getValue().get(i);
                    if (job instanceof MappingNode m && value(m, "name") instanceof ScalarNode n && n.getValue().equals(name)) {
                        Node where = job;
                        Node params = value(m, "params");
                        String first = p.path().length() > "params.".length() ? p.path().substring("params.".length()).split("[.\\[]")[0] : "";
                        if (params instanceof MappingNode pm) {
                            where = params;
                            for (NodeTuple t : pm.getValue()) {
                                if (t.getKeyNode() instanceof ScalarNode k && k.getValue().equals(first)) {
                                    where = t.getKeyNode();
                                }
                            }
                        }
                        at = new ConfigProblem(source, where.getStartMark().getLine() + 1, "jobs[" + i + "]." + p.path(), p.message());
                        break;
                    }
                }
            }
            placed.add(at);
        }
        return new ConfigException(placed);
    }

    private static Node value(MappingNode map, String key) {
        for (NodeTuple t : map.getValue()) {
            if (t.getKeyNode() instanceof ScalarNode k && k.getValue().equals(key)) {
                return t.getValueNode();
            }
        }
        return null;
    }
}
