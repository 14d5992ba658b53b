package dev.cart.extract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Seeded mutations of the valid fixtures: truncation, JSON type flips, garbage bytes, duplicate keys,
 * deep nesting, invalid UTF-8. Whatever the input, the extractor returns a request or throws an
 * ExtractionException with a known code; any other outcome fails with the seed and case to replay it.
 */
class MutationFuzzTest {

    /** Override with {@code -Dcart.fuzz.seed=...} and {@code -Dcart.fuzz.cases=...} for a longer run by hand. */
    private static final long SEED = Long.getLong("cart.fuzz.seed", 0x5EED_CA27L);

    private static final int CASES = Integer.getInteger("cart.fuzz.cases", 4000);
    private static final Set<String> CODES = Set.of(
            "empty_body",
            "invalid_json",
            "invalid_encoding",
            "duplicate_key",
            "nesting_too_deep",
            "value_too_long",
            "limit_exceeded",
            "invalid_type",
            "missing_field",
            "invalid_value",
            "remote_media_rejected");

    private final PromptExtractor[] extractors = {
        new PromptExtractor(ExtractOptions.defaults()),
        new PromptExtractor(ExtractOptions.builder().remoteMediaUrlPolicy(451).build()),
        new PromptExtractor(ExtractOptions.builder()
                .maxNestingDepth(8)
                .maxStringLength(64)
                .blockChars(16)
                .build()),
    };

    @Test
    void mutatedBodiesYieldAKeyOrATypedError() {
        List<String> names = Fixtures.all();
        List<byte[]> bodies = names.stream().map(Fixtures::bytes).toList();
        Random rnd = new Random(SEED);
        int accepted = 0;
        Set<String> seen = new java.util.TreeSet<>();
        for (int i = 0; i < CASES; i++) {
            int f = rnd.nextInt(bodies.size());
            byte[] body = bodies.get(f);
            int mutations = 1 + rnd.nextInt(3);
            StringBuilder how = new StringBuilder();
            for (int m = 0; m < mutations; m++) {
                int kind = rnd.nextInt(8);
                how.append(kind).append(' ');
                body = mutate(body, kind, rnd);
            }
            Endpoint endpoint =
                    rnd.nextInt(10) == 0 ? Endpoint.values()[rnd.nextInt(3)] : Fixtures.endpoint(names.get(f));
            PromptExtractor x = extractors[rnd.nextInt(extractors.length)];
            byte[] mutated = body;
            try {
                ExtractedRequest r = x.extract(endpoint, body);
                assertNotNull(r.key());
                accepted++;
                // the shared extractor has seen other bodies (its tool-list cache is warm); a new one has not
                assertEquals(
                        r.key(),
                        new PromptExtractor(x.options()).extract(endpoint, body).key(),
                        "case " + i);
            } catch (ExtractionException e) {
                ExtractionException cold = assertThrows(
                        ExtractionException.class,
                        () -> new PromptExtractor(x.options()).extract(endpoint, mutated),
                        "case " + i);
                assertEquals(e.code(), cold.code(), "case " + i);
                assertEquals(e.getMessage(), cold.getMessage(), "case " + i);
                assertTrue(CODES.contains(e.code()), e.code());
                seen.add(e.code());
                assertTrue(e.status() >= 400 && e.status() <= 599);
                assertNotNull(e.getMessage());
            } catch (Throwable t) {
                fail(
                        "case " + i + " (seed " + SEED + ", fixture " + names.get(f) + ", mutations " + how + ") threw "
                                + t + "\n"
                                + new String(body, 0, Math.min(body.length, 2000), StandardCharsets.ISO_8859_1),
                        t);
            }
        }
        // Some mutations keep the body valid (a flipped type in an ignored field, say); most do not.
        assertTrue(accepted > CASES / 20 && accepted < CASES * 9 / 10, "accepted " + accepted);
        assertTrue(
                seen.containsAll(Set.of(
                        "invalid_json",
                        "invalid_encoding",
                        "duplicate_key",
                        "nesting_too_deep",
                        "invalid_type",
                        "value_too_long",
                        "remote_media_rejected")),
                "codes seen: " + seen);
    }

    static byte[] mutate(byte[] body, int kind, Random rnd) {
        switch (kind) {
            case 0: // truncate
                return java.util.Arrays.copyOf(body, rnd.nextInt(body.length + 1));
            case 1: // flip the JSON type of a random value
                return flipType(body, rnd);
            case 2: { // insert garbage bytes
                byte[] junk = new byte[1 + rnd.nextInt(4)];
                String alphabet = "{}[]\",:\\ 0a-tfn\u0000";
                for (int j = 0; j < junk.length; j++) {
                    junk[j] = rnd.nextBoolean()
                            ? (byte) alphabet.charAt(rnd.nextInt(alphabet.length()))
                            : (byte) rnd.nextInt(256);
                }
                return insert(body, rnd.nextInt(body.length + 1), junk);
            }
            case 3: // duplicate a key
                return duplicateKey(body, rnd);
            case 4: { // deep nesting around a random value
                int depth = 5 + rnd.nextInt(120);
                int at = valueStart(body, rnd);
                if (at < 0) {
                    return body;
                }
                byte[] wrapped = insert(body, at, "[".repeat(depth).getBytes(StandardCharsets.US_ASCII));
                int end = valueEnd(wrapped, at + depth);
                return end < 0
                        ? wrapped
                        : insert(wrapped, end, "]".repeat(depth).getBytes(StandardCharsets.US_ASCII));
            }
            case 5: { // invalid UTF-8
                byte[][] bad = {
                    {(byte) 0xFF},
                    {(byte) 0xC0, (byte) 0xAF},
                    {(byte) 0xED, (byte) 0xA0, (byte) 0x80},
                    {(byte) 0xE2, (byte) 0x82},
                    {(byte) 0x80},
                    {(byte) 0xF5, (byte) 0x80, (byte) 0x80, (byte) 0x80}
                };
                return insert(body, rnd.nextInt(body.length + 1), bad[rnd.nextInt(bad.length)]);
            }
            case 6: { // delete a byte range
                if (body.length == 0) {
                    return body;
                }
                int from = rnd.nextInt(body.length);
                int to = Math.min(body.length, from + 1 + rnd.nextInt(20));
                ByteArrayOutputStream out = new ByteArrayOutputStream();
                out.write(body, 0, from);
                out.write(body, to, body.length - to);
                return out.toByteArray();
            }
            default: // reorder members and change whitespace: stays valid
                try {
                    return Json.pretty(Json.shuffled(Json.MAPPER.readTree(body), rnd));
                } catch (Exception e) {
                    return body;
                }
        }
    }

