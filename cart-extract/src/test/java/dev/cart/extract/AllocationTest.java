package dev.cart.extract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * What an extraction allocates does not grow with the body's plain text: long runs of a message are hashed
 * from the body where they stand, not copied into a buffer of the body's size. Counted by the thread's
 * allocated bytes (HotSpot), so independent of the machine's speed.
 */
class AllocationTest {

    @Test
    void plainTextIsNotCopied() throws Exception {
        com.sun.management.ThreadMXBean mx = allocationCounter();
        PromptExtractor x = new PromptExtractor(ExtractOptions.defaults());
        byte[] body = body(64 * 1024);
        for (int i = 0; i < 20; i++) { // class loading, the parser's buffer pool
            x.extract(Endpoint.CHAT_COMPLETIONS, body);
        }
        long least = Long.MAX_VALUE;
        for (int i = 0; i < 5; i++) {
            long before = mx.getCurrentThreadAllocatedBytes();
            ExtractedRequest r = x.extract(Endpoint.CHAT_COMPLETIONS, body);
            least = Math.min(least, mx.getCurrentThreadAllocatedBytes() - before);
            assertEquals(body.length - 200, r.key().length(), 200);
        }
        // the key's own arrays (8 bytes per 64-character block, twice: builder and key) and the parser's
        // objects; a copy of the text would be 64 KB more
        assertTrue(least < body.length / 2, least + " bytes allocated for a body of " + body.length);
    }

    /**
     * An agent's tool calls are written as canonical JSON one after another: the arrays an object's members are
     * sorted with are made once per extraction, not once per object, and a call's arguments (JSON in a string,
     * its quotes escaped) are copied as they stand rather than decoded and escaped again. Counted as the
     * difference between bodies of 200 and 100 turns of a call and its result, per turn: 1,305 bytes on Java 17,
     * 40% of them the parser's duplicate detection (a set per object of three names or more); 2,193 when each
     * object made its own arrays and the arguments were decoded.
     */
    @Test
    void aToolCallsTurnAllocatesNoArraysPerObject() throws Exception {
        com.sun.management.ThreadMXBean mx = allocationCounter();
        PromptExtractor x = new PromptExtractor(ExtractOptions.defaults());
        byte[] few = toolCalls(100);
        byte[] many = toolCalls(200);
        long[] least = {Long.MAX_VALUE, Long.MAX_VALUE};
        for (int i = 0; i < 30; i++) { // the first rounds load classes and fill the parser's buffer pool
            for (int k = 0; k < 2; k++) {
                byte[] body = k == 0 ? few : many;
                long before = mx.getCurrentThreadAllocatedBytes();
                x.extract(Endpoint.CHAT_COMPLETIONS, body);
                least[k] = Math.min(least[k], mx.getCurrentThreadAllocatedBytes() - before);
            }
        }
        long perTurn = (least[1] - least[0]) / 100;
        assertTrue(perTurn < 1_700, perTurn + " bytes allocated per turn of a tool call and its result");
    }

    /** {@code calls} turns of an assistant's tool call (arguments with quotes and a backslash) and its result. */
    private static byte[] toolCalls(int calls) {
        StringBuilder sb = new StringBuilder("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"go\"}");
        for (int i = 0; i < calls; i++) {
            sb.append(",{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_")
                    .append(i)
                    .append("\",\"type\":\"function\",\"function\":{\"name\":\"search_orders\",")
                    .append("\"arguments\":\"{\\\"id\\\":\\\"A-")
                    .append(1000 + i)
                    .append("\\\",\\\"path\\\":\\\"a\\\\\\\\b\\\"}\"}}]}")
                    .append(",{\"role\":\"tool\",\"tool_call_id\":\"call_")
                    .append(i)
                    .append("\",\"content\":\"found\"}");
        }
        return sb.append("]}").toString().getBytes(StandardCharsets.UTF_8);
    }

    /** The thread's allocated-bytes counter (HotSpot); the test is skipped where there is none. */
    private static com.sun.management.ThreadMXBean allocationCounter() {
        assumeTrue(ManagementFactory.getThreadMXBean() instanceof com.sun.management.ThreadMXBean t
                && t.isThreadAllocatedMemorySupported());
        return (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    }

    @Test
    void theMarkerLengthIsEveryMarkersLength() {
        assertEquals(Extraction.MARKER_LENGTH, Extraction.modelMarker("m").length());
        assertEquals(
                Extraction.MARKER_LENGTH,
                Extraction.modelMarker("a much longer model name", "salt", "lora")
                        .length());
    }

    /** A system message and a user message of plain words, about {@code size} bytes, as the proxy benchmark's. */
    private static byte[] body(int size) {
        SplittableRandom rnd = new SplittableRandom(1);
        String[] words = {"the", "of", "prompt", "cache", "and", "a", "replica", "to", "route"};
        StringBuilder sb = new StringBuilder("{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"");
        while (sb.length() < size / 2) {
            sb.append(words[rnd.nextInt(words.length)]).append(' ');
        }
        sb.append("\"},{\"role\":\"user\",\"content\":\"");
        while (sb.length() < size - 64) {
            sb.append(words[rnd.nextInt(words.length)]).append(' ');
        }
        return sb.append("\"}],\"stream\":false}").toString().getBytes(StandardCharsets.UTF_8);
    }
}
