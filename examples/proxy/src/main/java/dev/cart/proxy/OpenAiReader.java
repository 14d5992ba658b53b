package dev.cart.proxy;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import dev.cart.core.ServedUsage;
import java.io.IOException;

/**
 * The OpenAI dialect ({@code /v1/chat/completions}, {@code /v1/completions}): prompt =
 * {@code usage.prompt_tokens}, cached = {@code usage.prompt_tokens_details.cached_tokens} (from a JSON
 * answer or the usage chunk at the end of a stream); the text of {@code choices[0].message.content} or of
 * the {@code choices[0].delta.content} deltas. Tool calls or a second choice make the text unavailable.
 */
final class OpenAiReader implements DialectReader {

    private final AnswerText answer;
    private long promptTokens = ServedUsage.UNKNOWN;
    private long cachedTokens = ServedUsage.UNKNOWN;

    OpenAiReader(AnswerText answer) {
        this.answer = answer;
    }

    @Override
    public void read(JsonParser p) throws IOException {
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken t = p.nextToken();
            if ("usage".equals(name) && t == JsonToken.START_OBJECT) {
                usage(p);
            } else if ("choices".equals(name) && t == JsonToken.START_ARRAY) {
                while (p.nextToken() == JsonToken.START_OBJECT) {
                    choice(p);
                }
            } else {
                p.skipChildren();
            }
        }
    }

    @Override
    public ServedUsage usage() {
        return new ServedUsage(promptTokens, cachedTokens);
    }

    private void usage(JsonParser p) throws IOException {
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken t = p.nextToken();
            if ("prompt_tokens".equals(name) && t == JsonToken.VALUE_NUMBER_INT) {
                promptTokens = p.getLongValue();
            } else if ("prompt_tokens_details".equals(name) && t == JsonToken.START_OBJECT) {
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String n = p.currentName();
                    JsonToken v = p.nextToken();
                    if ("cached_tokens".equals(n) && v == JsonToken.VALUE_NUMBER_INT) {
                        cachedTokens = p.getLongValue();
                    } else {
                        p.skipChildren();
                    }
                }
            } else {
                p.skipChildren();
            }
        }
    }

    /** One element of {@code choices}: {@code index} and {@code message} or {@code delta} in any order. */
    private void choice(JsonParser p) throws IOException {
        long index = 0;
        String content = null;
        boolean tools = false;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken t = p.nextToken();
            if ("index".equals(name) && t == JsonToken.VALUE_NUMBER_INT) {
                index = p.getLongValue();
            } else if (("message".equals(name) || "delta".equals(name)) && t == JsonToken.START_OBJECT) {
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String n = p.currentName();
                    JsonToken v = p.nextToken();
                    if ("content".equals(n) && v == JsonToken.VALUE_STRING && answer.collecting()) {
                        content = p.getText();
                    } else if ("tool_calls".equals(n) || "function_call".equals(n)) {
                        tools |= DialectReader.present(p, v); // vLLM sends "tool_calls": [] with plain answers
                    } else {
                        p.skipChildren();
                    }
                }
            } else {
                p.skipChildren();
            }
        }
        if (index != 0) {
            answer.unavailable("several_choices");
        } else if (tools) {
            answer.unavailable("not_text");
        } else if (content != null) {
            answer.append(0, content);
        }
    }
}
