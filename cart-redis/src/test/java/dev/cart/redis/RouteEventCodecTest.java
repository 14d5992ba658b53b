package dev.cart.redis;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.PromptKey;
import dev.cart.core.sync.RouteEvent;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The stream entry format without Redis: round trips, and bad bytes always end in {@code Malformed}. */
class RouteEventCodecTest {

    private static final String ORIGIN = "gw-1:4242#1a2b3c4d";

    /** Random events of every kind, keys sharing prefixes as real traffic does. */
    static List<RouteEvent> randomEvents(SplittableRandom rnd, int n) {
        List<RouteEvent> out = new ArrayList<>();
        List<long[]> keys = new ArrayList<>();
        long t = 1_780_000_000_000L + rnd.nextInt(1_000_000);
        for (int i = 0; i < n; i++) {
            t += rnd.nextInt(-3, 20);
            String replica = "http://node" + rnd.nextInt(5) + ":8000";
            PromptKey.Unit unit = rnd.nextBoolean() ? PromptKey.Unit.CHARS : PromptKey.Unit.TOKENS;
            int kind = rnd.nextInt(10);
            long[] key;
            if (!keys.isEmpty() && rnd.nextInt(3) > 0) {
                long[] base = keys.get(rnd.nextInt(keys.size()));
                key = Arrays.copyOf(base, rnd.nextInt(base.length + 1) + rnd.nextInt(4));
                for (int k = 0; k < key.length; k++) {
                    if (k >= base.length || rnd.nextInt(20) == 0) {
                        key[k] = rnd.nextLong();
                    }
                }
            } else {
                key = rnd.longs(rnd.nextInt(40)).toArray();
            }
            keys.add(key);
            if (kind < 7) {
                out.add(new RouteEvent.Learned(ORIGIN, t, replica, unit, unit == PromptKey.Unit.CHARS ? 64 : 16, key));
            } else if (kind < 8) {
                out.add(new RouteEvent.Forgotten(ORIGIN, t, replica, unit, 64, key, rnd.nextInt(key.length + 1)));
            } else if (kind < 9) {
                out.add(new RouteEvent.ReplicaRemoved(ORIGIN, t, replica));
            } else {
                out.add(new RouteEvent.Reset(ORIGIN, t));
            }
        }
        return out;
    }

    private static void assertSame(RouteEvent want, RouteEvent got) {
        assertEquals(want.getClass(), got.getClass());
        assertEquals(want.origin(), got.origin());
        assertEquals(want.timeMillis(), got.timeMillis());
        if (want instanceof RouteEvent.Learned w) {
            RouteEvent.Learned g = (RouteEvent.Learned) got;
            assertEquals(w.replicaId(), g.replicaId());
            assertEquals(w.unit(), g.unit());
            assertEquals(w.blockSize(), g.blockSize());
            assertArrayEquals(w.blocks(), g.blocks());
        } else if (want instanceof RouteEvent.Forgotten w) {
            RouteEvent.Forgotten g = (RouteEvent.Forgotten) got;
            assertEquals(w.replicaId(), g.replicaId());
            assertEquals(w.unit(), g.unit());
            assertEquals(w.blockSize(), g.blockSize());
            assertArrayEquals(w.blocks(), g.blocks());
            assertEquals(w.keepBlocks(), g.keepBlocks());
        } else {
            assertEquals(want, got);
        }
    }

    private static final String READER = "gw-2:4343#5e6f7a8b";

    /** Encodes {@code events} in batches of {@code size}: the entries one writer makes, in order. */
    private static List<byte[]> entries(RouteEventCodec.Encoder enc, List<RouteEvent> events, int size) {
        List<byte[]> out = new ArrayList<>();
        for (int i = 0; i < events.size(); i += size) {
            out.add(enc.encode(new ArrayList<>(events.subList(i, Math.min(events.size(), i + size)))));
        }
        return out;
    }

    private static List<RouteEvent> decodeAll(RouteEventCodec.Decoder dec, List<byte[]> entries) throws Exception {
        List<RouteEvent> got = new ArrayList<>();
        for (byte[] e : entries) {
            RouteEventCodec.Decoded d = dec.decode(e);
            assertEquals(RouteEventCodec.Kind.BATCH, d.kind());
            assertEquals(0, d.unresolved());
            got.addAll(d.events());
        }
        return got;
    }

