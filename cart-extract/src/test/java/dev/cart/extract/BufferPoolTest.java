package dev.cart.extract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.util.BufferRecycler;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The extractor's parsers take their buffers from a recycler of the platform thread's own. */
class BufferPoolTest {

    @Test
    void aPlatformThreadKeepsOneRecyclerThatNoCloseReleases() throws Exception {
        assumeFalse(BufferPool.onVirtualThread());
        JsonFactory f = new PromptExtractor(ExtractOptions.defaults()).factory();
        BufferRecycler first = f._getBufferRecycler();
        assertSame(first, f._getBufferRecycler());
        // not linked to a pool: a parser's close gives nothing back, and nothing is polled or linked per request
        assertFalse(first.isLinkedWithPool());
        assertEquals(0, f._getRecyclerPool().pooledCount());

        AtomicReference<BufferRecycler> other = new AtomicReference<>();
        Thread t = new Thread(() -> other.set(f._getBufferRecycler()));
        t.start();
        t.join();
        assertNotSame(first, other.get());
    }

    @Test
    void nestedParsersOnOneThreadShareItSafely() throws Exception {
        // a typed object whose discriminator is not its first member is re-read by a second parser while the
        // body's is open; both take this thread's recycler
        PromptExtractor x = new PromptExtractor(ExtractOptions.defaults());
        byte[] reordered =
                ("{\"model\":\"m\",\"messages\":[{\"content\":[{\"text\":\"hello there\",\"type\":\"text\"}],"
                                + "\"role\":\"user\"}]}")
                        .getBytes(StandardCharsets.UTF_8);
        byte[] ordered = ("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
                        + "\"text\":\"hello there\"}]}]}")
                .getBytes(StandardCharsets.UTF_8);
        String want = x.keyText(Endpoint.CHAT_COMPLETIONS, ordered);
        for (int i = 0; i < 3; i++) {
            assertEquals(want, x.keyText(Endpoint.CHAT_COMPLETIONS, reordered));
            assertEquals(want, x.keyText(Endpoint.CHAT_COMPLETIONS, ordered));
        }
    }
}
