package dev.cart.proxy;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.cart.core.PromptKey;
import dev.cart.core.Replica;
import dev.cart.core.Router;
import dev.cart.extract.Endpoint;
import dev.cart.extract.ExtractionException;
import java.io.IOException;
import java.util.List;

/**
 * Learns the answer: after a chat request was served, records that the replica holds the prefix the
 * <em>next</em> turn of the conversation will start with, which is this request's messages followed by
 * the assistant's reply. (vLLM caches the blocks of the generated tokens too, so the replica holds it.)
 * Without this, the router only knows the prefix up to the last user message, and a follow-up turn
 * matches that much; with it, the follow-up matches its whole history.
 *
 * <p>How: the key must be exactly what cart-extract will make of the next request, so it is made the same
 * way, from a request body: this request's body with an assistant message holding the reply appended to
 * its {@code messages} array. The append is a byte splice: one streaming pass (Jackson's parser, no tree)
 * finds the offset of the top-level {@code messages} array's closing bracket and the role of its last
 * message; the assistant message is serialised by Jackson and inserted there. The spliced body is
 * extracted like any request and {@link Router#record} called with its key. The work is bounded by the
 * body's size (the reply is at most {@link ResponseObserver#MAX_REPLY_CHARS}) and runs after the response
 * has reached the client, so it delays no byte of it.
 *
 * <p>The assistant message is written as the clients write it back: {@code {"role": "assistant",
 * "content": "..."}}; for Anthropic several text blocks become an array of text blocks (a single text
 * block and a plain string give the same key). Nothing is learned when the request's last message is
 * already the assistant's (a prefill the reply continues: the client will merge them), or the body has
 * no {@code messages} array. Thread-safe: no state.
 */
final class AnswerLearning {

    private static final JsonFactory JSON = JsonFactory.builder().build();

    private AnswerLearning() {
    }

    /**
     * Records the continuation of {@code body} with {@code reply} as held by {@code replica}. Returns the
     * result label for the metrics: {@code learned} or {@code unusable_request}.
     */
    static String learn(Router router, Extraction extraction, Endpoint endpoint, byte[] body, List<String> reply,
                        Replica replica) {
        byte[] next = continuation(body, reply, endpoint == Endpoint.MESSAGES);
        if (next == null) {
            return "unusable_request";
        }
        PromptKey key;
        try {
            key = extraction.extract(endpoint, next).key();
        } catch (ExtractionException e) {
            return "unusable_request";
        }
        router.record(key, replica);
        return "learned";
    }

    /**
     * {@code body} with an assistant message holding {@code reply} appended to its top-level
     * {@code messages} array, or null when that is not possible (no such array, or it ends with an
     * assistant message).
     */
    static byte[] continuation(byte[] body, List<String> reply, boolean anthropic) {
        int close = -1;
        int count = 0;
        String lastRole = null;
        try (JsonParser p = JSON.createParser(body)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return null;
            }
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken t = p.nextToken();
                if (!"messages".equals(name) || t != JsonToken.START_ARRAY || close >= 0) {
                    p.skipChildren();
                    continue;
                }
                for (JsonToken e = p.nextToken(); e != JsonToken.END_ARRAY; e = p.nextToken()) {
                    if (e == null) {
                        return null;
                    }
                    count++;
                    lastRole = null;
                    if (e != JsonToken.START_OBJECT) {
                        p.skipChildren();
                        continue;
                    }
                    while (p.nextToken() == JsonToken.FIELD_NAME) {
                        String n = p.currentName();
                        JsonToken v = p.nextToken();
                        if ("role".equals(n) && v == JsonToken.VALUE_STRING) {
                            lastRole = p.getText();
                        } else {
                            p.skipChildren();
                        }
                    }
                }
                long offset = p.currentTokenLocation().getByteOffset();
                if (offset < 0 || offset >= body.length || body[(int) offset] != ']') {
                    return null;
                }
                close = (int) offset;
            }
        } catch (IOException | RuntimeException e) {
            return null;
        }
        if (close < 0 || "assistant".equals(lastRole)) {
            return null;
        }
        byte[] message;
        try {
            message = Responses.JSON.writeValueAsBytes(assistantMessage(reply, anthropic));
        } catch (JsonProcessingException e) {
            return null;
        }
        int comma = count > 0 ? 1 : 0;
        byte[] out = new byte[body.length + comma + message.length];
        System.arraycopy(body, 0, out, 0, close);
        if (comma == 1) {
            out[close] = ',';
        }
        System.arraycopy(message, 0, out, close + comma, message.length);
        System.arraycopy(body, close, out, close + comma + message.length, body.length - close);
        return out;
    }

    private static ObjectNode assistantMessage(List<String> reply, boolean anthropic) {
        ObjectNode m = Responses.JSON.createObjectNode();
        m.put("role", "assistant");
        if (reply.size() == 1 || !anthropic) {
            m.put("content", String.join("", reply));
        } else {
            ArrayNode blocks = m.putArray("content");
            for (String text : reply) {
                blocks.addObject().put("type", "text").put("text", text);
            }
        }
        return m;
    }
}