    private static byte[] insert(byte[] body, int at, byte[] what) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(body, 0, at);
        out.writeBytes(what);
        out.write(body, at, body.length - at);
        return out.toByteArray();
    }

    private static byte[] flipType(byte[] body, Random rnd) {
        JsonNode root;
        try {
            root = Json.MAPPER.readTree(body);
        } catch (Exception e) {
            return body;
        }
        if (root == null || !root.isContainerNode()) {
            return body;
        }
        List<JsonNode> containers = new ArrayList<>();
        collect(root, containers);
        JsonNode c = containers.get(rnd.nextInt(containers.size()));
        JsonNode replacement = switch (rnd.nextInt(7)) {
            case 0 -> JsonNodeFactory.instance.numberNode(rnd.nextInt(100) - 50);
            case 1 -> JsonNodeFactory.instance.textNode("flipped");
            case 2 -> JsonNodeFactory.instance.booleanNode(rnd.nextBoolean());
            case 3 -> JsonNodeFactory.instance.nullNode();
            case 4 -> JsonNodeFactory.instance.arrayNode().add(1).add("x");
            case 5 -> JsonNodeFactory.instance.objectNode().put("type", "text");
            default -> JsonNodeFactory.instance.numberNode(1.5e300);
        };
        if (c instanceof ObjectNode o && o.size() > 0) {
            List<String> keys = new ArrayList<>();
            for (Iterator<String> it = o.fieldNames(); it.hasNext(); ) {
                keys.add(it.next());
            }
            o.set(keys.get(rnd.nextInt(keys.size())), replacement);
        } else if (c instanceof ArrayNode a && a.size() > 0) {
            a.set(rnd.nextInt(a.size()), replacement);
        }
        return Json.bytes(root);
    }

    private static void collect(JsonNode n, List<JsonNode> out) {
        if (n.isContainerNode()) {
            out.add(n);
            if (n.isObject()) {
                for (Map.Entry<String, JsonNode> e : n.properties()) {
                    collect(e.getValue(), out);
                }
            } else {
                for (JsonNode e : n) {
                    collect(e, out);
                }
            }
        }
    }

    /** Inserts {@code "k":null,} right after a random {@code {}, duplicating the object's first key. */
    private static byte[] duplicateKey(byte[] body, Random rnd) {
        String s = new String(body, StandardCharsets.ISO_8859_1);
        List<Integer> opens = new ArrayList<>();
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) == '{') {
                opens.add(i);
            }
        }
        if (opens.isEmpty()) {
            return body;
        }
        int at = opens.get(rnd.nextInt(opens.size()));
        int q1 = s.indexOf('"', at);
        int q2 = q1 < 0 ? -1 : s.indexOf('"', q1 + 1);
        if (q2 < 0) {
            return body;
        }
        String dup = s.substring(q1, q2 + 1) + ":null,";
        return insert(body, at + 1, dup.getBytes(StandardCharsets.ISO_8859_1));
    }

    /** Offset of a random ':' followed by a value start, or -1. */
    private static int valueStart(byte[] b, Random rnd) {
        List<Integer> colons = new ArrayList<>();
        for (int i = 0; i < b.length; i++) {
            if (b[i] == ':') {
                colons.add(i + 1);
            }
        }
        return colons.isEmpty() ? -1 : colons.get(rnd.nextInt(colons.size()));
    }

    /** End offset of the JSON value starting at {@code at} (whitespace skipped), roughly; -1 if not found. */
    private static int valueEnd(byte[] b, int at) {
        int i = at;
        while (i < b.length && (b[i] == ' ' || b[i] == '\n')) {
            i++;
        }
        int depth = 0;
        boolean inString = false;
        for (; i < b.length; i++) {
            byte c = b[i];
            if (inString) {
                if (c == '\\') {
                    i++;
                } else if (c == '"') {
                    inString = false;
                    if (depth == 0) {
                        return i + 1;
                    }
                }
            } else if (c == '"') {
                inString = true;
            } else if (c == '{' || c == '[') {
                depth++;
            } else if (c == '}' || c == ']') {
                if (depth == 0) {
                    return i;
                }
                depth--;
                if (depth == 0) {
                    return i + 1;
                }
            } else if (depth == 0 && (c == ',')) {
                return i;
            }
        }
        return -1;
    }
}
