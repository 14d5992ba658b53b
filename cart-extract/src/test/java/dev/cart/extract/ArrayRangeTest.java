package dev.cart.extract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@link PromptExtractor#extract(Endpoint, byte[], int, int)} over a body that sits inside a larger array
 * (a pooled buffer's backing array) gives exactly what extracting a copy of the body gives: the same key,
 * model and stream flag, or the same error with the same message, whatever the bytes around the body. The
 * bytes after it are chosen to mislead a reader that runs past the body's end: a closing quote and brace
 * (a truncated string or object would "end" there), JSON that continues a cut value, or invalid UTF-8.
 */
class ArrayRangeTest {

    private static final List<byte[]> AROUND = List.of(
            "\"}]}".getBytes(StandardCharsets.US_ASCII),
            "\"},{\"role\":\"user\",\"content\":\"more\"}]}".getBytes(StandardCharsets.US_ASCII),
            "0123456789abcdef\"\\n\\u0041}".getBytes(StandardCharsets.US_ASCII),
            new byte[] {(byte) 0xFF, (byte) 0xC0, 0, '"', '}'},
            new byte[] {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', '}'});

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
    void fixturesInsideALargerArrayGiveTheirKeys() throws ExtractionException {
        for (String name : Fixtures.all()) {
            byte[] body = Fixtures.bytes(name);
            for (byte[] around : AROUND) {
                for (PromptExtractor x : extractors) {
                    same(x, Fixtures.endpoint(name), body, around, name);
                }
            }
        }
    }

    @Test
    void mutatedBodiesInsideALargerArrayGiveTheSameOutcome() {
        List<String> names = Fixtures.all();
        Random rnd = new Random(0xA77A_15L);
        for (int i = 0; i < 3000; i++) {
            int f = rnd.nextInt(names.size());
            byte[] body = Fixtures.bytes(names.get(f));
            int mutations = 1 + rnd.nextInt(3);
            for (int m = 0; m < mutations; m++) {
                body = MutationFuzzTest.mutate(body, rnd.nextInt(8), rnd);
            }
            // truncations most of all: a body cut inside a string is where reading past its end would show
            if (rnd.nextBoolean() && body.length > 0) {
                body = Arrays.copyOf(body, rnd.nextInt(body.length));
            }
            same(
                    extractors[rnd.nextInt(extractors.length)],
                    Fixtures.endpoint(names.get(f)),
                    body,
                    AROUND.get(rnd.nextInt(AROUND.size())),
                    "case " + i + " of " + names.get(f));
        }
    }

    @Test
    void aRangeOutsideTheArrayIsRefused() {
        PromptExtractor x = extractors[0];
        byte[] b = "{\"model\":\"m\",\"prompt\":\"p\"}".getBytes(StandardCharsets.US_ASCII);
        assertThrows(IndexOutOfBoundsException.class, () -> x.extract(Endpoint.COMPLETIONS, b, 1, b.length));
        assertThrows(IndexOutOfBoundsException.class, () -> x.extract(Endpoint.COMPLETIONS, b, -1, 2));
    }

    /** Extracts {@code body} alone and inside {@code around} bytes on both sides; the outcomes must agree. */
    private static void same(PromptExtractor x, Endpoint endpoint, byte[] body, byte[] around, String what) {
        int offset = around.length + 3;
        byte[] array = new byte[offset + body.length + around.length];
        System.arraycopy(around, 0, array, 0, around.length);
        System.arraycopy(body, 0, array, offset, body.length);
        System.arraycopy(around, 0, array, offset + body.length, around.length);
        ExtractedRequest alone = null;
        ExtractionException failed = null;
        try {
            alone = x.extract(endpoint, body.clone());
        } catch (ExtractionException e) {
            failed = e;
        }
        try {
            ExtractedRequest inside = x.extract(endpoint, array, offset, body.length);
            if (alone == null) {
                fail(what + ": alone " + failed.code() + " (" + failed.getMessage() + "), inside a key");
            }
            assertEquals(alone.key(), inside.key(), what);
            assertEquals(alone.model(), inside.model(), what);
            assertEquals(alone.stream(), inside.stream(), what);
        } catch (ExtractionException e) {
            if (failed == null) {
                fail(what + ": alone a key, inside " + e.code() + " (" + e.getMessage() + ")");
            }
            assertEquals(failed.code(), e.code(), what);
            assertEquals(failed.getMessage(), e.getMessage(), what);
            assertEquals(failed.param(), e.param(), what);
        }
    }
}
