package dev.cart.kvevents;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Damaged payloads: every truncation and thousands of random corruptions of the golden vectors either decode
 * or are refused as malformed; no other exception escapes, and an absurd element count is refused before
 * anything is allocated for it.
 */
class DecoderFuzzTest {

    private static final String[] FILES = {
        "array-int.msgpack",
        "array-bytes.msgpack",
        "map-int.msgpack",
        "map-bytes.msgpack",
        "old-signed.msgpack",
        "unknown.msgpack"
    };

    private static void decodeOrRefuse(byte[] payload) {
        try {
            BatchDecoder.decode(payload, new BatchDecoder.Tally());
        } catch (BatchDecoder.MalformedBatchException expected) {
            // refused whole: fine
        }
    }

    @Test
    void everyTruncationIsRefused() throws Exception {
        for (String f : FILES) {
            byte[] full = GoldenVectorsTest.resource(f);
            for (int n = 0; n < full.length; n++) {
                byte[] cut = java.util.Arrays.copyOf(full, n);
                assertThrows(
                        BatchDecoder.MalformedBatchException.class,
                        () -> BatchDecoder.decode(cut, new BatchDecoder.Tally()),
                        f + " cut at " + n);
            }
        }
    }

    @Test
    void randomCorruptionsNeverThrowAnythingElse() throws Exception {
        SplittableRandom rnd = new SplittableRandom(42);
        for (String f : FILES) {
            byte[] full = GoldenVectorsTest.resource(f);
            for (int i = 0; i < 5_000; i++) {
                byte[] b = full.clone();
                int flips = 1 + rnd.nextInt(4);
                for (int k = 0; k < flips; k++) {
                    b[rnd.nextInt(b.length)] = (byte) rnd.nextInt(256);
                }
                decodeOrRefuse(b);
            }
        }
    }

    @Test
    void absurdCountsAreRefused() {
        // [ts, array32 of 2^31-1 events]
        byte[] events = {
            (byte) 0x92, (byte) 0xcb, 0, 0, 0, 0, 0, 0, 0, 0, (byte) 0xdd, 0x7f, (byte) 0xff, (byte) 0xff, (byte) 0xff
        };
        assertThrows(
                BatchDecoder.MalformedBatchException.class,
                () -> BatchDecoder.decode(events, new BatchDecoder.Tally()));
        // one event whose token list claims 2^32-1 ids
        byte[] tokens = {
            (byte) 0x92,
            (byte) 0xcb,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            (byte) 0x91,
            (byte) 0x94,
            (byte) 0xab,
            'B',
            'l',
            'o',
            'c',
            'k',
            'S',
            't',
            'o',
            'r',
            'e',
            'd',
            (byte) 0x91,
            0x01,
            (byte) 0xc0,
            (byte) 0xdd,
            (byte) 0xff,
            (byte) 0xff,
            (byte) 0xff,
            (byte) 0xff
        };
        assertThrows(
                BatchDecoder.MalformedBatchException.class,
                () -> BatchDecoder.decode(tokens, new BatchDecoder.Tally()));
    }

    @Test
    void aWrongTypeSpoilsOnlyItsEvent() throws Exception {
        // [ts, [["BlockStored", "not a list", nil, [], 16], ["AllBlocksCleared"]]]
        byte[] b = {
            (byte) 0x92,
            (byte) 0xcb,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            (byte) 0x92,
            (byte) 0x95,
            (byte) 0xab,
            'B',
            'l',
            'o',
            'c',
            'k',
            'S',
            't',
            'o',
            'r',
            'e',
            'd',
            (byte) 0xa3,
            'b',
            'a',
            'd',
            (byte) 0xc0,
            (byte) 0x90,
            0x10,
            (byte) 0x91,
            (byte) 0xb0,
            'A',
            'l',
            'l',
            'B',
            'l',
            'o',
            'c',
            'k',
            's',
            'C',
            'l',
            'e',
            'a',
            'r',
            'e',
            'd'
        };
        BatchDecoder.Tally t = new BatchDecoder.Tally();
        BatchDecoder.Batch batch = BatchDecoder.decode(b, t);
        assertEquals(1, batch.events().size());
        assertEquals(1, t.badEvents);
    }
}
