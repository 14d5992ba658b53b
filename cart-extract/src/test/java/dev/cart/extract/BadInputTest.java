package dev.cart.extract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/** Every class of malformed body gives an ExtractionException with status 400, a code and a path. */
class BadInputTest {

    private static final String SECRET = "TOP-SECRET-PROMPT-TEXT";
    private static final String CHAT =
            "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"" + SECRET + "\"}]}";

    private final PromptExtractor extractor = new PromptExtractor(ExtractOptions.defaults());

    private ExtractionException fails(Endpoint e, byte[] body, String code, String param) {
        return fails(extractor, e, body, code, param);
    }

    private ExtractionException fails(Endpoint e, String body, String code, String param) {
        return fails(extractor, e, body.getBytes(StandardCharsets.UTF_8), code, param);
    }

    private static ExtractionException fails(PromptExtractor x, Endpoint e, byte[] body, String code, String param) {
        ExtractionException ex = assertThrows(ExtractionException.class, () -> x.extract(e, body));
        assertEquals(400, ex.status(), ex.getMessage());
        assertEquals(code, ex.code(), ex.getMessage());
        assertEquals(param, ex.param(), ex.getMessage());
        assertEquals("invalid_request_error", ex.type());
        assertFalse(ex.getMessage().contains(SECRET), ex.getMessage());
        assertFalse(ex.getMessage().isBlank());
        return ex;
    }