    @Test
    void everyKindOfEventRoundTripsAcrossEntries() throws Exception {
        for (int seed = 1; seed <= 200; seed++) {
            SplittableRandom rnd = new SplittableRandom(seed);
            List<RouteEvent> events = randomEvents(rnd, rnd.nextInt(600));
            // small epochs too, so that epochs turn over inside the run
            RouteEventCodec.Encoder enc = seed % 2 == 0
                    ? new RouteEventCodec.Encoder(ORIGIN)
                    : new RouteEventCodec.Encoder(ORIGIN, rnd.nextInt(1, 400), 1_000_000);
            List<RouteEvent> got =
                    decodeAll(new RouteEventCodec.Decoder(READER), entries(enc, events, rnd.nextInt(1, 40)));
            assertEquals(events.size(), got.size());
            for (int i = 0; i < events.size(); i++) {
                assertSame(events.get(i), got.get(i));
            }
        }
    }

    @Test
    void aKeyIsWrittenAsTheNewBlocksAfterAnEarlierEntrysKey() throws Exception {
        long[] turn1 = new SplittableRandom(1).longs(100).toArray();
        long[] turn2 = Arrays.copyOf(turn1, 103);
        turn2[100] = 7;
        turn2[101] = 8;
        turn2[102] = 9;
        RouteEventCodec.Encoder enc = new RouteEventCodec.Encoder(ORIGIN);
        byte[] first = enc.encode(List.of(learned(1_000, turn1)));
        byte[] second = enc.encode(List.of(learned(1_001, turn2)));
        assertTrue(first.length > 800, "the first key whole: " + first.length);
        assertTrue(second.length < 3 * 8 + 60, "only the three new blocks: " + second.length);
        RouteEventCodec.Decoder dec = new RouteEventCodec.Decoder(READER);
        dec.decode(first);
        RouteEventCodec.Decoded d = dec.decode(second);
        assertArrayEquals(turn2, ((RouteEvent.Learned) d.events().get(0)).blocks());
        assertEquals(ORIGIN, d.origin(), "the origin id travels in the epoch's first entry");
    }

    private static RouteEvent.Learned learned(long t, long[] blocks) {
        return new RouteEvent.Learned(ORIGIN, t, "http://r0:8000", PromptKey.Unit.CHARS, 64, blocks);
    }

    @Test
    void aReaderThatMissedAnEntryCountsWhatRefersToItAndResolvesTheRestUntilTheNextEpoch() throws Exception {
        long[] a = {1, 2, 3};
        long[] b = {10, 20, 30};
        RouteEventCodec.Encoder enc = new RouteEventCodec.Encoder(ORIGIN, 1_000, 60_000);
        byte[] e0 = enc.encode(List.of(learned(1_000, a)));
        byte[] e1 = enc.encode(List.of(learned(1_001, b))); // never read
        byte[] e2 =
                enc.encode(List.of(learned(1_002, new long[] {1, 2, 3, 4}), learned(1_002, new long[] {10, 20, 31})));
        byte[] e3 = enc.encode(List.of(learned(61_001, new long[] {10, 20, 30, 40}))); // a new epoch: whole
        RouteEventCodec.Decoder dec = new RouteEventCodec.Decoder(READER);
        dec.decode(e0);
        RouteEventCodec.Decoded d2 = dec.decode(e2);
        assertEquals(1, d2.lost(), "one entry missing before this one");
        assertEquals(1, d2.unresolved(), "{10, 20, 31} refers to the entry never read");
        assertEquals(1, d2.events().size());
        assertArrayEquals(
                new long[] {1, 2, 3, 4}, ((RouteEvent.Learned) d2.events().get(0)).blocks());
        RouteEventCodec.Decoded d3 = dec.decode(e3);
        assertEquals(0, d3.unresolved());
        assertArrayEquals(
                new long[] {10, 20, 30, 40}, ((RouteEvent.Learned) d3.events().get(0)).blocks());
        // a reader starting mid-epoch (the window trimmed before it): the same
        RouteEventCodec.Decoder late = new RouteEventCodec.Decoder(READER);
        RouteEventCodec.Decoded l2 = late.decode(e2);
        assertEquals(2, l2.unresolved());
        assertEquals("#" + Long.toHexString(RouteEventCodec.tag(ORIGIN)), l2.origin(), "the name not read yet");
        assertEquals(1, late.decode(e3).events().size());
        assertEquals(
                ORIGIN,
                late.decode(enc.encode(List.of(new RouteEvent.Reset(ORIGIN, 200_000))))
                        .origin());
    }

