package dev.cart.proxy;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import dev.cart.core.PromptKey;
import dev.cart.extract.Endpoint;
import dev.cart.extract.ExtractedRequest;
import dev.cart.extract.ExtractionException;

/**
 * Turns a routed request body into its routing key. Interim implementation on Jackson's tree model,
 * used until the streaming extractor of cart-extract is merged; it follows the specification's key
 * rules (chat: the messages in order; completions: the prompt; messages: system then messages).
 */
final class Extraction {

    private final int blockChars;

    Extraction(ProxyConfig config) {
        this.blockChars = config.cache().blockChars();
    }

    ExtractedRequest extract(Endpoint endpoint, byte[] body) throws ExtractionException {
        JsonNode root;
        try {
            root = Responses.JSON.readTree(body);
        } catch (JsonProcessingException e) {
            throw new ExtractionException(400, "invalid_json", null,
                    "the request body is not valid JSON");
        } catch (java.io.IOException e) {
            throw new ExtractionException(400, "invalid_json", null, "the request body could not be read");
        }
        if (root == null || !root.isObject()) {
            throw new ExtractionException(400, "invalid_type", null, "the request body must be a JSON object");
        }
        JsonNode model = root.get("model");
        if (model != null && !model.isNull() && !model.isTextual()) {
            throw new ExtractionException(400, "invalid_type", "model", "'model' must be a string");
        }
        JsonNode stream = root.get("stream");
        if (stream != null && !stream.isNull() && !stream.isBoolean()) {
            throw new ExtractionException(400, "invalid_type", "stream", "'stream' must be a boolean");
        }
        PromptKey.Builder key = PromptKey.textBuilder(blockChars);
        switch (endpoint) {
            case CHAT_COMPLETIONS -> messages(root, key, true);
            case COMPLETIONS -> {
                JsonNode p = root.get("prompt");
                if (p == null) {
                    throw new ExtractionException(400, "missing_field", "prompt", "'prompt' is required");
                }
                if (p.isTextual()) {
                    key.append(p.asText());
                } else if (p.isArray()) {
                    for (JsonNode x : p) {
                        key.append(x.isTextual() ? x.asText() : x.toString()).boundary();
                    }
                } else {
                    throw new ExtractionException(400, "invalid_type", "prompt",
                            "'prompt' must be a string or an array");
                }
            }
            case MESSAGES -> {
                JsonNode system = root.get("system");
                if (system != null && !system.isNull()) {
                    key.append(system.isTextual() ? system.asText() : system.toString()).boundary();
                }
                messages(root, key, true);
            }
            default -> throw new IllegalStateException(endpoint.toString());
        }
        return new ExtractedRequest(key.build(), model == null || model.isNull() ? null : model.asText(),
                stream != null && stream.asBoolean());
    }

    private static void messages(JsonNode root, PromptKey.Builder key, boolean required)
            throws ExtractionException {
        JsonNode messages = root.get("messages");
        if (messages == null) {
            if (required) {
                throw new ExtractionException(400, "missing_field", "messages", "'messages' is required");
            }
            return;
        }
        if (!messages.isArray()) {
            throw new ExtractionException(400, "invalid_type", "messages", "'messages' must be an array");
        }
        for (int i = 0; i < messages.size(); i++) {
            JsonNode m = messages.get(i);
            if (!m.isObject()) {
                throw new ExtractionException(400, "invalid_type", "messages[" + i + "]",
                        "each message must be an object");
            }
            JsonNode role = m.get("role");
            key.append(role == null ? "" : role.asText()).append('\n');
            JsonNode content = m.get("content");
            if (content != null && !content.isNull()) {
                key.append(content.isTextual() ? content.asText() : content.toString());
            }
            key.boundary();
        }
    }
}