    private static byte[] concat(String a, byte[] mid, String b) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(a.getBytes(StandardCharsets.UTF_8));
        out.writeBytes(mid);
        out.writeBytes(b.getBytes(StandardCharsets.UTF_8));
        return out.toByteArray();
    }

    /**
     * The exception is unchecked: extraction fits where no checked exception may pass (a
     * {@link Function}, a stream, a reactive operator), and the error arrives whole at the caller.
     */
    @Test
    void anExtractionErrorPassesThroughCodeThatDeclaresNoException() {
        Function<byte[], ExtractedRequest> read = body -> extractor.extract(Endpoint.CHAT_COMPLETIONS, body);
        ExtractionException ex = assertThrows(
                ExtractionException.class, () -> read.apply("{\"messages\":[]}".getBytes(StandardCharsets.UTF_8)));
        assertEquals("invalid_value", ex.code());
        assertEquals(400, ex.status());
    }

    @Test
    void emptyBody() {
        fails(Endpoint.CHAT_COMPLETIONS, new byte[0], "empty_body", null);
        fails(Endpoint.COMPLETIONS, " \r\n\t ", "empty_body", null);
    }

    @Test
    void invalidJson() {
        fails(Endpoint.CHAT_COMPLETIONS, CHAT.substring(0, CHAT.length() - 3), "invalid_json", null);
        fails(Endpoint.CHAT_COMPLETIONS, "{\"model\" \"m\"}", "invalid_json", null);
        fails(Endpoint.CHAT_COMPLETIONS, "{'model':'m'}", "invalid_json", null);
        fails(
                Endpoint.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"content\":\"" + SECRET + "\n\"}]}",
                "invalid_json",
                null);
        fails(Endpoint.CHAT_COMPLETIONS, "{\"messages\":[" + SECRET + "]}", "invalid_json", null);
        fails(Endpoint.COMPLETIONS, "{\"prompt\":NaN}", "invalid_json", null);
    }

    @Test
    void trailingGarbage() {
        fails(Endpoint.CHAT_COMPLETIONS, CHAT + " x", "invalid_json", null);
        fails(Endpoint.CHAT_COMPLETIONS, CHAT + CHAT, "invalid_json", null);
        fails(Endpoint.CHAT_COMPLETIONS, CHAT + "]", "invalid_json", null);
        extractorAccepts(CHAT + " \n\t");
    }

    private void extractorAccepts(String body) {
        try {
            extractor.extract(Endpoint.CHAT_COMPLETIONS, body.getBytes(StandardCharsets.UTF_8));
        } catch (ExtractionException e) {
            throw new AssertionError(e.code(), e);
        }
    }

    @Test
    void bodyNotAnObject() {
        for (String b : new String[] {"[]", "\"" + SECRET + "\"", "1", "null", "true"}) {
            fails(Endpoint.MESSAGES, b, "invalid_type", null);
        }
    }

    @Test
    void wrongTypes() {
        fails(Endpoint.CHAT_COMPLETIONS, "{\"messages\":{\"role\":\"user\"}}", "invalid_type", "messages");
        fails(Endpoint.CHAT_COMPLETIONS, "{\"messages\":null}", "invalid_type", "messages");
        fails(Endpoint.CHAT_COMPLETIONS, "{\"messages\":[\"" + SECRET + "\"]}", "invalid_type", "messages[0]");
        fails(
                Endpoint.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"content\":42}]}",
                "invalid_type",
                "messages[0].content");
        fails(
                Endpoint.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":7,\"content\":\"x\"}]}",
                "invalid_type",
                "messages[0].role");
        fails(
                Endpoint.CHAT_COMPLETIONS,
                "{\"messages\":[{\"content\":\"x\",\"role\":[]}]}",
                "invalid_type",
                "messages[0].role");
        fails(
                Endpoint.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"content\":[\"" + SECRET + "\"]}]}",
                "invalid_type",
                "messages[0].content[0]");
        fails(
                Endpoint.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":1,\"text\":\"x\"}]}]}",
                "invalid_type",
                "messages[0].content[0].type");
        fails(
                Endpoint.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":5}]}]}",
                "invalid_type",
                "messages[0].content[0].text");
        fails(
                Endpoint.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":5,\"type\":\"text\"}]}]}",
                "invalid_type",
                "messages[0].content[0].text");
        fails(
                Endpoint.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":3}]}]}",
                "invalid_type",
                "messages[0].content[0].image_url");
        fails(
                Endpoint.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":{}}]}",
                "invalid_type",
                "messages[0].tool_calls");
        fails(
                Endpoint.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"name\":false}]}",
                "invalid_type",
                "messages[0].name");
        fails(Endpoint.CHAT_COMPLETIONS, "{\"model\":3,\"messages\":[]}", "invalid_type", "model");
        fails(Endpoint.CHAT_COMPLETIONS, "{\"stream\":\"yes\",\"messages\":[]}", "invalid_type", "stream");
        fails(Endpoint.CHAT_COMPLETIONS, "{\"tools\":{},\"messages\":[]}", "invalid_type", "tools");
        fails(Endpoint.COMPLETIONS, "{\"prompt\":{}}", "invalid_type", "prompt");
        fails(Endpoint.COMPLETIONS, "{\"prompt\":[1.5]}", "invalid_type", "prompt[0]");
        fails(Endpoint.COMPLETIONS, "{\"prompt\":[1,\"a\"]}", "invalid_type", "prompt[1]");
        fails(Endpoint.COMPLETIONS, "{\"prompt\":[\"a\",{}]}", "invalid_type", "prompt[1]");
        fails(Endpoint.COMPLETIONS, "{\"prompt\":[[1,2],[3,true]]}", "invalid_type", "prompt[1][1]");
        fails(Endpoint.MESSAGES, "{\"system\":5,\"messages\":[]}", "invalid_type", "system");
        fails(
                Endpoint.MESSAGES,
                "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\",\"source\":\"x\"}]}]}",
                "invalid_type",
                "messages[0].content[0].source");
        fails(
                Endpoint.MESSAGES,
                "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"content\":9}]}]}",
                "invalid_type",
                "messages[0].content[0].content");
    }

    @Test
    void invalidValues() {
        fails(Endpoint.CHAT_COMPLETIONS, "{\"model\":\"m\",\"messages\":[]}", "invalid_value", "messages");
        fails(Endpoint.MESSAGES, "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[]}", "invalid_value", "messages");
        fails(Endpoint.COMPLETIONS, "{\"prompt\":[1,-2]}", "invalid_value", "prompt[1]");
        fails(Endpoint.COMPLETIONS, "{\"prompt\":[[3000000000]]}", "invalid_value", "prompt[0][0]");
    }

    @Test
    void missingFields() {
        fails(Endpoint.CHAT_COMPLETIONS, "{\"model\":\"m\"}", "missing_field", "messages");
        fails(Endpoint.MESSAGES, "{\"model\":\"m\",\"system\":\"s\"}", "missing_field", "messages");
        fails(
                Endpoint.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\"},{\"content\":\"" + SECRET + "\"}]}",
                "missing_field",
                "messages[1].role");
        fails(Endpoint.CHAT_COMPLETIONS, "{\"messages\":[{}]}", "missing_field", "messages[0].role");
        fails(
                Endpoint.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":\"" + SECRET + "\"}]}]}",
                "missing_field",
                "messages[0].content[0].type");
        fails(
                Endpoint.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\"}]}]}",
                "missing_field",
                "messages[0].content[0].text");
        fails(
                Endpoint.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{}}]}]}",
                "missing_field",
                "messages[0].content[0].image_url.url");
        fails(
                Endpoint.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}",
                "missing_field",
                "messages[0].content[0].image_url");
        fails(
                Endpoint.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_audio\",\"input_audio\":{\"format\":\"wav\"}}]}]}",
                "missing_field",
                "messages[0].content[0].input_audio.data");
        fails(
                Endpoint.MESSAGES,
                "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\"}]}]}",
                "missing_field",
                "messages[0].content[0].source");
        fails(
                Endpoint.MESSAGES,
                "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\",\"source\":{\"data\":\"AAAA\"}}]}]}",
                "missing_field",
                "messages[0].content[0].source.type");
        fails(
                Endpoint.MESSAGES,
                "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\",\"source\":{\"type\":\"base64\"}}]}]}",
                "missing_field",
                "messages[0].content[0].source.data");
        fails(
                Endpoint.MESSAGES,
                "{\"messages\":[{\"role\":\"user\",\"content\":[{\"source\":{\"media_type\":\"image/png\",\"type\":\"base64\"},\"type\":\"image\"}]}]}",
                "missing_field",
                "messages[0].content[0].source.data");
    }

    @Test
    void deepNesting() {
        String deep = "[".repeat(200) + "]".repeat(200);
        ExtractionException e = fails(
                Endpoint.CHAT_COMPLETIONS,
                "{\"x_extension\":" + deep + ",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
                "nesting_too_deep",
                "x_extension" + "[0]".repeat(63));
        assertFalse(e.getMessage().contains("StreamReadConstraints"));
        PromptExtractor shallow =
                new PromptExtractor(ExtractOptions.builder().maxNestingDepth(5).build());
        fails(
                shallow,
                Endpoint.CHAT_COMPLETIONS,
                ("{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\","
                                + "\"image_url\":{\"url\":\"data:,\"}}]}]}")
                        .getBytes(StandardCharsets.UTF_8),
                "nesting_too_deep",
                "messages[0].content[0].image_url");
    }

    @Test
    void invalidUtf8() {
        byte[][] bad = {
            {(byte) 0xFF},
            {(byte) 0xC3, (byte) 0x28},
            {(byte) 0xE2, (byte) 0x82},
            {(byte) 0x80},
            {(byte) 0xC0, (byte) 0xAF},
            {(byte) 0xE0, (byte) 0x80, (byte) 0xAF},
            {(byte) 0xED, (byte) 0xA0, (byte) 0x80},
            {(byte) 0xF5, (byte) 0x80, (byte) 0x80, (byte) 0x80},
            {(byte) 0xF4, (byte) 0x90, (byte) 0x80, (byte) 0x80}
        };
        for (byte[] b : bad) {
            fails(
                    Endpoint.CHAT_COMPLETIONS,
                    concat("{\"messages\":[{\"role\":\"user\",\"content\":\"ab", b, "cd\"}]}"),
                    "invalid_encoding",
                    null);
            // in a value CART skips, in a field name, and in inline media hashed straight from the bytes
            fails(
                    Endpoint.CHAT_COMPLETIONS,
                    concat("{\"metadata\":\"", b, "\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"),
                    "invalid_encoding",
                    null);
            fails(
                    Endpoint.CHAT_COMPLETIONS,
                    concat("{\"x", b, "\":1,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"),
                    "invalid_encoding",
                    null);
            fails(
                    Endpoint.MESSAGES,
                    concat(
                            "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\",\"source\":"
                                    + "{\"type\":\"base64\",\"media_type\":\"image/png\",\"data\":\"AAAA",
                            b,
                            "AAAA\"}}]}]}"),
                    "invalid_encoding",
                    null);
            // in text decoded into the key after other text, in an object read twice (role not first), in a
            // tool, and before a syntax error or a wrong type: the encoding is the error reported
            fails(
                    Endpoint.CHAT_COMPLETIONS,
                    concat("{\"messages\":[{\"role\":\"user\",\"content\":\"caf\u00e9 \\n 0123456789", b, "\"}]}"),
                    "invalid_encoding",
                    null);
            fails(
                    Endpoint.CHAT_COMPLETIONS,
                    concat("{\"messages\":[{\"content\":\"x", b, "\",\"role\":\"user\"}]}"),
                    "invalid_encoding",
                    null);
            fails(
                    Endpoint.CHAT_COMPLETIONS,
                    concat(
                            "{\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f",
                            b,
                            "\"}}],\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"),
                    "invalid_encoding",
                    null);
            fails(
                    Endpoint.CHAT_COMPLETIONS,
                    concat("{\"messages\":[{\"role\":\"user\",\"content\":\"x", b, "\"}]"),
                    "invalid_encoding",
                    null);
            fails(
                    Endpoint.CHAT_COMPLETIONS,
                    concat("{\"messages\":[{\"role\":\"user\",\"content\":\"x", b, "\"}],\"stream\":7}"),
                    "invalid_encoding",
                    null);
        }
        fails(Endpoint.CHAT_COMPLETIONS, CHAT.getBytes(StandardCharsets.UTF_16BE), "invalid_encoding", null);
        fails(Endpoint.CHAT_COMPLETIONS, CHAT.getBytes(StandardCharsets.UTF_16), "invalid_encoding", null);
        fails(Endpoint.CHAT_COMPLETIONS, CHAT.getBytes(StandardCharsets.UTF_16LE), "invalid_encoding", null);
    }

    @Test
    void validMultiByteTextIsAccepted() throws Exception {
        String text = "caf\u00e9 \u65e5\u672c\u8a9e \ud83d\ude00 \u0444";
        byte[] raw =
                ("{\"messages\":[{\"role\":\"user\",\"content\":\"" + text + "\"}]}").getBytes(StandardCharsets.UTF_8);
        for (int pad = 0; pad < 40; pad++) { // non-ASCII at every alignment of the 16-byte fast path
            byte[] b = ("{\"p\":\"" + "x".repeat(pad) + "\","
                            + new String(raw, 1, raw.length - 1, StandardCharsets.UTF_8))
                    .getBytes(StandardCharsets.UTF_8);
            assertEquals(
                    extractor.extract(Endpoint.CHAT_COMPLETIONS, raw).key(),
                    extractor.extract(Endpoint.CHAT_COMPLETIONS, b).key());
        }
        assertFalse(Utf8.isValid(new byte[] {(byte) 0xF0, (byte) 0x9F, (byte) 0x98}));
        assertEquals(true, Utf8.isValid("\ud83d\ude00".getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void utf8ByteOrderMarkIsTolerated() throws Exception {
        byte[] withBom = concat("", new byte[] {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF}, CHAT);
        assertEquals(
                extractor
                        .extract(Endpoint.CHAT_COMPLETIONS, CHAT.getBytes(StandardCharsets.UTF_8))
                        .key(),
                extractor.extract(Endpoint.CHAT_COMPLETIONS, withBom).key());
        byte[] media = concat(
                "",
                new byte[] {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF},
                "{\"messages\":[{\"content\":["
                        + "{\"image_url\":{\"url\":\"data:image/png;base64,AAAA\"},\"type\":\"image_url\"}],\"role\":\"user\"}]}");
        assertEquals(
                extractor.keyText(Endpoint.CHAT_COMPLETIONS, media),
                extractor.keyText(
                        Endpoint.CHAT_COMPLETIONS,
                        ("{\"messages\":[{\"role\":\"user\",\"content\":["
                                        + "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,AAAA\"}}]}]}")
                                .getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void duplicateKeys() {
        fails(
                Endpoint.CHAT_COMPLETIONS,
                "{\"model\":\"a\",\"model\":\"b\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
                "duplicate_key",
                "model");
        fails(
                Endpoint.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"role\":\"system\",\"content\":\"x\"}]}",
                "duplicate_key",
                "messages[0].role");
        fails(
                Endpoint.CHAT_COMPLETIONS,
                "{\"messages\":[{\"content\":\"x\",\"content\":\"y\",\"role\":\"user\"}]}",
                "duplicate_key",
                "messages[0].content");
        fails(
                Endpoint.CHAT_COMPLETIONS,
                "{\"metadata\":{\"k\":1,\"k\":2},\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
                "duplicate_key",
                "metadata.k");
        fails(
                Endpoint.MESSAGES,
                "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\",\"text\":\"b\"}]}]}",
                "duplicate_key",
                "messages[0].content[0].text");
    }

    @Test
    void valuesTooLong() {
        PromptExtractor small = new PromptExtractor(
                ExtractOptions.builder().maxStringLength(100).build());
        String longText = "y".repeat(101);
        fails(
                small,
                Endpoint.CHAT_COMPLETIONS,
                ("{\"messages\":[{\"role\":\"user\",\"content\":\"" + longText + "\"}]}")
                        .getBytes(StandardCharsets.UTF_8),
                "value_too_long",
                "messages[0].content");
        fails(
                small,
                Endpoint.CHAT_COMPLETIONS,
                ("{\"messages\":[{\"content\":\"" + longText + "\",\"role\":\"user\"}]}")
                        .getBytes(StandardCharsets.UTF_8),
                "value_too_long",
                "messages[0].content");
        fails(
                small,
                Endpoint.MESSAGES,
                ("{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\",\"source\":"
                                + "{\"type\":\"base64\",\"data\":\"" + longText + "\"}}]}]}")
                        .getBytes(StandardCharsets.UTF_8),
                "value_too_long",
                "messages[0].content[0].source.data");
    }

    @Test
    void jacksonMessagesAreNeverPassedOn() {
        ExtractionException e =
                fails(Endpoint.CHAT_COMPLETIONS, "{\"messages\":[" + SECRET + "]}", "invalid_json", null);
        assertFalse(e.getMessage().contains("Unrecognized"), e.getMessage());
        assertFalse(e.getMessage().contains("TOP"), e.getMessage());
    }

    private static String nestedTypeLast(int levels, String text) {
        String inner = "{\"text\":\"" + text + "\",\"type\":\"text\"}";
        for (int i = 0; i < levels; i++) {
            inner = "{\"tool_use_id\":\"t" + i + "\",\"content\":[" + inner + "],\"type\":\"tool_result\"}";
        }
        return "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"content\":[" + inner + "],\"role\":\"user\"}]}";
    }

    @Test
    void reReadingOutOfOrderObjectsIsBoundedSoABodyCannotMakeExtractionQuadratic() throws Exception {
        // A few levels with 'type' last are fine, as real clients send them.
        extractor.extract(
                Endpoint.MESSAGES, nestedTypeLast(3, "x".repeat(100_000)).getBytes(StandardCharsets.UTF_8));
        // Twenty levels over a large text would be re-read twenty times: refused instead.
        ExtractionException e = assertThrows(
                ExtractionException.class,
                () -> extractor.extract(
                        Endpoint.MESSAGES,
                        nestedTypeLast(20, "x".repeat(200_000)).getBytes(StandardCharsets.UTF_8)));
        assertEquals(400, e.status());
        assertEquals("too_complex", e.code());
    }
}
