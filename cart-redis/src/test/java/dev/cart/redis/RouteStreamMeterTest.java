package dev.cart.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.cart.core.PromptKey;
import dev.cart.core.sync.RouteEvent;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The meter batches as the publisher does and counts what the encoder makes, with the XADD around it. */
class RouteStreamMeterTest {

    private static final String ORIGIN = "gw-1#00c0ffee";
    private static final long MS = 1_000_000L;

    private static RouteEvent.Learned learned(long t, long... blocks) {
        return new RouteEvent.Learned(ORIGIN, t, "http://r0:8000", PromptKey.Unit.CHARS, 64, blocks);
    }

    @Test
    void eventsWithinTheBatchDelayShareAnEntryAndRepeatsAreLeftOut() {
        RouteStreamMeter m = new RouteStreamMeter(ORIGIN);
        m.publish(learned(0, 1, 2), 0);
        m.publish(learned(1, 1, 2, 3), 1 * MS);
        m.publish(learned(2, 1, 2), 4 * MS); // within 5 ms of the first, and a repeat within a second
        m.publish(learned(10, 1, 2, 3, 4), 10 * MS); // a new entry
        m.flush();
        assertEquals(2, m.entries());
        assertEquals(3, m.events());
        // the same as encoding the two batches in turn
        RouteEventCodec.Encoder enc = new RouteEventCodec.Encoder(ORIGIN);
        long want = RouteStreamMeter.xaddBytes(
                        "cart:routes",
                        100_000,
                        enc.encode(new ArrayList<>(List.of(learned(0, 1, 2), learned(1, 1, 2, 3)))).length)
                + RouteStreamMeter.xaddBytes(
                        "cart:routes", 100_000, enc.encode(List.of(learned(10, 1, 2, 3, 4))).length);
        assertEquals(want, m.bytes());
    }

    @Test
    void aFullBatchClosesTheEntry() {
        RouteStreamMeter m = new RouteStreamMeter(ORIGIN);
        for (int i = 0; i < 600; i++) {
            m.publish(learned(0, 7, i), 0);
        }
        m.flush();
        assertEquals(3, m.entries(), "256 + 256 + 88");
        assertEquals(600, m.events());
    }

    @Test
    void theXaddBytesAreTheCommandAsRespFramesIt() {
        String resp = "*9\r\n$4\r\nXADD\r\n$11\r\ncart:routes\r\n$6\r\nMAXLEN\r\n$1\r\n~\r\n$6\r\n100000\r\n"
                + "$1\r\n*\r\n$1\r\nb\r\n$3\r\nabc\r\n";
        assertEquals(resp.length(), RouteStreamMeter.xaddBytes("cart:routes", 100_000, 3));
    }
}
