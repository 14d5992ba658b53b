package dev.cart.extract;

import java.util.Arrays;
import java.util.List;
import java.util.Optional;

/** The request endpoints whose bodies carry a prompt CART routes by. */
public enum Endpoint {
    /** OpenAI {@code POST /v1/chat/completions}: the key is the tools, then the messages. */
    CHAT_COMPLETIONS("/v1/chat/completions"),
    /** OpenAI {@code POST /v1/completions}: the key is the prompt. */
    COMPLETIONS("/v1/completions"),
    /** Anthropic {@code POST /v1/messages}: the key is the tools, the system prompt, then the messages. */
    MESSAGES("/v1/messages");

    /** Each endpoint's {@link Optional}, made once: {@link #forPath} answers without a copy or an allocation. */
    private static final List<Optional<Endpoint>> FOUND =
            Arrays.stream(values()).map(Optional::of).toList();

    private final String path;

    Endpoint(String path) {
        this.path = path;
    }

    /**
     * The request path, e.g. {@code /v1/chat/completions}.
     *
     * @return the path
     */
    public String path() {
        return path;
    }

    /**
     * The endpoint served at {@code path} (exact match, no query string), if any.
     *
     * @param path a request path, e.g. {@code /v1/messages}
     * @return the endpoint, or empty for any other path
     */
    public static Optional<Endpoint> forPath(String path) {
        for (int i = 0; i < FOUND.size(); i++) {
            Optional<Endpoint> e = FOUND.get(i);
            if (e.get().path.equals(path)) {
                return e;
            }
        }
        return Optional.empty();
    }
}
