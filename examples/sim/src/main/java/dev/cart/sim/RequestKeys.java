package dev.cart.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.cart.core.PromptKey;
import dev.cart.extract.Endpoint;
import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * Makes the router's key for a request body, the way the proxy does: from the JSON body bytes, per
 * endpoint, in 64-character blocks with a message boundary after each message.
 */
final class RequestKeys {

    private static final ObjectMapper JSON = new ObjectMapper();

    private RequestKeys() {
    }

    /** The routing key of {@code body} sent to {@code endpoint}. */
    static PromptKey key(Endpoint endpoint, byte[] body) {
        JsonNode root;
        try {
            root = JSON.readTree(body);
        } catch (IOException e) {
            throw new UncheckedIOException("workload body is not JSON", e);
        }
        PromptKey.Builder b = PromptKey.textBuilder(PromptKey.DEFAULT_BLOCK_CHARS);
        switch (endpoint) {
            case COMPLETIONS -> b.append(root.path("prompt").asText(""));
            case CHAT_COMPLETIONS -> messages(b, root.path("messages"));
            case MESSAGES -> {
                JsonNode system = root.path("system");
                if (system.isTextual() && !system.asText().isEmpty()) {
                    b.append("system\n").append(system.asText()).boundary();
                }
                messages(b, root.path("messages"));
            }
        }
        return b.build();
    }

    private static void messages(PromptKey.Builder b, JsonNode messages) {
        for (JsonNode m : messages) {
            b.append(m.path("role").asText("")).append('\n').append(m.path("content").asText("")).boundary();
        }
    }
}
