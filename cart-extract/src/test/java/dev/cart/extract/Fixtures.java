package dev.cart.extract;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.List;

/** The JSON request fixtures under {@code src/test/resources/fixtures}, and helpers to show key text. */
final class Fixtures {

    static final List<String> OPENAI = List.of(
            "chat-system-multiturn",
            "chat-developer-name",
            "chat-tools",
            "chat-legacy-functions",
            "chat-image-url",
            "chat-image-inline",
            "chat-input-audio",
            "chat-file",
            "chat-stream",
            "chat-vllm-media",
            "completions-string",
            "completions-array",
            "completions-tokens",
            "completions-token-batch");
    static final List<String> ANTHROPIC = List.of(
            "messages-basic",
            "messages-system-blocks",
            "messages-tools",
            "messages-image-base64",
            "messages-image-url",
            "messages-documents",
            "messages-document-url",
            "messages-thinking");

    private Fixtures() {}

    static List<String> all() {
        return java.util.stream.Stream.concat(OPENAI.stream(), ANTHROPIC.stream())
                .toList();
    }

    static byte[] bytes(String name) {
        String dir = name.startsWith("messages-") ? "anthropic" : "openai";
        String res = "/fixtures/" + dir + "/" + name + ".json";
        try (InputStream in = Fixtures.class.getResourceAsStream(res)) {
            if (in == null) {
                throw new IllegalArgumentException("no fixture " + res);
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static Endpoint endpoint(String name) {
        if (name.startsWith("chat-")) {
            return Endpoint.CHAT_COMPLETIONS;
        }
        if (name.startsWith("completions-")) {
            return Endpoint.COMPLETIONS;
        }
        return Endpoint.MESSAGES;
    }

    /** Key text with its delimiters made visible: {@code <0> <S> <L> <I> <F> <A> <,>} and {@code |} at boundaries. */
    static String show(String keyText) {
        StringBuilder sb = new StringBuilder();
        for (char c : keyText.toCharArray()) {
            switch (c) {
                case Extraction.MODEL -> sb.append("<0>");
                case Extraction.SECTION -> sb.append("<S>");
                case Extraction.LABEL_END -> sb.append("<L>");
                case Extraction.ITEM -> sb.append("<I>");
                case Extraction.FIELD -> sb.append("<F>");
                case Extraction.ATTR -> sb.append("<A>");
                case Extraction.SEP -> sb.append("<,>");
                case Extraction.BOUNDARY_MARK -> sb.append('|');
                default -> sb.append(c);
            }
        }
        return sb.toString();
    }

    /** The shown model marker for {@code model}. */
    static String marker(String model) {
        return show(Extraction.modelMarker(model));
    }
}
