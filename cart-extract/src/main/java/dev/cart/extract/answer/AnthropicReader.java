package dev.cart.extract.answer;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import dev.cart.core.ServedUsage;
import java.io.IOException;
import org.jspecify.annotations.Nullable;

/**
 * The Anthropic dialect ({@code /v1/messages}): {@code input_tokens} counts only uncached input, so
 * prompt = {@code input_tokens + cache_read_input_tokens + cache_creation_input_tokens} and cached =
 * {@code cache_read_input_tokens} (from the message, or {@code message_start}/{@code message_delta} of a
 * stream); the text of the text content blocks and their {@code text_delta}s. Any other block or delta
 * (tool use, thinking) makes the text unavailable. A {@code text_delta}'s text is appended with where it lay in
 * the event (for {@link ResponseObserver}'s template: its block is the event's own {@code index}); a block's start
 * (whose block may be the count so far) is not, and reading usage is an effect of its own.
 */
final class AnthropicReader implements DialectReader {

    private final AnswerText answer;
    private long inputTokens = ServedUsage.UNKNOWN;
    private long cacheReadTokens = ServedUsage.UNKNOWN;
    private long cacheCreationTokens = ServedUsage.UNKNOWN;

    AnthropicReader(AnswerText answer) {
        this.answer = answer;
    }

    @Override
    public ServedUsage usage() {
        if (inputTokens < 0) {
            return new ServedUsage(ServedUsage.UNKNOWN, cacheReadTokens);
        }
        long prompt = inputTokens + Math.max(0, cacheReadTokens) + Math.max(0, cacheCreationTokens);
        return new ServedUsage(prompt, cacheReadTokens);
    }

    @Override
    public void read(JsonParser p) throws IOException {
        String type = null;
        long index = -1;
        String deltaType = null;
        String deltaText = null;
        long deltaFrom = -1;
        long deltaTo = -1;
        Block started = null;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken t = p.nextToken();
            switch (name) {
                case "type" -> type = t == JsonToken.VALUE_STRING ? p.getText() : null;
                case "index" -> index = t == JsonToken.VALUE_NUMBER_INT ? p.getLongValue() : -1;
                case "usage" -> {
                    if (t == JsonToken.START_OBJECT) {
                        usage(p);
                    } else {
                        p.skipChildren();
                    }
                }
                case "message" -> { // message_start: {usage, content, ...}
                    if (t == JsonToken.START_OBJECT) {
                        while (p.nextToken() == JsonToken.FIELD_NAME) {
                            String n = p.currentName();
                            JsonToken v = p.nextToken();
                            if ("usage".equals(n) && v == JsonToken.START_OBJECT) {
                                usage(p);
                            } else if ("content".equals(n) && v == JsonToken.START_ARRAY) {
                                blocks(p);
                            } else {
                                p.skipChildren();
                            }
                        }
                    } else {
                        p.skipChildren();
                    }
                }
                case "content" -> { // a whole (non-streamed) message
                    if (t == JsonToken.START_ARRAY) {
                        blocks(p);
                    } else {
                        p.skipChildren();
                    }
                }
                case "content_block" -> { // content_block_start
                    if (t == JsonToken.START_OBJECT) {
                        started = block(p);
                    } else {
                        p.skipChildren();
                    }
                }
                case "delta" -> {
                    if (t == JsonToken.START_OBJECT) {
                        while (p.nextToken() == JsonToken.FIELD_NAME) {
                            String n = p.currentName();
                            JsonToken v = p.nextToken();
                            if ("type".equals(n) && v == JsonToken.VALUE_STRING) {
                                deltaType = p.getText();
                            } else if ("text".equals(n) && v == JsonToken.VALUE_STRING && answer.collecting()) {
                                deltaText = p.getText();
                                deltaFrom = p.currentTokenLocation().getByteOffset(); // its opening quote
                                deltaTo = p.currentLocation().getByteOffset(); // after its closing quote
                            } else {
                                p.skipChildren();
                            }
                        }
                    } else {
                        p.skipChildren();
                    }
                }
                default -> p.skipChildren();
            }
        }
        if (started != null) {
            apply(started, index < 0 ? answer.blockCount() : index);
        }
        if ("content_block_delta".equals(type)) {
            if ("text_delta".equals(deltaType)) {
                if (deltaText != null) {
                    answer.append((int) Math.max(0, Math.min(Integer.MAX_VALUE, index)), deltaText, deltaFrom, deltaTo);
                }
            } else {
                answer.unavailable("not_text"); // tool input, thinking, signatures: not plain text
            }
        }
    }

    private void blocks(JsonParser p) throws IOException {
        int i = 0;
        for (JsonToken t; (t = p.nextToken()) != JsonToken.END_ARRAY && t != null; i++) {
            if (t == JsonToken.START_OBJECT) {
                apply(block(p), i);
            } else {
                p.skipChildren();
                answer.unavailable("not_text");
            }
        }
    }

    /** A content block's type and text (null when it has none). */
    private record Block(@Nullable String type, @Nullable String text) {}

    private Block block(JsonParser p) throws IOException {
        String type = null;
        String text = null;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String n = p.currentName();
            JsonToken v = p.nextToken();
            if ("type".equals(n) && v == JsonToken.VALUE_STRING) {
                type = p.getText();
            } else if ("text".equals(n) && v == JsonToken.VALUE_STRING && answer.collecting()) {
                text = p.getText();
            } else {
                p.skipChildren();
            }
        }
        return new Block(type, text);
    }

    /** Keeps a text block's text at {@code position}; any other block makes the answer unavailable. */
    private void apply(Block b, long position) {
        if (!"text".equals(b.type())) {
            answer.unavailable("not_text");
            return;
        }
        answer.append((int) Math.min(Integer.MAX_VALUE, position), b.text() == null ? "" : b.text());
    }

    @Override
    public void readUsage(JsonParser p) throws IOException {
        usage(p);
    }

    private void usage(JsonParser p) throws IOException {
        answer.otherEffect();
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String n = p.currentName();
            JsonToken v = p.nextToken();
            if (v != JsonToken.VALUE_NUMBER_INT) {
                p.skipChildren();
                continue;
            }
            switch (n) {
                case "input_tokens" -> inputTokens = p.getLongValue();
                case "cache_read_input_tokens" -> cacheReadTokens = p.getLongValue();
                case "cache_creation_input_tokens" -> cacheCreationTokens = p.getLongValue();
                default -> {
                    // output_tokens and others: not about the prompt cache
                }
            }
        }
    }
}
