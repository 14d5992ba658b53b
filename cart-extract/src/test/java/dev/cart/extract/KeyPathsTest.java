package dev.cart.extract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;

import dev.cart.core.PromptKey;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Text copied from the body bytes (UTF-8 copied as it is, escapes decoded, four-byte sequences rewritten as
 * their surrogates, blocks hashed from the bytes) gives the key that the same characters give when appended as a String: the key of the
 * text Jackson decodes, whatever mix of raw UTF-8, JSON escapes and surrogate pairs encoded it, and
 * wherever the blocks' edges fall (inside multi-byte sequences and escapes too).
 */
class KeyPathsTest {

    @Test
    void bytesAndStringsGiveTheSameKey() {
        qt().withFixedSeed(20261201L)
                .withExamples(400)
                .forAll(
                        integers().between(0, 900),
                        integers().between(1, 70),
                        integers().all(),
                        integers().between(0, 3))
                .checkAssert((len, block, seed, shape) -> {
                    SplittableRandom rnd = new SplittableRandom(seed);
                    String system = text(rnd, len, true);
                    String user = text(rnd, rnd.nextInt(0, 300), true);
                    String body;
                    Endpoint endpoint;
                    String expected;
                    String marker = Extraction.modelMarker("m");
                    if (shape == 0) {
                        endpoint = Endpoint.CHAT_COMPLETIONS;
                        body = "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":" + json(rnd, system)
                                + "},{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":" + json(rnd, user)
                                + "}]}]}";
                        expected = marker + "\u0001system\u0002" + system + "\u2016\u0001user\u0002" + user + "\u2016";
                    } else if (shape == 1) {
                        endpoint = Endpoint.MESSAGES;
                        body = "{\"model\":\"m\",\"system\":" + json(rnd, system) + ",\"messages\":[{\"role\":\"user\","
                                + "\"content\":" + json(rnd, user) + "}]}";
                        expected = marker + "\u0001system\u0002" + system + "\u2016\u0001user\u0002" + user + "\u2016";
                    } else if (shape == 3) {
                        // tool definitions: canonical JSON written as UTF-8, then rewritten into the key's bytes
                        endpoint = Endpoint.CHAT_COMPLETIONS;
                        body = "{\"model\":\"m\",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":"
                                + json(rnd, user) + ",\"description\":" + json(rnd, system)
                                + "}}],\"messages\":[{\"role\":\"user\",\"content\":" + json(rnd, user) + "}]}";
                        expected = null; // the canonical form is KeyFormatTest's; here only the paths agree
                    } else {
                        endpoint = Endpoint.COMPLETIONS;
                        body = "{\"model\":\"m\",\"prompt\":" + json(rnd, system + user) + "}";
                        expected = system.isEmpty() && user.isEmpty() ? "" : marker + system + user;
                    }
                    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
                    PromptExtractor x = new PromptExtractor(ExtractOptions.builder()
                            .blockChars(block)
                            .anchorLimit(1 + rnd.nextInt(400))
                            .build());
                    try {
                        String keyText = x.keyText(endpoint, bytes);
                        if (expected != null) {
                            assertEquals(expected, keyText);
                        }
                        assertEquals(
                                stringKey(keyText, x.options()),
                                x.extract(endpoint, bytes).key());
                    } catch (ExtractionException e) {
                        throw new AssertionError(e.code() + " " + e.param(), e);
                    }
                });
    }

    /** The key of {@code keyText} (boundaries shown as U+2016), built from Strings. */
    static PromptKey stringKey(String keyText, ExtractOptions o) {
        if (keyText.isEmpty()) {
            return PromptKey.empty();
        }
        PromptKey.Builder b = PromptKey.textBuilder(o.blockChars(), o.anchorLimit());
        for (String part : keyText.split("\u2016", -1)) {
            b.append(part).boundary();
        }
        if (!keyText.endsWith("\u2016")) {
            // the last part had no boundary after it: rebuild without the trailing one
            b = PromptKey.textBuilder(o.blockChars(), o.anchorLimit());
            String[] parts = keyText.split("\u2016", -1);
            for (int i = 0; i < parts.length; i++) {
                b.append(parts[i]);
                if (i < parts.length - 1) {
                    b.boundary();
                }
            }
        }
        return b.build();
    }

    /**
     * Text in runs of ASCII, control characters, Latin-1, other BMP characters, surrogate pairs and lone
     * surrogates (which may happen to pair up).
     */
    static String text(SplittableRandom rnd, int len) {
        return text(rnd, len, false);
    }

    /** As {@link #text(SplittableRandom, int)}, with {@code lone}: lone surrogates and U+E000 to U+FFFF too. */
    static String text(SplittableRandom rnd, int len, boolean lone) {
        StringBuilder sb = new StringBuilder();
        while (sb.length() < len) {
            int kind = rnd.nextInt(12);
            int run = rnd.nextInt(1, 40);
            for (int k = 0; k < run; k++) {
                switch (kind) {
                    case 0 -> sb.append((char) rnd.nextInt(0x80, 0x100));
                    case 1 -> sb.append((char) rnd.nextInt(0x100, 0x2016));
                    case 2 -> sb.append((char) rnd.nextInt(0x2017, 0xD800));
                    case 3 -> sb.appendCodePoint(rnd.nextInt(0x10000, 0x110000));
                    case 4 -> sb.append((char) rnd.nextInt(0, 0x20));
                    case 5 -> sb.append("\"\\/\n\t".charAt(rnd.nextInt(5)));
                    case 6 -> sb.append(lone ? (char) rnd.nextInt(0xD800, 0xE000) : (char) rnd.nextInt(0x20, 0x7F));
                    case 7 -> sb.append(lone ? (char) rnd.nextInt(0xE000, 0x10000) : (char) rnd.nextInt(0x20, 0x7F));
                    default -> sb.append((char) rnd.nextInt(0x20, 0x7F));
                }
            }
        }
        return sb.toString();
    }

    /**
     * {@code s} as a JSON string, each character written raw (as UTF-8) or escaped at random; control
     * characters, quotes and backslashes always escaped, a supplementary character raw or as a pair of
     * escapes.
     */
    static String json(SplittableRandom rnd, String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            boolean escape = rnd.nextInt(5) == 0;
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append(escape ? "\\u000a" : "\\n");
                case '\t' -> sb.append(escape ? "\\u0009" : "\\t");
                case '/' -> sb.append(escape ? "\\/" : "/");
                default -> {
                    if (Character.isHighSurrogate(c)
                            && i + 1 < s.length()
                            && Character.isLowSurrogate(s.charAt(i + 1))) {
                        char low = s.charAt(++i);
                        sb.append(escape ? String.format("\\u%04x\\u%04X", (int) c, (int) low) : "" + c + low);
                    } else if (c < 0x20 || escape || Character.isSurrogate(c)) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        return sb.append('"').toString();
    }
}
