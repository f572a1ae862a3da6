package io.lockstep.scheduler.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/**
 * config/lockstep.schema.json (for editors) agrees with the loader: the same keys at every path,
 * config/jobs.yaml passes both, and a broken config the loader rejects for an unknown key or a
 * wrong type fails the schema too.
 */
class SchemaTest {

    private static final Path CONFIG = Path.of("..", "config");
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
    private static final ConfigLoader LOADER = ConfigLoader.defaults().checkingClasses(false);

    private static JsonNode schemaJson() throws IOException {
        return new ObjectMapper().readTree(CONFIG.resolve("lockstep.schema.json").toFile());
    }

    private static Schema schema() throws IOException {
        return SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12).getSchema(
                Files.readString(CONFIG.resolve("lockstep.schema.json")));
    }

    @Test
    void theSchemaHasExactlyTheKeysTheLoaderAccepts() throws IOException {
        Map<String, Set<String>> inSchema = new TreeMap<>();
        collect(schemaJson(), "", inSchema);
        assertThat(inSchema).isEqualTo(new TreeMap<>(ConfigLoader.acceptedKeys()));
    }

    /** Every object with declared properties, by path ({@code .*} under a mapping of names); params (free-form) declares none. */
    private static void collect(JsonNode node, String path, Map<String, Set<String>> out) {
        JsonNode props = node.path("properties");
        if (props.isObject() && props.size() > 0) {
            assertThat(node.path("additionalProperties").asBoolean(true)).as("%s allows unknown keys", path).isFalse();
            Set<String> keys = new TreeSet<>();
            for (Iterator<String> it = props.fieldNames(); it.hasNext(); ) {
                String key = it.next();
                keys.add(key);
                collect(props.get(key), path.isEmpty() ? key : path + "." + key, out);
            }
            out.put(path, keys);
        }
        if (node.has("items")) {
            collect(node.get("items"), path + "[]", out);
        }
        for (JsonNode option : node.path("anyOf")) { // a key that takes a word or a mapping (runOn)
            collect(option, path, out);
        }
        if (node.path("additionalProperties").isObject()) { // a mapping of names to objects (calendars)
            collect(node.get("additionalProperties"), path + ".*", out);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"jobs.yaml", "jobs-redlock.yaml"})
    void theExampleConfigsPassTheSchemaAndTheLoader(String file) throws IOException {
        String text = Files.readString(CONFIG.resolve(file));
        assertThat(schema().validate(YAML.readTree(text))).isEmpty();
        LOADER.load(file, text);
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "jobs:\n  - { name: a, cron: \"* * * * *\", class: x.Y, lable: 1 }\n",
        "jobs:\n  - { name: a, cron: \"* * * * *\", class: x.Y }\nworker: { threads: many }\n",
        "jobs:\n  - { name: a, cron: \"* * * * *\", class: x.Y }\ndefaults: { overlap: sometimes }\n",
        "jobs:\n  - { name: a, cron: \"* * * * *\", class: x.Y }\nredis: { timeout: 5 seconds }\n",
        "jobs:\n  - { name: a, cron: \"* * * * *\", class: x.Y, retry: { attempts: 3 } }\n",
        "jobs:\n  - { name: a, cron: \"* * * * *\", class: x.Y }\nredis: { sentinel: { master: m, nodes: [h:1], port: 2 } }\n",
        "jobs:\n  - { name: a, cron: \"* * * * *\", class: x.Y }\nworker: { http: { port: eighty } }\n",
        "jobs:\n  - { name: a, cron: \"* * * * *\", class: x.Y, enabled: maybe }\n",
        "jobs:\n  - { name: lockstep-preflight, cron: \"* * * * *\", class: x.Y }\n",
    })
    void aConfigTheLoaderRejectsForAnUnknownKeyOrAWrongTypeFailsTheSchemaToo(String yaml) throws IOException {
        assertThatThrownBy(() -> LOADER.load("jobs.yaml", yaml)).isInstanceOf(ConfigException.class);
        assertThat(schema().validate(YAML.readTree(yaml))).isNotEmpty();
    }
}
