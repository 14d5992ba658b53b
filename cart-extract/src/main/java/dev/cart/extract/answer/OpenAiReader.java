package dev.cart.extract.answer;

import static dev.cart.extract.answer.DialectReader.END;
import static dev.cart.extract.answer.DialectReader.nextField;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.SerializableString;
import dev.cart.core.ServedUsage;
import java.io.IOException;

/**
 * The OpenAI dialect ({@code /v1/chat/completions}, {@code /v1/completions}): prompt =
 * {@code usage.prompt_tokens}, cached = {@code usage.prompt_tokens_details.cached_tokens} (from a JSON
 * answer or the usage chunk at the end of a stream); the text of {@code choices[0].message.content} or of
 * the {@code choices[0].delta.content} deltas. Tool calls or a second choice make the text unavailable.
 *
 * <p>Members are found with {@link DialectReader#nextField}, each object's names listed in the order
 * OpenAI-compatible servers write them (a chunk: {@code id, object, created, model, choices, usage}; a choice:
 * {@code index, delta} in a chunk, {@code index, message, logprobs, finish_reason} in a JSON answer; a delta:
 * {@code role, content}): in that order a name costs a byte comparison, and any order reads the same. A delta's text is appended with where it
 * lay in the event (for {@link ResponseObserver}'s template); reading usage is an effect of its own.
 */
final class OpenAiReader implements DialectReader {

    private static final SerializableString[] ANSWER =
            DialectReader.names("id", "object", "created", "model", "choices", "usage");
    private static final int CHOICES = 4;
    private static final int USAGE = 5;

    /** A choice's members in a chunk's order; a JSON answer's order swaps {@code delta} and {@code message}. */
    private static final SerializableString[] CHUNK_CHOICE =
            DialectReader.names("index", "delta", "logprobs", "finish_reason", "message");

    private static final SerializableString[] ANSWER_CHOICE =
            DialectReader.names("index", "message", "logprobs", "finish_reason", "delta");
    private static final int INDEX = 0;
    /** {@code delta} in a chunk's order, {@code message} in an answer's: read alike. */
    private static final int BODY = 1;

    private static final int LOGPROBS = 2;
    /** {@code message} in a chunk's order, {@code delta} in an answer's. */
    private static final int OTHER_BODY = 4;

    private static final SerializableString[] MESSAGE_MEMBERS =
            DialectReader.names("role", "content", "tool_calls", "function_call");
    private static final int CONTENT = 1;
    private static final int TOOL_CALLS = 2;
    private static final int FUNCTION_CALL = 3;

    private static final SerializableString[] USAGE_MEMBERS =
            DialectReader.names("prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details");
    private static final int PROMPT_TOKENS = 0;
    private static final int PROMPT_TOKENS_DETAILS = 3;

    private static final SerializableString[] DETAILS = DialectReader.names("cached_tokens");
    private static final int CACHED_TOKENS = 0;

    private final AnswerText answer;
    /** {@link #CHUNK_CHOICE} or {@link #ANSWER_CHOICE}. */
    private final SerializableString[] choiceOrder;

    private long promptTokens = ServedUsage.UNKNOWN;
    private long cachedTokens = ServedUsage.UNKNOWN;

    /** {@code streamed}: the objects are a stream's chunks (their choices hold a delta), else JSON answers. */
    OpenAiReader(AnswerText answer, boolean streamed) {
        this.answer = answer;
        this.choiceOrder = streamed ? CHUNK_CHOICE : ANSWER_CHOICE;
    }

    @Override
    public void read(JsonParser p) throws IOException {
        int expected = 0;
        for (int f; (f = nextField(p, ANSWER, expected)) != END; ) {
            expected = f < 0 ? expected : f + 1;
            JsonToken t = p.nextToken();
            if (f == USAGE && t == JsonToken.START_OBJECT) {
                usage(p);
            } else if (f == CHOICES && t == JsonToken.START_ARRAY) {
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

    @Override
    public void readUsage(JsonParser p) throws IOException {
        usage(p);
    }

    private void usage(JsonParser p) throws IOException {
        answer.otherEffect();
        int expected = 0;
        for (int f; (f = nextField(p, USAGE_MEMBERS, expected)) != END; ) {
            expected = f < 0 ? expected : f + 1;
            JsonToken t = p.nextToken();
            if (f == PROMPT_TOKENS && t == JsonToken.VALUE_NUMBER_INT) {
                promptTokens = p.getLongValue();
            } else if (f == PROMPT_TOKENS_DETAILS && t == JsonToken.START_OBJECT) {
                for (int d; (d = nextField(p, DETAILS, 0)) != END; ) {
                    JsonToken v = p.nextToken();
                    if (d == CACHED_TOKENS && v == JsonToken.VALUE_NUMBER_INT) {
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
        long contentFrom = -1;
        long contentTo = -1;
        boolean tools = false;
        int expected = 0;
        for (int f; (f = nextField(p, choiceOrder, expected)) != END; ) {
            expected = f < 0 ? expected : f == OTHER_BODY ? LOGPROBS : f + 1;
            JsonToken t = p.nextToken();
            if (f == INDEX && t == JsonToken.VALUE_NUMBER_INT) {
                index = p.getLongValue();
            } else if ((f == BODY || f == OTHER_BODY) && t == JsonToken.START_OBJECT) {
                int expectedMember = 0;
                for (int m; (m = nextField(p, MESSAGE_MEMBERS, expectedMember)) != END; ) {
                    expectedMember = m < 0 ? expectedMember : m + 1;
                    JsonToken v = p.nextToken();
                    if (m == CONTENT && v == JsonToken.VALUE_STRING && answer.collecting()) {
                        content = p.getText();
                        contentFrom = p.currentTokenLocation().getByteOffset(); // its opening quote
                        contentTo = p.currentLocation().getByteOffset(); // after its closing quote
                    } else if (m == TOOL_CALLS || m == FUNCTION_CALL) {
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
            answer.append(0, content, contentFrom, contentTo);
        }
    }
}
