package dev.cart.sim;

import java.util.List;

/**
 * Turns chat messages into the prompt text the simulated replica caches, the way a Llama-3 chat
 * template would: a header per message, the content, an end-of-turn marker, and finally the header that
 * opens the assistant's reply. A conversation's turn N is therefore an exact prefix of its turn N+1, and
 * requests that share leading messages share leading cache blocks, as on a real vLLM server.
 */
final class ChatTemplate {

    private static final String BEGIN = "<|begin_of_text|>";
    private static final String HEADER_START = "<|start_header_id|>";
    private static final String HEADER_END = "<|end_header_id|>\n\n";
    private static final String EOT = "<|eot_id|>";

    private ChatTemplate() {}

    /** The prompt for {@code messages}, ending with the generation prompt. */
    static String render(List<Message> messages) {
        int len = BEGIN.length() + 64;
        for (Message m : messages) {
            len += m.content().length() + 48;
        }
        StringBuilder sb = new StringBuilder(len);
        sb.append(BEGIN);
        for (Message m : messages) {
            sb.append(HEADER_START)
                    .append(m.role())
                    .append(HEADER_END)
                    .append(m.content())
                    .append(EOT);
        }
        sb.append(HEADER_START).append("assistant").append(HEADER_END);
        return sb.toString();
    }

    /** The prompt for a plain completion: the text as given, after the begin-of-text marker. */
    static String renderCompletion(String prompt) {
        return BEGIN + prompt;
    }
}
