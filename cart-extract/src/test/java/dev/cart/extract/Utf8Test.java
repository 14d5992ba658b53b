package dev.cart.extract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.longs;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@link Utf8#isValid} agrees with the JDK's strict UTF-8 decoder, and so does the check {@link JsonText}
 * makes as it copies prompt text (a body whose prompt string is not UTF-8 gets {@code invalid_encoding};
 * one that is gets the key of the text the JDK decodes).
 */
class Utf8Test {

    private static boolean jdkValid(byte[] b) {
        try {
            StandardCharsets.UTF_8
                    .newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(b));
            return true;
        } catch (CharacterCodingException e) {
            return false;
        }
    }

    @Test
    void agreesWithTheJdkDecoder() {
        qt().withFixedSeed(4242L)
                .withExamples(3000)
                .forAll(longs().all(), integers().between(0, 80))
                .checkAssert((seed, len) -> {
                    Random rnd = new Random(seed);
                    byte[] b = new byte[len];
                    for (int i = 0; i < len; i++) {
                        // mostly ASCII with runs of high bytes, so both the fast path and the slow path are hit
                        b[i] = (byte) (rnd.nextInt(4) == 0 ? 0x80 + rnd.nextInt(128) : rnd.nextInt(128));
                    }
                    if (rnd.nextBoolean()) {
                        byte[] valid = new String(b, StandardCharsets.UTF_8).getBytes(StandardCharsets.UTF_8);
                        assertEquals(jdkValid(valid), Utf8.isValid(valid));
                    }
                    assertEquals(jdkValid(b), Utf8.isValid(b));
                });
    }

    @Test
    void promptTextIsCheckedAsStrictlyAsTheJdkChecksIt() {
        PromptExtractor x =
                new PromptExtractor(ExtractOptions.builder().blockChars(16).build());
        qt().withFixedSeed(77L)
                .withExamples(3000)
                .forAll(longs().all(), integers().between(0, 90))
                .checkAssert((seed, len) -> {
                    Random rnd = new Random(seed);
                    // text of one- to four-byte characters, then some of its bytes changed at random
                    StringBuilder sb = new StringBuilder();
                    while (sb.length() < len) {
                        switch (rnd.nextInt(5)) {
                            case 0 -> sb.append((char) (0x80 + rnd.nextInt(0x780)));
                            case 1 -> sb.append((char) (0x800 + rnd.nextInt(0xD000)));
                            case 2 -> sb.appendCodePoint(0x10000 + rnd.nextInt(0x100000));
                            default -> sb.append((char) (0x20 + rnd.nextInt(0x5F)));
                        }
                    }
                    byte[] text =
                            sb.toString().replace("\\", "/").replace("\"", "'").getBytes(StandardCharsets.UTF_8);
                    int changes = rnd.nextInt(3);
                    for (int c = 0; c < changes && text.length > 0; c++) {
                        byte v = (byte) (0x80 + rnd.nextInt(128));
                        text[rnd.nextInt(text.length)] = v == '"' || v == '\\' ? (byte) 0x80 : v;
                    }
                    byte[] head =
                            "{\"messages\":[{\"role\":\"user\",\"content\":\"".getBytes(StandardCharsets.US_ASCII);
                    byte[] tail = "\"}]}".getBytes(StandardCharsets.US_ASCII);
                    byte[] body = new byte[head.length + text.length + tail.length];
                    System.arraycopy(head, 0, body, 0, head.length);
                    System.arraycopy(text, 0, body, head.length, text.length);
                    System.arraycopy(tail, 0, body, head.length + text.length, tail.length);
                    boolean valid = jdkValid(text);
                    try {
                        dev.cart.core.PromptKey key =
                                x.extract(Endpoint.CHAT_COMPLETIONS, body).key();
                        assertEquals(true, valid, "accepted a body the JDK refuses");
                        String decoded = new String(text, StandardCharsets.UTF_8);
                        assertEquals(
                                KeyPathsTest.stringKey(
                                        Extraction.modelMarker(null) + "\u0001user\u0002" + decoded + "\u2016",
                                        x.options()),
                                key);
                    } catch (ExtractionException e) {
                        assertEquals(false, valid, "refused a valid body: " + e.code());
                        assertEquals("invalid_encoding", e.code());
                    }
                });
    }
}
