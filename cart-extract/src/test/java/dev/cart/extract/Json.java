package dev.cart.extract;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;

/** Test-side JSON rewriting (a tree is fine here; the extractor itself never builds one). */
final class Json {

    static final ObjectMapper MAPPER = new ObjectMapper();

    private Json() {}

    static ObjectNode parse(byte[] b) {
        try {
            return (ObjectNode) MAPPER.readTree(b);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static byte[] bytes(JsonNode n) {
        try {
            return MAPPER.writeValueAsBytes(n);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static byte[] pretty(JsonNode n) {
        try {
            return MAPPER.writerWithDefaultPrettyPrinter().writeValueAsBytes(n);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A deep copy with the members of every object shuffled. */
    static JsonNode shuffled(JsonNode n, Random rnd) {
        if (n.isObject()) {
            List<Map.Entry<String, JsonNode>> fields = new ArrayList<>(n.properties());
            Collections.shuffle(fields, rnd);
            ObjectNode o = MAPPER.createObjectNode();
            for (Map.Entry<String, JsonNode> f : fields) {
                o.set(f.getKey(), shuffled(f.getValue(), rnd));
            }
            return o;
        }
        if (n.isArray()) {
            ArrayNode a = MAPPER.createArrayNode();
            for (JsonNode e : n) {
                a.add(shuffled(e, rnd));
            }
            return a;
        }
        return n;
    }

    /** The messages array of a chat or messages body, or the prompt array of a completions body; else null. */
    static ArrayNode turns(ObjectNode body) {
        JsonNode n = body.has("messages") ? body.get("messages") : body.get("prompt");
        return n instanceof ArrayNode a ? a : null;
    }
}
