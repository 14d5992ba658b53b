package dev.cart.kvevents;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One request's prompt as an engine's {@code POST /tokenize} takes it (vLLM's): for a chat request its
 * messages, tools and template settings, for a completion its prompt, so the engine applies its own chat
 * template and returns exactly the tokens it will compute. Also the request's model and {@code cache_salt},
 * which the lookup needs. Immutable.
 *
 * @param api    which API the request came in on
 * @param model  the request's {@code model}, or null
 * @param salt   the request's {@code cache_salt}, or null
 * @param body   the JSON body to post to {@code /tokenize}
 */
public record TokenizeRequest(
        Api api, @Nullable String model, @Nullable String salt, byte[] body) {

    private static final ObjectMapper JSON = new ObjectMapper();

    /** The API a request came in on. */
    public enum Api {
        /** {@code POST /v1/chat/completions}. */
        CHAT,
        /** {@code POST /v1/completions} (a single string prompt). */
        COMPLETIONS,
        /** {@code POST /v1/messages} (Anthropic's: {@code system} becomes the first message). */
        MESSAGES
    }

    /**
     * Checks the arguments.
     *
     * @param api   which API the request came in on
     * @param model the request's {@code model}, or null
     * @param salt  the request's {@code cache_salt}, or null
     * @param body  the JSON body to post to {@code /tokenize}
     * @throws NullPointerException if {@code api} or {@code body} is null
     */
    public TokenizeRequest {
        Objects.requireNonNull(api, "api");
        Objects.requireNonNull(body, "body");
    }

    /**
     * The tokenize request for a client's request body.
     *
     * @param api         the API the request came in on
     * @param requestBody the client's JSON body, as received
     * @return the body to post to {@code /tokenize}, with the request's model and {@code cache_salt}
     * @throws IllegalArgumentException when the body is not a JSON object with what the API requires
     *     ({@code messages}, or a string {@code prompt}); such a request routes in the approximate mode
     */
    public static TokenizeRequest of(Api api, byte[] requestBody) {
        JsonNode root;
        try {
            root = JSON.readTree(requestBody);
        } catch (IOException e) {
            throw new IllegalArgumentException("the request body is not JSON");
        }
        if (root == null || !root.isObject()) {
            throw new IllegalArgumentException("the request body is not a JSON object");
        }
        @Nullable
        String model = root.path("model").isTextual() ? root.get("model").asText() : null;
        @Nullable
        String salt =
                root.path("cache_salt").isTextual() ? root.get("cache_salt").asText() : null;
        ObjectNode out = JSON.createObjectNode();
        if (model != null) {
            out.put("model", model);
        }
        switch (api) {
            case COMPLETIONS -> {
                JsonNode p = root.get("prompt");
                if (p != null && p.isArray() && p.size() == 1) {
                    p = p.get(0);
                }
                if (p == null || !p.isTextual()) {
                    throw new IllegalArgumentException("a completion needs one string prompt to be matched");
                }
                out.put("prompt", p.asText());
                copy(root, out, "add_special_tokens");
            }
            case CHAT, MESSAGES -> {
                JsonNode messages = root.get("messages");
                if (messages == null || !messages.isArray()) {
                    throw new IllegalArgumentException("a chat request needs messages");
                }
                ArrayNode m = out.putArray("messages");
                JsonNode system = root.get("system");
                if (api == Api.MESSAGES && system != null && !system.isNull()) {
                    m.addObject().put("role", "system").set("content", system);
                }
                m.addAll((ArrayNode) messages);
                for (String f : new String[] {
                    "tools",
                    "chat_template",
                    "chat_template_kwargs",
                    "add_generation_prompt",
                    "continue_final_message",
                    "add_special_tokens",
                    "documents"
                }) {
                    copy(root, out, f);
                }
            }
        }
        try {
            return new TokenizeRequest(api, model, salt, JSON.writeValueAsBytes(out));
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot write the tokenize request", e);
        }
    }

    private static void copy(JsonNode from, ObjectNode to, String field) {
        JsonNode v = from.get(field);
        if (v != null && !v.isNull()) {
            to.set(field, v);
        }
    }
}
