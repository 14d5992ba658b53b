package dev.cart.kvevents;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.util.Iterator;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The golden payloads in {@code src/test/resources/golden}, written once by Debian's python3-msgpack in
 * vLLM's field order ({@code generate.py}), decode to what {@code expected.json} says: both encodings
 * (positional and map), both hash forms (integers on both sides of 2^63, 32-byte digests), the oldest
 * shape (two batch elements, signed hashes), and unknown tags and fields skipped and counted.
 */
class GoldenVectorsTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void everyGoldenPayloadDecodesAsExpected() throws Exception {
        JsonNode all = JSON.readTree(resource("expected.json"));
        int checked = 0;
        for (Iterator<Map.Entry<String, JsonNode>> it = all.properties().iterator(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            check(e.getKey(), e.getValue());
            checked++;
        }
        assertEquals(6, checked);
    }

    static byte[] resource(String name) throws IOException {
        try (InputStream in = GoldenVectorsTest.class.getResourceAsStream("/golden/" + name)) {
            if (in == null) {
                throw new IOException("missing golden file " + name);
            }
            return in.readAllBytes();
        }
    }

    private static void check(String file, JsonNode exp) throws Exception {
        BatchDecoder.Tally tally = new BatchDecoder.Tally();
        BatchDecoder.Batch b = BatchDecoder.decode(resource(file), tally);
        assertEquals(exp.get("ts").asDouble(), b.ts(), file);
        assertEquals(exp.get("dpRank").asInt(), b.dpRank(), file);
        assertEquals(exp.get("skippedFields").asInt(), tally.skippedFields, file + " skipped fields");
        assertEquals(exp.get("unknownTags").asInt(), tally.unknownTags, file + " unknown tags");
        assertEquals(exp.get("badEvents").asInt(), tally.badEvents, file + " bad events");
        JsonNode events = exp.get("events");
        assertEquals(events.size(), b.events().size(), file + " events");
        for (int i = 0; i < events.size(); i++) {
            JsonNode x = events.get(i);
            KvEvent e = b.events().get(i);
            String where = file + " event " + i;
            switch (x.get("type").asText()) {
                case "stored" -> {
                    assertTrue(e instanceof KvEvent.Stored, where);
                    KvEvent.Stored s = (KvEvent.Stored) e;
                    assertArrayEquals(longs(x.get("hashes")), s.hashes, where);
                    if (x.get("parent").isNull()) {
                        assertTrue(!s.hasParent, where);
                    } else {
                        assertTrue(s.hasParent, where);
                        assertEquals(Long.parseUnsignedLong(x.get("parent").asText()), s.parent, where);
                    }
                    assertArrayEquals(ints(x.get("tokens")), s.tokens, where);
                    assertEquals(x.get("blockSize").asInt(), s.blockSize, where);
                    assertEquals(text(x.get("lora")), s.lora, where);
                    assertEquals(text(x.get("salt")), s.salt, where);
                    assertEquals(tier(x.get("tier").asText()), s.tier, where);
                    assertEquals(x.get("group").asInt(), s.group, where);
                    assertEquals(x.get("fullAttention").asBoolean(), s.fullAttention, where);
                    assertNull(s.extra, where); // lora and salt are reproducible: no opaque digest
                }
                case "removed" -> {
                    assertTrue(e instanceof KvEvent.Removed, where);
                    KvEvent.Removed r = (KvEvent.Removed) e;
                    assertArrayEquals(longs(x.get("hashes")), r.hashes, where);
                    assertEquals(tier(x.get("tier").asText()), r.tier, where);
                    assertEquals(x.get("group").asInt(), r.group, where);
                }
                case "cleared" -> assertTrue(e instanceof KvEvent.Cleared, where);
                default -> throw new AssertionError("unknown expectation " + x);
            }
        }
    }

    private static int tier(String name) {
        return name.equals("GPU") ? KvEvent.GPU : KvEvent.OFFLOAD;
    }

    private static String text(JsonNode n) {
        return n == null || n.isNull() ? null : n.asText();
    }

    private static long[] longs(JsonNode a) {
        long[] out = new long[a.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = Long.parseUnsignedLong(a.get(i).asText());
        }
        return out;
    }

    private static int[] ints(JsonNode a) {
        int[] out = new int[a.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = a.get(i).asInt();
        }
        return out;
    }
}
