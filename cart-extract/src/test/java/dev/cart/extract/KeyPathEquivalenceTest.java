package dev.cart.extract;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.longs;

import com.fasterxml.jackson.core.SerializableString;
import com.fasterxml.jackson.core.io.CharacterEscapes;
import com.fasterxml.jackson.core.io.SerializedString;
import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.cart.core.PromptKey;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The key extraction makes of a body (the byte paths: text decoded straight from the body, hashed from the
 * body and the sections' bytes) is the key a straightforward reference makes of the same text, over
 * generated chat bodies: escapes of every kind, {@code \\u} escapes, surrogate pairs raw and escaped, raw non-ASCII of two and three bytes, long plain runs and short ones, tool lists and
 * tool calls, content parts. Three properties:
 *
 * <ul>
 *   <li>the key equals {@code PromptKey.textBuilder} fed the key's text one character sequence per message
 *       through the public {@code append(CharSequence)} and {@code boundary()}: the char path, which shares
 *       none of the byte paths' code;</li>
 *   <li>for a body without tools or tool calls, that text is the one the key format prescribes (model
 *       marker, then {@code SOH role STX content} per message), computed here from the generated values;</li>
 *   <li>the same JSON value written with every non-ASCII character as a {@code \\u} escape, and pretty-printed,
 *       gives the same key as written compactly in raw UTF-8; so does the value written with every quote,
 *       backslash and control character as a {@code \\u} escape (no {@code \\n}, no {@code \\"}).</li>
 * </ul>
 */
class KeyPathEquivalenceTest {

    private static final ObjectMapper RAW = new ObjectMapper();
    private static final ObjectMapper ESCAPED =
            JsonMapper.builder().enable(JsonWriteFeature.ESCAPE_NON_ASCII).build();
    /** Writes every quote, backslash and control character as a backslash-u escape, never as {@code \n} or {@code \"}. */
    private static final ObjectMapper U_ESCAPED = new ObjectMapper();

    static {
        U_ESCAPED.getFactory().setCharacterEscapes(new UnicodeEscapes());
    }

    /** Jackson's escapes of ASCII, each written as a backslash-u escape. */
    private static final class UnicodeEscapes extends CharacterEscapes {
        private static final long serialVersionUID = 1L;
        private final int[] codes = standardAsciiEscapesForJSON();

        UnicodeEscapes() {
            for (int c = 0; c < codes.length; c++) {
                if (codes[c] != ESCAPE_NONE) {
                    codes[c] = ESCAPE_CUSTOM;
                }
            }
        }

        @Override
        public int[] getEscapeCodesForAscii() {
            return codes;
        }

        @Override
        public SerializableString getEscapeSequence(int ch) {
            return new SerializedString(String.format(java.util.Locale.ROOT, "\\u%04x", ch));
        }
    }

    /** Pieces of text: plain words, escapes Jackson writes, raw and escaped non-ASCII, emoji. */
    private static final String[] PIECES = {
        "the ",
        "of ",
        "and ",
        "route ",
        "cache ",
        "prefix ",
        "\n",
        "\n\n",
        "\t",
        "\"quoted\" ",
        "back\\slash ",
        "a/b ",
        "\r\n",
        "\b\f",
        "\u0001\u001f",
        "caf\u00e9 ",
        "na\u00efve ",
        "Stra\u00dfe ",
        "\u2014 ",
        "\u201csmart\u201d ",
        "\u65e5\u672c\u8a9e ",
        "\u4f60\u597d ",
        "\ud83d\ude00",
        "\ud83d\ude80 ",
        "\ud834\udd1e",
        "\u00bfqu\u00e9? ",
        "\uffff",
        "\u0800",
        "\u07ff",
        "\u0080",
    };

    private final ExtractOptions options = ExtractOptions.defaults();
    private final PromptExtractor extractor = new PromptExtractor(options);

    @Test
    void byteAndCharPathsGiveOneKey() {
        qt().withFixedSeed(47L).withExamples(600).forAll(longs().all()).checkAssert(seed -> {
            Generated g = generate(new SplittableRandom(seed));
            try {
                byte[] raw = RAW.writeValueAsBytes(g.body);
                PromptKey key =
                        extractor.extract(Endpoint.CHAT_COMPLETIONS, raw).key();
                String text = extractor.keyText(Endpoint.CHAT_COMPLETIONS, raw);
                assertSameKey(reference(text), key, "seed " + seed);
                if (g.expectedText != null) {
                    assertEquals(
                            g.expectedText.toString(),
                            text.replace(String.valueOf(Extraction.BOUNDARY_MARK), ""),
                            "seed " + seed);
                }
                byte[] escaped = ESCAPED.writerWithDefaultPrettyPrinter().writeValueAsBytes(g.body);
                assertSameKey(
                        key,
                        extractor.extract(Endpoint.CHAT_COMPLETIONS, escaped).key(),
                        "escaped, seed " + seed);
                // strings whose escapes are all backslash-u (a tool call's arguments too): the same key
                byte[] uEscaped = U_ESCAPED.writeValueAsBytes(g.body);
                assertSameKey(
                        key,
                        extractor.extract(Endpoint.CHAT_COMPLETIONS, uEscaped).key(),
                        "backslash-u escapes, seed " + seed);
                // a fresh extractor: no tool list cached from an earlier body
                assertSameKey(
                        key,
                        new PromptExtractor(options)
                                .extract(Endpoint.CHAT_COMPLETIONS, raw)
                                .key(),
                        "fresh, seed " + seed);
            } catch (Exception e) {
                throw new AssertionError("seed " + seed + ": " + e, e);
            }
        });
    }

    /** The key the public char path makes of {@code text} (boundaries shown as U+2016). */
    private PromptKey reference(String text) {
        PromptKey.Builder b = PromptKey.textBuilder(options.blockChars(), options.anchorLimit());
        int from = 0;
        for (int i = 0; i < text.length(); i++) {
            if (text.charAt(i) == Extraction.BOUNDARY_MARK) {
                b.append(text.subSequence(from, i)).boundary();
                from = i + 1;
            }
        }
        b.append(text.subSequence(from, text.length()));
        return b.build();
    }

    private static void assertSameKey(PromptKey expected, PromptKey actual, String what) {
        assertEquals(expected.length(), actual.length(), what + ": length");
        assertArrayEquals(expected.boundaries(), actual.boundaries(), what + ": boundaries");
        long[] e = new long[expected.blockCount()];
        long[] a = new long[actual.blockCount()];
        for (int i = 0; i < e.length; i++) {
            e[i] = expected.blockHash(i);
        }
        for (int i = 0; i < a.length; i++) {
            a[i] = actual.blockHash(i);
        }
        assertArrayEquals(e, a, what + ": block hashes");
        assertEquals(expected.anchorHash(), actual.anchorHash(), what + ": anchor");
        assertEquals(expected, actual, what);
    }

    private record Generated(ObjectNode body, StringBuilder expectedText) {}

    /** A chat body; {@code expectedText} is null when it holds tools or tool calls (canonical JSON). */
    private static Generated generate(SplittableRandom rnd) {
        ObjectNode body = RAW.createObjectNode();
        String model = rnd.nextBoolean() ? "llama-3.1-8b-instruct" : text(rnd, 1 + rnd.nextInt(4));
        boolean modelFirst = rnd.nextBoolean();
        if (modelFirst) {
            body.put("model", model);
        }
        boolean structured = false;
        if (rnd.nextInt(3) == 0) {
            structured = true;
            ArrayNode tools = body.putArray("tools");
            for (int t = 0, n = 1 + rnd.nextInt(3); t < n; t++) {
                ObjectNode f = tools.addObject().put("type", "function").putObject("function");
                f.put("name", "tool_" + t).put("description", text(rnd, rnd.nextInt(20)));
                f.putObject("parameters").put("type", "object").putObject("properties");
            }
        }
        StringBuilder expected = new StringBuilder(Extraction.modelMarker(model));
        ArrayNode messages = body.putArray("messages");
        for (int m = 0, n = 1 + rnd.nextInt(8); m < n; m++) {
            String role = m == 0 && rnd.nextBoolean() ? "system" : m % 2 == 0 ? "user" : "assistant";
            ObjectNode msg = messages.addObject().put("role", role);
            int kind = rnd.nextInt(6);
            if (kind == 0 && role.equals("assistant")) {
                structured = true;
                msg.putNull("content");
                ObjectNode call = msg.putArray("tool_calls").addObject();
                call.put("id", "call_" + m).put("type", "function");
                call.putObject("function").put("name", "tool_0").put("arguments", "{\"q\":\"" + text(rnd, 3) + "\"}");
                ObjectNode tool = messages.addObject().put("role", "tool");
                tool.put("tool_call_id", "call_" + m).put("content", text(rnd, rnd.nextInt(30)));
                continue;
            }
            String content = text(rnd, kind == 1 ? 200 + rnd.nextInt(400) : rnd.nextInt(60));
            if (kind == 2) {
                structured = true; // parts are separated in the key; left to the char-path comparison
                ArrayNode parts = msg.putArray("content");
                parts.addObject().put("type", "text").put("text", content);
                parts.addObject().put("type", "text").put("text", text(rnd, rnd.nextInt(40)));
            } else {
                msg.put("content", content);
            }
            expected.append(Extraction.SECTION)
                    .append(role)
                    .append(Extraction.LABEL_END)
                    .append(content);
        }
        if (!modelFirst) {
            body.put("model", model);
        }
        body.put("stream", rnd.nextBoolean());
        return new Generated(body, structured ? null : expected);
    }

    /** {@code pieces} pieces of text; now and then a long plain run or a NUL. */
    private static String text(SplittableRandom rnd, int pieces) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < pieces; i++) {
            int r = rnd.nextInt(40);
            if (r == 0) {
                sb.append("x".repeat(100 + rnd.nextInt(300)));
            } else if (r == 1) {
                sb.append('\u0000'); // Jackson writes it as an escape even in raw UTF-8
            } else {
                sb.append(PIECES[rnd.nextInt(PIECES.length)]);
            }
        }
        return sb.toString();
    }
}
