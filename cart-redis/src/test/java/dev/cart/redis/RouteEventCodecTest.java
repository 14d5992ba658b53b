package dev.cart.redis;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.PromptKey;
import dev.cart.core.RouteEvent;
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

    @Test
    void everyKindOfEventRoundTrips() throws Exception {
        for (int seed = 1; seed <= 200; seed++) {
            SplittableRandom rnd = new SplittableRandom(seed);
            List<RouteEvent> events = randomEvents(rnd, rnd.nextInt(300));
            long seq = rnd.nextLong(0, Long.MAX_VALUE);
            RouteEventCodec.Batch b = RouteEventCodec.decode(RouteEventCodec.encode(ORIGIN, seq, events));
            assertEquals(ORIGIN, b.origin());
            assertEquals(seq, b.seq());
            assertEquals(events.size(), b.events().size());
            for (int i = 0; i < events.size(); i++) {
                assertSame(events.get(i), b.events().get(i));
            }
        }
    }

    @Test
    void truncatedOrExtendedBatchesAreMalformed() {
        byte[] whole = RouteEventCodec.encode(ORIGIN, 7, randomEvents(new SplittableRandom(5), 40));
        for (int len = 0; len < whole.length; len++) {
            byte[] cut = Arrays.copyOf(whole, len);
            assertThrows(RouteEventCodec.Malformed.class, () -> RouteEventCodec.decode(cut), "cut at " + len);
        }
        byte[] longer = Arrays.copyOf(whole, whole.length + 1);
        assertThrows(RouteEventCodec.Malformed.class, () -> RouteEventCodec.decode(longer));
    }

    @Test
    void anotherVersionIsMalformed() {
        byte[] b = RouteEventCodec.encode(ORIGIN, 0, randomEvents(new SplittableRandom(6), 3));
        b[0] = 2;
        RouteEventCodec.Malformed e = assertThrows(RouteEventCodec.Malformed.class, () -> RouteEventCodec.decode(b));
        assertTrue(e.getMessage().contains("version 2"), e.getMessage());
    }

    @Test
    void randomAndCorruptedBytesNeverThrowAnythingButMalformed() {
        SplittableRandom rnd = new SplittableRandom(9);
        byte[] valid = RouteEventCodec.encode(ORIGIN, 3, randomEvents(new SplittableRandom(8), 60));
        for (int i = 0; i < 20_000; i++) {
            byte[] b;
            if (i % 2 == 0) {
                b = new byte[rnd.nextInt(200)];
                rnd.nextBytes(b);
                if (b.length > 0 && rnd.nextBoolean()) {
                    b[0] = 1; // past the version check
                }
            } else {
                b = valid.clone();
                for (int k = rnd.nextInt(1, 4); k > 0; k--) {
                    b[rnd.nextInt(b.length)] = (byte) rnd.nextInt(256);
                }
            }
            try {
                RouteEventCodec.decode(b);
            } catch (RouteEventCodec.Malformed expected) {
                // skipped and counted by the tailer
            } catch (RuntimeException e) {
                throw new AssertionError("decode threw " + e + " on case " + i, e);
            }
        }
    }
}