    @Test
    void ownAndRepeatedEntriesAreRecognisedAndChangeNothing() throws Exception {
        RouteEventCodec.Encoder enc = new RouteEventCodec.Encoder(ORIGIN);
        byte[] e0 = enc.encode(List.of(learned(1, new long[] {1, 2})));
        byte[] e1 = enc.encode(List.of(learned(2, new long[] {1, 2, 3})));
        assertEquals(
                RouteEventCodec.Kind.OWN,
                new RouteEventCodec.Decoder(ORIGIN).decode(e0).kind());
        RouteEventCodec.Decoder dec = new RouteEventCodec.Decoder(READER);
        dec.decode(e0);
        assertEquals(RouteEventCodec.Kind.DUPLICATE, dec.decode(e0).kind());
        RouteEventCodec.Decoded d = dec.decode(e1);
        assertEquals(0, d.lost());
        assertArrayEquals(new long[] {1, 2, 3}, ((RouteEvent.Learned) d.events().get(0)).blocks());
    }

    @Test
    void truncatedOrExtendedBatchesAreMalformedAndLeaveTheReaderAsItWas() throws Exception {
        List<RouteEvent> events = randomEvents(new SplittableRandom(5), 80);
        RouteEventCodec.Encoder enc = new RouteEventCodec.Encoder(ORIGIN);
        byte[] first = enc.encode(new ArrayList<>(events.subList(0, 40)));
        byte[] whole = enc.encode(new ArrayList<>(events.subList(40, 80)));
        RouteEventCodec.Decoder dec = new RouteEventCodec.Decoder(READER);
        dec.decode(first);
        for (int len = 0; len < whole.length; len++) {
            byte[] cut = Arrays.copyOf(whole, len);
            assertThrows(RouteEventCodec.Malformed.class, () -> dec.decode(cut), "cut at " + len);
        }
        byte[] longer = Arrays.copyOf(whole, whole.length + 1);
        assertThrows(RouteEventCodec.Malformed.class, () -> dec.decode(longer));
        RouteEventCodec.Decoded d = dec.decode(whole);
        assertEquals(0, d.lost());
        assertEquals(0, d.unresolved());
        for (int i = 0; i < 40; i++) {
            assertSame(events.get(40 + i), d.events().get(i));
        }
    }

    @Test
    void anEntryOfTheEarlierVersionOrAFutureOneIsMalformed() {
        // version 1 (keys referred only within the entry): origin "a", seq 0, base time 0, no replica, no event
        byte[] v1 = {1, 1, 'a', 0, 0, 0, 0};
        RouteEventCodec.Decoder dec = new RouteEventCodec.Decoder(READER);
        RouteEventCodec.Malformed e = assertThrows(RouteEventCodec.Malformed.class, () -> dec.decode(v1));
        assertTrue(e.getMessage().contains("version 1"), e.getMessage());
        byte[] b = new RouteEventCodec.Encoder(ORIGIN).encode(randomEvents(new SplittableRandom(6), 3));
        b[0] = 3;
        e = assertThrows(RouteEventCodec.Malformed.class, () -> dec.decode(b));
        assertTrue(e.getMessage().contains("version 3"), e.getMessage());
    }

    @Test
    void randomAndCorruptedBytesNeverThrowAnythingButMalformed() {
        SplittableRandom rnd = new SplittableRandom(9);
        RouteEventCodec.Encoder enc = new RouteEventCodec.Encoder(ORIGIN);
        List<byte[]> valid = entries(enc, randomEvents(new SplittableRandom(8), 240), 60);
        RouteEventCodec.Decoder dec = new RouteEventCodec.Decoder(READER);
        for (int i = 0; i < 20_000; i++) {
            byte[] b;
            if (i % 2 == 0) {
                b = new byte[rnd.nextInt(200)];
                rnd.nextBytes(b);
                if (b.length > 0 && rnd.nextBoolean()) {
                    b[0] = RouteEventCodec.VERSION; // past the version check
                }
            } else {
                b = valid.get(rnd.nextInt(valid.size())).clone();
                for (int k = rnd.nextInt(1, 4); k > 0; k--) {
                    b[rnd.nextInt(b.length)] = (byte) rnd.nextInt(256);
                }
            }
            try {
                dec.decode(b);
            } catch (RouteEventCodec.Malformed expected) {
                // skipped and counted by the tailer
            } catch (RuntimeException e) {
                throw new AssertionError("decode threw " + e + " on case " + i, e);
            }
        }
    }
}
