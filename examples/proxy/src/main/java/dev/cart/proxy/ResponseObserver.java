package dev.cart.proxy;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import dev.cart.core.ServedUsage;
import dev.cart.extract.Endpoint;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Reads what a routed response says about itself while its bytes pass to the client: the replica's
 * prompt-cache usage (for {@code Lease.succeeded(ServedUsage)}) and the text of the answer (for learning
 * the next turn's prefix). It never holds back, reorders or changes a byte: the forwarder writes each
 * chunk to the client first and then hands the same bytes here.
 *
 * <p>How, by response kind:
 * <ul>
 *   <li>{@code text/event-stream}: bytes are cut into lines; each complete {@code data:} line is parsed
 *       once, with Jackson's streaming parser (no tree). A line longer than {@link #MAX_LINE_BYTES} is
 *       skipped, not buffered. This reads the OpenAI usage chunk at the end of a stream
 *       ({@code stream_options.include_usage}), {@code choices[0].delta.content}, and Anthropic's
 *       {@code message_start}/{@code message_delta} usage and {@code content_block_delta} text.</li>
 *   <li>JSON: a copy is kept up to {@link #MAX_JSON_BYTES} and parsed once at the end; a larger body is
 *       given up on (usage unknown, nothing learned) and its copy dropped at once.</li>
 *   <li>Anything else, or a compressed body: not observed ({@link #create} returns null).</li>
 * </ul>
 *
 * <p>Usage: OpenAI-style ({@code /v1/chat/completions}, {@code /v1/completions}): prompt =
 * {@code usage.prompt_tokens}, cached = {@code usage.prompt_tokens_details.cached_tokens}. Anthropic
 * ({@code /v1/messages}): {@code input_tokens} counts only uncached input, so prompt = {@code input_tokens +
 * cache_read_input_tokens + cache_creation_input_tokens} and cached = {@code cache_read_input_tokens}. A
 * field the replica did not send is {@link ServedUsage#UNKNOWN}, never zero.
 *
 * <p>The answer is kept as text only while it is plain text of one choice and at most
 * {@link #MAX_REPLY_CHARS} characters: tool calls, non-text content blocks, several choices or a longer
 * answer make it unavailable ({@link #reply()} returns null, {@link #replyProblem()} says why).
 *
 * <p>Cost: a streamed chunk costs a scan for line ends plus one streaming parse of each event line (a
 * few hundred bytes: about a microsecond). Not thread-safe: one instance per response, used by the
 * thread relaying it.
 */
final class ResponseObserver {

    /** Longest SSE line parsed; longer lines are skipped. */
    static final int MAX_LINE_BYTES = 1024 * 1024;
    /** Largest JSON body parsed; a larger one is not observed. */
    static final int MAX_JSON_BYTES = 1024 * 1024;
    /** Longest answer kept for learning. */
    static final int MAX_REPLY_CHARS = 64 * 1024;

    private static final JsonFactory JSON = JsonFactory.builder().build();

    private final boolean anthropic;
    private final boolean sse;
    private final boolean collectReply;

    // SSE line assembly
    private byte[] line = new byte[256];
    private int lineLength;
    private boolean skippingLine;

    // JSON body copy
    private byte[] json;
    private int jsonLength;
    private boolean jsonAbandoned;

    // usage as reported (UNKNOWN until seen)
    private long promptTokens = ServedUsage.UNKNOWN;
    private long cachedTokens = ServedUsage.UNKNOWN;
    private long inputTokens = ServedUsage.UNKNOWN;
    private long cacheReadTokens = ServedUsage.UNKNOWN;
    private long cacheCreationTokens = ServedUsage.UNKNOWN;

    // the answer
    private final List<StringBuilder> blocks = new ArrayList<>();
    private int replyChars;
    private String replyProblem;
    private int parseFailures;

    private ResponseObserver(Endpoint endpoint, boolean sse, boolean collectReply) {
        this.anthropic = endpoint == Endpoint.MESSAGES;
        this.sse = sse;
        this.collectReply = collectReply && endpoint != Endpoint.COMPLETIONS;
        if (!this.collectReply) {
            replyProblem = "not_collected";
        }
    }

    /**
     * An observer for a response to {@code endpoint}, or null when the response cannot be read (a content
     * type that is neither JSON nor an event stream, or a content encoding other than identity).
     */
    static ResponseObserver create(Endpoint endpoint, String contentType, String contentEncoding,
                                   boolean collectReply) {
        if (endpoint == null) {
            return null;
        }
        if (contentEncoding != null && !contentEncoding.isBlank()
                && !contentEncoding.trim().equalsIgnoreCase("identity")) {
            return null;
        }
        String ct = contentType == null ? "" : contentType.toLowerCase(Locale.ROOT);
        if (ct.startsWith("text/event-stream")) {
            return new ResponseObserver(endpoint, true, collectReply);
        }
        if (ct.startsWith("application/json") || ct.isEmpty()) {
            return new ResponseObserver(endpoint, false, collectReply);
        }
        return null;
    }

    /** Bytes that were just relayed to the client, in order. */
    void accept(byte[] b, int off, int len) {
        if (sse) {
            acceptLines(b, off, len);
        } else if (!jsonAbandoned) {
            if ((long) jsonLength + len > MAX_JSON_BYTES) {
                jsonAbandoned = true;
                json = null;
                replyUnavailable("too_long");
                return;
            }
            if (json == null) {
                json = new byte[Math.max(1024, len)];
            } else if (jsonLength + len > json.length) {
                json = Arrays.copyOf(json, Math.min(MAX_JSON_BYTES, Math.max(jsonLength + len, json.length * 2)));
            }
            System.arraycopy(b, off, json, jsonLength, len);
            jsonLength += len;
        }
    }

    /** The body ended normally: parses what is pending (a JSON body, a last SSE line without its newline). */
    void finish() {
        if (sse) {
            if (lineLength > 0 && !skippingLine) {
                line(line, lineLength);
            }
            lineLength = 0;
        } else if (!jsonAbandoned && json != null) {
            parseEvent(json, 0, jsonLength);
            json = null;
        }
    }

    /**
     * Events (or the JSON body) that started as a JSON object but could not be parsed: what they said about
     * usage or the reply is lost ({@code cart_response_parse_failures_total}).
     */
    int parseFailures() {
        return parseFailures;
    }

    /** What the replica reported, {@link ServedUsage#UNKNOWN} for each field it did not. */
    ServedUsage usage() {
        if (!anthropic) {
            return new ServedUsage(promptTokens, cachedTokens);
        }
        if (inputTokens < 0) {
            return new ServedUsage(ServedUsage.UNKNOWN, cacheReadTokens);
        }
        long prompt = inputTokens + Math.max(0, cacheReadTokens) + Math.max(0, cacheCreationTokens);
        return new ServedUsage(prompt, cacheReadTokens);
    }

    /**
     * The answer's text blocks (one for OpenAI; one per text block for Anthropic), or null when it is not
     * available as plain text (see {@link #replyProblem()}).
     */
    List<String> reply() {
        if (replyProblem != null || blocks.isEmpty()) {
            return null;
        }
        List<String> out = new ArrayList<>(blocks.size());
        for (StringBuilder b : blocks) {
            out.add(b.toString());
        }
        return out;
    }

    /**
     * Why {@link #reply()} is null: {@code not_collected}, {@code too_long}, {@code not_text} (tool
     * calls, non-text blocks), {@code several_choices}, {@code empty}; null when the reply is available.
     */
    String replyProblem() {
        if (replyProblem == null && blocks.isEmpty()) {
            return "empty";
        }
        return replyProblem;
    }

    // ---- SSE ----

    private void acceptLines(byte[] b, int off, int len) {
        int end = off + len;
        int start = off;
        for (int i = off; i < end; i++) {
            if (b[i] == '\n') {
                appendLine(b, start, i - start);
                if (!skippingLine) {
                    line(line, lineLength);
                }
                lineLength = 0;
                skippingLine = false;
                start = i + 1;
            }
        }
        appendLine(b, start, end - start);
    }

    private void appendLine(byte[] b, int off, int len) {
        if (skippingLine || len == 0) {
            return;
        }
        if ((long) lineLength + len > MAX_LINE_BYTES) {
            skippingLine = true;
            lineLength = 0;
            replyUnavailable("too_long"); // a skipped event may have carried part of the answer
            return;
        }
        if (lineLength + len > line.length) {
            line = Arrays.copyOf(line, Math.min(MAX_LINE_BYTES, Math.max(lineLength + len, line.length * 2)));
        }
        System.arraycopy(b, off, line, lineLength, len);
        lineLength += len;
    }

    /** One complete line (without its newline). Only {@code data:} lines carry JSON. */
    private void line(byte[] b, int len) {
        if (len > 0 && b[len - 1] == '\r') {
            len--;
        }
        if (len < 5 || b[0] != 'd' || b[1] != 'a' || b[2] != 't' || b[3] != 'a' || b[4] != ':') {
            return;
        }
        int start = 5;
        if (start < len && b[start] == ' ') {
            start++;
        }
        if (start < len && b[start] == '{') {
            parseEvent(b, start, len - start);
        }
        if (line.length > 64 * 1024 && lineLength > 0) {
            line = new byte[256]; // do not keep a large buffer for the rest of a long stream
        }
    }

    // ---- JSON ----

    /** Parses one JSON object (an event or a whole body); anything that is not a JSON object is ignored. */
    private void parseEvent(byte[] b, int off, int len) {
        try (JsonParser p = JSON.createParser(b, off, len)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return;
            }
            if (anthropic) {
                anthropicEvent(p);
            } else {
                openAiEvent(p);
            }
        } catch (IOException | RuntimeException e) {
            // not JSON the observer understands: the client got it unchanged; nothing to learn from it, but
            // the usage or reply it may have carried is lost, so it is counted (parseFailures())
            parseFailures++;
        }
    }

    private void openAiEvent(JsonParser p) throws IOException {
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken t = p.nextToken();
            if ("usage".equals(name) && t == JsonToken.START_OBJECT) {
                openAiUsage(p);
            } else if ("choices".equals(name) && t == JsonToken.START_ARRAY) {
                while (p.nextToken() == JsonToken.START_OBJECT) {
                    openAiChoice(p);
                }
            } else {
                p.skipChildren();
            }
        }
    }

    private void openAiUsage(JsonParser p) throws IOException {
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
    private void openAiChoice(JsonParser p) throws IOException {
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
                    if ("content".equals(n) && v == JsonToken.VALUE_STRING && collectReply) {
                        content = p.getText();
                    } else if ("tool_calls".equals(n) || "function_call".equals(n)) {
                        tools |= present(p, v); // vLLM sends "tool_calls": [] with plain answers
                    } else {
                        p.skipChildren();
                    }
                }
            } else {
                p.skipChildren();
            }
        }
        if (index != 0) {
            replyUnavailable("several_choices");
        } else if (tools) {
            replyUnavailable("not_text");
        } else if (content != null) {
            appendReply(0, content);
        }
    }

    /** Skips the value at {@code t}; true unless it is null or an empty array. */
    private static boolean present(JsonParser p, JsonToken t) throws IOException {
        if (t == JsonToken.VALUE_NULL) {
            return false;
        }
        if (t == JsonToken.START_ARRAY) {
            boolean empty = true;
            for (JsonToken x = p.nextToken(); x != null && x != JsonToken.END_ARRAY; x = p.nextToken()) {
                empty = false;
                p.skipChildren();
            }
            return !empty;
        }
        p.skipChildren();
        return true;
    }

    private void anthropicEvent(JsonParser p) throws IOException {
        String type = null;
        long index = -1;
        String deltaType = null;
        String deltaText = null;
        Block started = null;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken t = p.nextToken();
            switch (name) {
                case "type" -> type = t == JsonToken.VALUE_STRING ? p.getText() : null;
                case "index" -> index = t == JsonToken.VALUE_NUMBER_INT ? p.getLongValue() : -1;
                case "usage" -> {
                    if (t == JsonToken.START_OBJECT) {
                        anthropicUsage(p);
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
                                anthropicUsage(p);
                            } else if ("content".equals(n) && v == JsonToken.START_ARRAY) {
                                anthropicBlocks(p);
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
                        anthropicBlocks(p);
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
                            } else if ("text".equals(n) && v == JsonToken.VALUE_STRING && collectReply) {
                                deltaText = p.getText();
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
            applyBlock(started, index < 0 ? blocks.size() : index);
        }
        if ("content_block_delta".equals(type)) {
            if ("text_delta".equals(deltaType)) {
                if (deltaText != null) {
                    appendReply((int) Math.max(0, Math.min(Integer.MAX_VALUE, index)), deltaText);
                }
            } else {
                replyUnavailable("not_text"); // tool input, thinking, signatures: not plain text
            }
        }
    }

    private void anthropicBlocks(JsonParser p) throws IOException {
        int i = 0;
        for (JsonToken t; (t = p.nextToken()) != JsonToken.END_ARRAY && t != null; i++) {
            if (t == JsonToken.START_OBJECT) {
                applyBlock(block(p), i);
            } else {
                p.skipChildren();
                replyUnavailable("not_text");
            }
        }
    }

    /** A content block's type and text (null when it has none). */
    private record Block(String type, String text) {
    }

    private Block block(JsonParser p) throws IOException {
        String type = null;
        String text = null;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String n = p.currentName();
            JsonToken v = p.nextToken();
            if ("type".equals(n) && v == JsonToken.VALUE_STRING) {
                type = p.getText();
            } else if ("text".equals(n) && v == JsonToken.VALUE_STRING && collectReply) {
                text = p.getText();
            } else {
                p.skipChildren();
            }
        }
        return new Block(type, text);
    }

    /** Keeps a text block's text at {@code position}; any other block makes the answer unavailable. */
    private void applyBlock(Block b, long position) {
        if (!"text".equals(b.type())) {
            replyUnavailable("not_text");
            return;
        }
        appendReply((int) Math.min(Integer.MAX_VALUE, position), b.text() == null ? "" : b.text());
    }

    private void anthropicUsage(JsonParser p) throws IOException {
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

    // ---- the answer ----

    private void appendReply(int block, String text) {
        if (replyProblem != null) {
            return;
        }
        if (block > 64) {
            replyUnavailable("not_text");
            return;
        }
        replyChars += text.length();
        if (replyChars > MAX_REPLY_CHARS) {
            replyUnavailable("too_long");
            return;
        }
        while (blocks.size() <= block) {
            blocks.add(new StringBuilder());
        }
        blocks.get(block).append(text);
    }

    private void replyUnavailable(String why) {
        if (replyProblem == null) {
            replyProblem = why;
            blocks.clear();
        }
    }
}
