package dev.cart.extract.answer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.cart.core.ServedUsage;
import dev.cart.extract.Endpoint;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * The usage an answer reports, read as a host feeds it: in buffers of any size, heap or direct
 * ({@link AnswerReader#accept(ByteBuffer)}), with the text not collected (as the gateway reads it).
 */
class AnswerReaderUsageTest {

    private static ServedUsage read(Endpoint e, String contentType, String body, int chunk) {
        AnswerReader r = AnswerReader.create(e, contentType, null, false);
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < b.length; i += chunk) {
            int n = Math.min(chunk, b.length - i);
            ByteBuffer piece;
            if ((i / chunk) % 2 == 0) {
                piece = ByteBuffer.wrap(b, i, n).slice();
            } else { // every other piece direct, as a server's pooled buffers are
                piece = ByteBuffer.allocateDirect(n + 3).position(3);
                piece.put(b, i, n).position(3);
            }
            int at = piece.position();
            r.accept(piece);
            assertEquals(at, piece.position(), "the buffer is not moved");
        }
        return r.finish();
    }

    @Test
    void openAiJsonAnswer() {
        String body = "{\"id\":\"x\",\"choices\":[{\"message\":{\"content\":\"usage is not here\"}}],"
                + "\"usage\":{\"prompt_tokens\":503,\"completion_tokens\":4,\"prompt_tokens_details\":{\"cached_tokens\":480}}}";
        for (int chunk : new int[] {1, 7, 1000}) {
            assertEquals(new ServedUsage(503, 480), read(Endpoint.CHAT_COMPLETIONS, "application/json", body, chunk));
        }
    }

    @Test
    void openAiStreamUsageChunkSplitAcrossBuffers() {
        String body = "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n"
                + "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":31,\"prompt_tokens_details\":{\"cached_tokens\":16}}}\r\n\r\n"
                + "data: [DONE]\n\n";
        for (int chunk : new int[] {1, 3, 64, 4096}) {
            assertEquals(
                    new ServedUsage(31, 16),
                    read(Endpoint.COMPLETIONS, "text/event-stream; charset=utf-8", body, chunk));
        }
    }

    @Test
    void streamWithoutUsageReportsUnknown() {
        ServedUsage u =
                read(Endpoint.CHAT_COMPLETIONS, "text/event-stream", "data: {\"choices\":[]}\n\ndata: [DONE]\n\n", 5);
        assertEquals(ServedUsage.unknown(), u);
    }

    @Test
    void anthropicStreamAddsCacheReadsToTheUncachedInput() {
        String body = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":"
                + "{\"input_tokens\":10,\"cache_read_input_tokens\":90,\"cache_creation_input_tokens\":0,\"output_tokens\":1}}}\n\n"
                + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"a\"}}\n\n"
                + "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":5}}\n\n";
        assertEquals(new ServedUsage(100, 90), read(Endpoint.MESSAGES, "text/event-stream", body, 11));
    }

    @Test
    void anthropicJsonMessage() {
        String body = "{\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"usage\":{\"input_tokens\":5,"
                + "\"cache_creation_input_tokens\":20,\"cache_read_input_tokens\":0}}";
        assertEquals(new ServedUsage(25, 0), read(Endpoint.MESSAGES, "application/json", body, 9));
    }

    @Test
    void unreadableAnswersAreNotRead() {
        assertNull(AnswerReader.create(Endpoint.CHAT_COMPLETIONS, "text/html", null, false));
        assertNull(AnswerReader.create(Endpoint.CHAT_COMPLETIONS, "application/json", "gzip", false));
        assertNull(AnswerReader.create(null, "application/json", null, false));
    }

    @Test
    void brokenJsonIsGivenUp() {
        assertEquals(
                ServedUsage.unknown(),
                read(Endpoint.CHAT_COMPLETIONS, "application/json", "{\"usage\":{\"prompt_tok", 4));
    }

    @Test
    void aLargeJsonAnswerIsReadFromItsTail() {
        String body = "{\"choices\":[{\"message\":{\"content\":\"" + "x \\\"usage\\\": {} ".repeat(100_000)
                + "\"}}],\"usage\":{\"prompt_tokens\":3,\"prompt_tokens_details\":{\"cached_tokens\":1}}}";
        for (int chunk : new int[] {1000, 4096, 65536, body.length()}) {
            assertEquals(new ServedUsage(3, 1), read(Endpoint.CHAT_COMPLETIONS, "application/json", body, chunk));
        }
    }

    @Test
    void usageQuotedInTheAnswersTextIsNotTakenForTheReport() {
        String body = "{\"choices\":[{\"message\":{\"content\":\"say \\\"usage\\\": {\\\"prompt_tokens\\\": 9}\"}}]}";
        assertEquals(ServedUsage.unknown(), read(Endpoint.CHAT_COMPLETIONS, "application/json", body, 7));
    }

    @Test
    void aLongAnthropicStreamKeepsTheStartsUsageAndTheEnds() {
        String delta = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":"
                + "\"text_delta\",\"text\":\"abc\"}}\n\n";
        String body = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":"
                + "{\"input_tokens\":10,\"cache_read_input_tokens\":90,\"cache_creation_input_tokens\":4}}}\n\n"
                + delta.repeat(5_000)
                + "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":5,"
                + "\"cache_read_input_tokens\":91}}\n\n";
        for (int chunk : new int[] {1, 100, 4096, body.length()}) {
            assertEquals(new ServedUsage(105, 91), read(Endpoint.MESSAGES, "text/event-stream", body, chunk));
        }
    }

    @Test
    void anOverlongEventLineIsSkippedAndTheNextOneRead() {
        String body = "data: {\"pad\":\"" + "y".repeat(1024 * 1024) + "\",\"usage\":{\"prompt_tokens\":9}}\n"
                + "data: {\"usage\":{\"prompt_tokens\":7,\"prompt_tokens_details\":{\"cached_tokens\":2}}}\n";
        assertEquals(new ServedUsage(7, 2), read(Endpoint.CHAT_COMPLETIONS, "text/event-stream", body, 8192));
    }

    @Test
    void theUsageOfALongOpenAiStreamIsReadFromItsLastEvents() {
        String chunk = "data: {\"choices\":[{\"delta\":{\"content\":\"word \"}}]}\n\n";
        String body = chunk.repeat(3_000)
                + "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1200,\"prompt_tokens_details\":"
                + "{\"cached_tokens\":1024}}}\n\ndata: [DONE]\n\n";
        for (int size : new int[] {7, 61, 4096, 5000}) {
            assertEquals(new ServedUsage(1200, 1024), read(Endpoint.CHAT_COMPLETIONS, "text/event-stream", body, size));
        }
    }
}
