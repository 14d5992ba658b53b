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

/** {@link Utf8#isValid} agrees with the JDK's strict UTF-8 decoder. */
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
}
