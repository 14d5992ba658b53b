package dev.cart.extract;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonStreamContext;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import com.fasterxml.jackson.core.io.JsonEOFException;
import dev.cart.core.PromptKey;
import dev.cart.core.Tokenization;

import java.io.CharConversionException;
import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * One request body turned into a {@link PromptKey}: a single forward pass of Jackson's streaming
 * parser over the body bytes, writing key characters as it goes. The key format is documented in the
 * module README; the constants below are its delimiters.
 *
 * <p>Design. Three things make a streaming pass non-trivial, and each has one mechanism:
 * <ul>
 *   <li><b>Sections come in any order.</b> The key is model, tools, system, messages, but JSON objects
 *       are unordered (the OpenAI Python SDK sends {@code messages} first). Each section is written into
 *       its own {@link Segment} and the segments are replayed into the key builder at the end.</li>
 *   <li><b>What an object means depends on a field that may come last.</b> A message needs its
 *       {@code role}, a content part its {@code type}, before its other fields can be interpreted. When
 *       that field is first (every SDK writes it first) the object is handled in the same pass. When it
 *       is not, the object is pre-scanned (values skipped, not decoded) to find it, and then read again
 *       by a second parser over the same bytes ({@link #typed}); the cost is paid only by such objects.
 *       Small fields that follow the big one in the key (a message's {@code name}, a tool result's id)
 *       are held until the object ends, so the order inside an object never changes the key.</li>
 *   <li><b>Inline media must not be decoded.</b> A 5 MB base64 string is hashed straight from the body
 *       bytes ({@link #mediaRef}): the parser only marks where the string starts, this class finds its
 *       end and digests the bytes, and the parser then skips it (validating UTF-8) without building a
 *       String. Strings with escapes take a slower path that decodes them first; both hash the same
 *       UTF-8 bytes, so both give the same digest. The body's UTF-8 is validated up front
 *       ({@link Utf8}), since Jackson does not check every sequence.</li>
 * </ul>
 * Errors are {@link ExtractionException}s built here, or Jackson's exceptions mapped by
 * {@link #mapJackson}; neither ever carries prompt text or client-supplied values.
 *
 * <p>Not thread-safe: one instance per call, discarded afterwards.
 */
final class Extraction {

    // Key delimiters (see README "Key format").
    static final char MODEL = '\u0000';
    static final char SECTION = '\u0001';
    static final char LABEL_END = '\u0002';
    static final char ITEM = '\u001B';
    static final char FIELD = '\u001D';
    static final char ATTR = '\u001E';
    static final char SEP = '\u001F';
    /** Shown at boundaries by {@link #keyText()}; never part of a key. */
    static final char BOUNDARY_MARK = '\u2016';

    /** Media references (URLs) longer than this many UTF-8 bytes enter the key as a digest. */
    static final int MAX_REF_BYTES = 2048;
    /** In parts of unknown type, strings longer than this many UTF-8 bytes enter the key as a digest. */
    static final int MAX_GENERIC_STRING_BYTES = 1024;
    /** Longest data-URI header ({@code image/png;base64}) looked for before the comma. */
    private static final int MAX_DATA_HEADER = 256;
    /** Field names in error paths are cut to this many characters. */
    private static final int MAX_PATH_NAME = 64;

    // Kinds of typed objects (see typed()).
    private static final int CHAT_MESSAGE = 0;
    private static final int CHAT_PART = 1;
    private static final int ANTH_MESSAGE = 2;
    private static final int ANTH_BLOCK = 3;
    private static final int ANTH_SOURCE = 4;

    // Kinds of media strings (see mediaRef()).
    private static final int MEDIA_URL = 0;
    private static final int MEDIA_BASE64 = 1;
    private static final int MEDIA_FILE_DATA = 2;

    // Canonical JSON flags.
    private static final int DIGEST_LONG = 1;
    private static final int DROP_CACHE_CONTROL = 2;
    private static final int URL_IS_MEDIA = 4;
    private static final int SOURCE_IS_MEDIA = 8;

    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    private final JsonFactory factory;
    private final ExtractOptions opts;
    private final Endpoint endpoint;
    private final byte[] body;

    /** Bytes typed() may still re-read: eight times the body (eight levels of nesting), plus 64 KiB. */
    private long rereadBudget;

    /** The parser being read: the main one, or a sub-parser re-reading one object (see typed()). */
    private JsonParser p;
    /** Offset in {@link #body} of {@link #p}'s first byte. */
    private int baseOffset;
    /** JSON path of {@link #p}'s root value; "" for the main parser. */
    private String basePath = "";
    /** The segment key characters are being written to. */
    private Segment out;

    private int rawStart;
    private int rawEnd;

    private String model;
    private boolean stream;
    /** The role of the last message read (top-level messages only). */
    private String lastRole;
    private final Segment tools;
    private final Segment functions;
    private final Segment system;
    private final Segment main;

    Extraction(JsonFactory factory, ExtractOptions opts, Endpoint endpoint, byte[] body) {
        this.factory = factory;
        this.opts = opts;
        this.endpoint = endpoint;
        this.body = body;
        this.rereadBudget = 8L * body.length + 65_536;
        this.tools = new Segment(256);
        this.functions = new Segment(16);
        this.system = new Segment(256);
        this.main = new Segment(Math.min(body.length, 1 << 16));
    }

    /** Parses the body; then {@link #result()} or {@link #keyText()}. */
    void parse() throws ExtractionException {
        checkEncoding();
        JsonParser parser;
        try {
            parser = factory.createParser(body);
        } catch (IOException e) {
            throw invalidEncoding();
        }
        p = parser;
        try {
            readBody();
        } catch (JsonProcessingException e) {
            throw mapJackson(e);
        } catch (CharConversionException e) {
            throw invalidEncoding();
        } catch (IOException e) {
            // Reading a byte array does no I/O; anything else Jackson reports is a malformed body.
            throw new ExtractionException(400, "invalid_json", null, "request body is not valid JSON");
        } finally {
            try {
                parser.close();
            } catch (IOException ignored) {
                // nothing to release for a byte array
            }
        }
    }

    ExtractedRequest result() {
        PromptKey.Builder key = PromptKey.textBuilder(opts.blockChars(), opts.anchorLimit());
        assemble(Segment.Sink.of(key));
        return new ExtractedRequest(key.build(), model, stream, Tokenization.CHARACTER_MODE,
                new KeyState(endpoint, key, lastRole));
    }

    /** The result in token mode, or in character mode when {@code tokens} is null. */
    ExtractedRequest result(TokenMode tokens) {
        if (tokens == null) {
            return result();
        }
        TokenMode.Chunks chunks = new TokenMode.Chunks();
        assemble(chunks);
        TokenMode.Keyed k = tokens.key(chunks);
        return new ExtractedRequest(k.key(), model, stream, k.tokenization(),
                k.builder() == null ? null : new KeyState(endpoint, k.builder(), lastRole));
    }

    /** The key's characters, with {@link #BOUNDARY_MARK} at each message boundary (for tests). */
    String keyText() {
        StringBuilder sb = new StringBuilder();
        assemble(new Segment.Sink() {
            @Override
            public void append(char[] chars, int off, int len) {
                sb.append(chars, off, len);
            }

            @Override
            public void boundary() {
                if (sb.length() > 0 && sb.charAt(sb.length() - 1) != BOUNDARY_MARK) {
                    sb.append(BOUNDARY_MARK);
                }
            }
        });
        return sb.toString();
    }

    // ---------------------------------------------------------------- top level

    /** UTF-8 only (RFC 8259 §8.1): UTF-16/32 (zero bytes up front) and invalid sequences are rejected. */
    private void checkEncoding() throws ExtractionException {
        int n = body.length;
        for (int i = 0; i < Math.min(n, 4); i++) {
            if (body[i] == 0) {
                throw invalidEncoding();
            }
        }
        if (!Utf8.isValid(body)) {
            throw invalidEncoding();
        }
    }

    private static ExtractionException invalidEncoding() {
        return new ExtractionException(400, "invalid_encoding", null, "request body must be UTF-8 encoded JSON");
    }

    private void readBody() throws IOException, ExtractionException {
        JsonToken t = p.nextToken();
        if (t == null) {
            throw new ExtractionException(400, "empty_body", null, "request body is empty");
        }
        if (t != JsonToken.START_OBJECT) {
            throw new ExtractionException(400, "invalid_type", null, "request body must be a JSON object");
        }
        boolean sawMessages = false;
        while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken v = p.nextToken();
            switch (name) {
                case "model" -> model = optString(v);
                case "stream" -> stream = optBoolean(v);
                default -> {
                    switch (endpoint) {
                        case CHAT_COMPLETIONS -> {
                            if (name.equals("messages")) {
                                chatMessages(v);
                                sawMessages = true;
                            } else if (name.equals("tools")) {
                                toolList(v, tools, "tools", 0);
                            } else if (name.equals("functions")) {
                                toolList(v, functions, "functions", 0);
                            } else {
                                p.skipChildren();
                            }
                        }
                        case COMPLETIONS -> {
                            if (name.equals("prompt")) {
                                prompt(v);
                            } else {
                                p.skipChildren();
                            }
                        }
                        case MESSAGES -> {
                            if (name.equals("messages")) {
                                anthMessages(v);
                                sawMessages = true;
                            } else if (name.equals("system")) {
                                anthSystem(v);
                            } else if (name.equals("tools")) {
                                toolList(v, tools, "tools", DROP_CACHE_CONTROL);
                            } else {
                                p.skipChildren();
                            }
                        }
                    }
                }
            }
        }
        if (p.nextToken() != null) {
            throw new ExtractionException(400, "invalid_json", null,
                    "request body is not valid JSON: unexpected data after the top-level object");
        }
        if (!sawMessages && endpoint != Endpoint.COMPLETIONS) {
            throw missingField("messages");
        }
    }

    /** Model marker, tools, system, messages: the key's fixed order, whatever the body's field order. */
    private void assemble(Segment.Sink key) {
        boolean hasTools = !tools.isEmpty() || !functions.isEmpty();
        if (!hasTools && system.isEmpty() && main.isEmpty()) {
            return;
        }
        char[] marker = modelMarker(model).toCharArray();
        key.append(marker, 0, marker.length);
        if (hasTools) {
            tools.appendTo(key);
            functions.appendTo(key);
            key.boundary();
        }
        if (!system.isEmpty()) {
            system.appendTo(key);
            key.boundary();
        }
        main.appendTo(key);
    }

    /**
     * The key text of an assistant message holding {@code reply}, with its boundary: chat content is one
     * string (the pieces joined); Anthropic content is a string for one block, else text blocks.
     */
    static Segment assistantMessage(java.util.List<String> reply, Endpoint endpoint) {
        Segment seg = new Segment(64);
        seg.add(SECTION).add("assistant").add(LABEL_END);
        for (int i = 0; i < reply.size(); i++) {
            if (i > 0 && endpoint == Endpoint.MESSAGES) {
                seg.add(SEP);
            }
            seg.add(reply.get(i));
        }
        seg.boundary();
        return seg;
    }

    /** {@code NUL "model:" <16 hex digits of the name's digest> NUL}: fixed length, so it fits block 0. */
    static String modelMarker(String model) {
        byte[] b = (model == null ? "" : model).getBytes(StandardCharsets.UTF_8);
        return MODEL + "model:" + MediaDigest.of(b, 0, b.length).substring(1, 17) + MODEL;
    }

    // ---------------------------------------------------------------- OpenAI chat

    private void chatMessages(JsonToken v) throws IOException, ExtractionException {
        if (v != JsonToken.START_ARRAY) {
            throw invalidType(pathHere(), "an array of messages");
        }
        out = main;
        int n = 0;
        while (p.nextToken() != JsonToken.END_ARRAY) {
            if (p.currentToken() != JsonToken.START_OBJECT) {
                throw invalidType(pathHere(), "an object");
            }
            typed(CHAT_MESSAGE);
            n++;
        }
        if (n == 0) {
            throw new ExtractionException(400, "invalid_value", "messages", "messages must contain at least one message");
        }
    }

    private void chatMessageBody(String role) throws IOException, ExtractionException {
        lastRole = role;
        out.add(SECTION).add(role).add(LABEL_END);
        String name = null;
        String refusal = null;
        String functionCall = null;
        String toolCalls = null;
        String toolCallId = null;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String f = p.currentName();
            JsonToken v = p.nextToken();
            switch (f) {
                case "content" -> chatContent(v);
                case "name" -> name = optString(v);
                case "refusal" -> refusal = optString(v);
                case "tool_call_id" -> toolCallId = optString(v);
                case "tool_calls" -> toolCalls = optCanonical(v, JsonToken.START_ARRAY, "an array of tool calls");
                case "function_call" -> functionCall = optCanonical(v, JsonToken.START_OBJECT, "an object");
                default -> p.skipChildren();
            }
        }
        attr("name", name);
        attr("refusal", refusal);
        attr("function_call", functionCall);
        attr("tool_calls", toolCalls);
        attr("tool_call_id", toolCallId);
        out.boundary();
    }

    private void attr(String name, String value) {
        if (value != null) {
            out.add(ATTR).add(name).add(FIELD).add(value);
        }
    }

    /**
     * Writes the string that is the current token into {@link #out}: decoded from the body bytes
     * ({@link JsonText}), or, when that declines, streamed from Jackson. Jackson checks the length limit
     * only when it joins a string's buffers, which neither path does, so it is checked here.
     */
    private void text() throws IOException, ExtractionException {
        long loc = p.currentTokenLocation().getByteOffset();
        int n = loc < 0 ? -1 : JsonText.decode(body, (int) (baseOffset + loc), out);
        if (n < 0) {
            n = p.getText(out);
        }
        if (n > opts.maxStringLength()) {
            throw valueTooLong(pathHere());
        }
    }

    private ExtractionException valueTooLong(String path) {
        return new ExtractionException(400, "value_too_long", path,
                path + " is longer than " + opts.maxStringLength() + " characters");
    }

    private void chatContent(JsonToken v) throws IOException, ExtractionException {
        content(v, CHAT_PART, "a content part object", "a string, an array of content parts, or null");
    }

    /**
     * Message content in either API: a string, null (empty), or an array of typed parts of {@code kind},
     * separated in the key.
     */
    private void content(JsonToken v, int kind, String partExpected, String expected)
            throws IOException, ExtractionException {
        switch (v) {
            case VALUE_STRING -> text();
            case VALUE_NULL -> { }
            case START_ARRAY -> {
                boolean first = true;
                while (p.nextToken() != JsonToken.END_ARRAY) {
                    if (p.currentToken() != JsonToken.START_OBJECT) {
                        throw invalidType(pathHere(), partExpected);
                    }
                    if (!first) {
                        out.add(SEP);
                    }
                    first = false;
                    typed(kind);
                }
            }
            default -> throw invalidType(pathHere(), expected);
        }
    }

    private void chatPartBody(String type) throws IOException, ExtractionException {
        switch (type) {
            case "text" -> textField("text");
            case "refusal" -> {
                out.add(ITEM).add("refusal").add(FIELD);
                textField("refusal");
            }
            case "image_url", "audio_url", "video_url" -> urlPart(type);
            case "input_audio" -> inputAudioPart();
            case "file" -> filePart();
            default -> genericPart(type, DIGEST_LONG | DROP_CACHE_CONTROL, type);
        }
    }

    /** Streams the string field {@code field} of the current object into the key; the field is required. */
    private void textField(String field) throws IOException, ExtractionException {
        boolean seen = false;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String f = p.currentName();
            JsonToken v = p.nextToken();
            if (f.equals(field)) {
                requireString(v);
                text();
                seen = true;
            } else {
                p.skipChildren();
            }
        }
        if (!seen) {
            throw missingField(pathHere() + "." + field);
        }
    }

    /** {@code image_url}, {@code audio_url}, {@code video_url}: {@code {url, detail?}} or a bare URL string. */
    private void urlPart(String type) throws IOException, ExtractionException {
        String ref = null;
        String detail = null;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String f = p.currentName();
            JsonToken v = p.nextToken();
            if (!f.equals(type)) {
                p.skipChildren();
            } else if (v == JsonToken.VALUE_STRING) {
                ref = mediaRef(MEDIA_URL);
            } else if (v == JsonToken.START_OBJECT) {
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String g = p.currentName();
                    JsonToken w = p.nextToken();
                    if (g.equals("url")) {
                        requireString(w);
                        ref = mediaRef(MEDIA_URL);
                    } else if (g.equals("detail")) {
                        detail = optString(w);
                    } else {
                        p.skipChildren();
                    }
                }
                if (ref == null) {
                    throw missingField(pathHere() + ".url");
                }
            } else {
                throw invalidType(pathHere(), "an object with a url");
            }
        }
        if (ref == null) {
            throw missingField(pathHere() + "." + type);
        }
        out.add(ITEM).add(type).add(FIELD).add("url=").add(ref);
        if (detail != null) {
            out.add(FIELD).add("detail=").add(detail);
        }
    }

    /** {@code input_audio: {data: <base64>, format}}. */
    private void inputAudioPart() throws IOException, ExtractionException {
        String data = null;
        String format = null;
        boolean seen = false;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String f = p.currentName();
            JsonToken v = p.nextToken();
            if (!f.equals("input_audio")) {
                p.skipChildren();
                continue;
            }
            if (v != JsonToken.START_OBJECT) {
                throw invalidType(pathHere(), "an object");
            }
            seen = true;
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String g = p.currentName();
                JsonToken w = p.nextToken();
                if (g.equals("data")) {
                    requireString(w);
                    data = mediaRef(MEDIA_BASE64);
                } else if (g.equals("format")) {
                    format = optString(w);
                } else {
                    p.skipChildren();
                }
            }
            if (data == null) {
                throw missingField(pathHere() + ".data");
            }
        }
        if (!seen) {
            throw missingField(pathHere() + ".input_audio");
        }
        out.add(ITEM).add("input_audio").add(FIELD).add("data=").add(data);
        if (format != null) {
            out.add(FIELD).add("format=").add(format);
        }
    }

    /** {@code file: {file_id?, file_data?, filename?}}. */
    private void filePart() throws IOException, ExtractionException {
        String fileId = null;
        String fileData = null;
        String filename = null;
        boolean seen = false;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String f = p.currentName();
            JsonToken v = p.nextToken();
            if (!f.equals("file")) {
                p.skipChildren();
                continue;
            }
            if (v != JsonToken.START_OBJECT) {
                throw invalidType(pathHere(), "an object");
            }
            seen = true;
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String g = p.currentName();
                JsonToken w = p.nextToken();
                switch (g) {
                    case "file_id" -> fileId = optString(w);
                    case "filename" -> filename = optString(w);
                    case "file_data" -> {
                        if (w != JsonToken.VALUE_NULL) {
                            requireString(w);
                            fileData = mediaRef(MEDIA_FILE_DATA);
                        }
                    }
                    default -> p.skipChildren();
                }
            }
        }
        if (!seen) {
            throw missingField(pathHere() + ".file");
        }
        out.add(ITEM).add("file");
        if (fileId != null) {
            out.add(FIELD).add("file_id=").add(fileId);
        }
        if (filename != null) {
            out.add(FIELD).add("filename=").add(filename);
        }
        if (fileData != null) {
            out.add(FIELD).add("file_data=").add(fileData);
        }
    }

    /** A part or block of a type this class does not know: its tag, then its other fields as canonical JSON. */
    private void genericPart(String type, int flags, String mediaKey) throws IOException, ExtractionException {
        StringBuilder sb = new StringBuilder(64);
        canonicalFields(sb, flags, "type", mediaKey);
        out.add(ITEM).add(type).add(FIELD).add(sb);
    }

    // ---------------------------------------------------------------- tools (both APIs)

    private void toolList(JsonToken v, Segment seg, String label, int flags) throws IOException, ExtractionException {
        if (v == JsonToken.VALUE_NULL) {
            return;
        }
        if (v != JsonToken.START_ARRAY) {
            throw invalidType(pathHere(), "an array");
        }
        StringBuilder sb = new StringBuilder(256);
        boolean first = true;
        while (p.nextToken() != JsonToken.END_ARRAY) {
            if (first) {
                seg.add(SECTION).add(label).add(LABEL_END);
                first = false;
            } else {
                seg.add(SEP);
            }
            sb.setLength(0);
            if (p.currentToken() == JsonToken.START_OBJECT) {
                canonicalFields(sb, flags, null, null);
            } else {
                canonicalValue(sb, 0);
            }
            seg.add(sb);
        }
    }

    // ---------------------------------------------------------------- OpenAI completions

    private void prompt(JsonToken v) throws IOException, ExtractionException {
        out = main;
        switch (v) {
            case VALUE_STRING -> text();
            case VALUE_NULL -> { }
            case START_ARRAY -> {
                JsonToken t = p.nextToken();
                if (t == JsonToken.VALUE_NUMBER_INT) {
                    tokenIds(t); // one prompt of token ids
                    return;
                }
                boolean first = true;
                for (; t != JsonToken.END_ARRAY; t = p.nextToken()) {
                    if (!first) {
                        out.add(SEP);
                    }
                    first = false;
                    if (t == JsonToken.VALUE_STRING) {
                        text();
                    } else if (t == JsonToken.START_ARRAY) {
                        tokenIds(p.nextToken());
                    } else {
                        throw invalidType(pathHere(), "a string or an array of token ids");
                    }
                    out.boundary();
                }
            }
            default -> throw invalidType(pathHere(),
                    "a string, an array of strings, an array of token ids, or an array of token-id arrays");
        }
    }

    /** Token ids from the current token to the array's end, each as decimal digits and a comma. */
    private void tokenIds(JsonToken t) throws IOException, ExtractionException {
        out.add(ITEM).add("tokens").add(FIELD);
        char[] digits = new char[10];
        for (; t != JsonToken.END_ARRAY; t = p.nextToken()) {
            if (t != JsonToken.VALUE_NUMBER_INT) {
                throw invalidType(pathHere(), "a token id (a non-negative integer)");
            }
            if (p.getNumberType() != JsonParser.NumberType.INT || p.getIntValue() < 0) {
                throw new ExtractionException(400, "invalid_value", pathHere(),
                        pathHere() + " must be a token id in [0, 2147483647]");
            }
            int id = p.getIntValue();
            int at = digits.length;
            do {
                digits[--at] = (char) ('0' + id % 10);
                id /= 10;
            } while (id != 0);
            out.add(digits, at, digits.length - at).add(',');
        }
    }

    // ---------------------------------------------------------------- Anthropic messages

    private void anthSystem(JsonToken v) throws IOException, ExtractionException {
        if (v == JsonToken.VALUE_NULL) {
            return;
        }
        if (v != JsonToken.VALUE_STRING && v != JsonToken.START_ARRAY) {
            throw invalidType(pathHere(), "a string or an array of text blocks");
        }
        Segment saved = out;
        out = system;
        try {
            out.add(SECTION).add("system").add(LABEL_END);
            anthContent(v);
        } finally {
            out = saved;
        }
    }

    private void anthMessages(JsonToken v) throws IOException, ExtractionException {
        if (v != JsonToken.START_ARRAY) {
            throw invalidType(pathHere(), "an array of messages");
        }
        out = main;
        int n = 0;
        while (p.nextToken() != JsonToken.END_ARRAY) {
            if (p.currentToken() != JsonToken.START_OBJECT) {
                throw invalidType(pathHere(), "an object");
            }
            typed(ANTH_MESSAGE);
            n++;
        }
        if (n == 0) {
            throw new ExtractionException(400, "invalid_value", "messages", "messages must contain at least one message");
        }
    }

    private void anthMessageBody(String role) throws IOException, ExtractionException {
        lastRole = role;
        out.add(SECTION).add(role).add(LABEL_END);
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String f = p.currentName();
            JsonToken v = p.nextToken();
            if (f.equals("content")) {
                anthContent(v);
            } else {
                p.skipChildren();
            }
        }
        out.boundary();
    }

    /** Anthropic content: a string or an array of blocks (null tolerated as empty). */
    private void anthContent(JsonToken v) throws IOException, ExtractionException {
        content(v, ANTH_BLOCK, "a content block object", "a string or an array of content blocks");
    }

    private void anthBlockBody(String type) throws IOException, ExtractionException {
        switch (type) {
            case "text" -> textField("text");
            case "thinking" -> {
                out.add(ITEM).add("thinking").add(FIELD);
                textField("thinking");
            }
            case "redacted_thinking" -> redactedThinking();
            case "image" -> sourceBlock("image", false);
            case "document" -> sourceBlock("document", true);
            case "tool_use", "server_tool_use" -> toolUse(type);
            case "tool_result" -> toolResult();
            default -> genericPart(type, DIGEST_LONG | DROP_CACHE_CONTROL | SOURCE_IS_MEDIA, null);
        }
    }

    private void redactedThinking() throws IOException, ExtractionException {
        String data = null;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String f = p.currentName();
            JsonToken v = p.nextToken();
            if (f.equals("data")) {
                requireString(v);
                data = mediaRef(MEDIA_BASE64);
            } else {
                p.skipChildren();
            }
        }
        if (data == null) {
            throw missingField(pathHere() + ".data");
        }
        out.add(ITEM).add("redacted_thinking").add(FIELD).add("data=").add(data);
    }

    /** {@code image} and {@code document} blocks: the source, then (documents) title and context. */
    private void sourceBlock(String tag, boolean document) throws IOException, ExtractionException {
        out.add(ITEM).add(tag);
        boolean seen = false;
        String title = null;
        String context = null;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String f = p.currentName();
            JsonToken v = p.nextToken();
            if (f.equals("source")) {
                if (v != JsonToken.START_OBJECT) {
                    throw invalidType(pathHere(), "a source object");
                }
                out.add(FIELD).add("source=");
                typed(ANTH_SOURCE);
                seen = true;
            } else if (document && f.equals("title")) {
                title = optString(v);
            } else if (document && f.equals("context")) {
                context = optString(v);
            } else {
                p.skipChildren();
            }
        }
        if (!seen) {
            throw missingField(pathHere() + ".source");
        }
        if (title != null) {
            out.add(FIELD).add("title=").add(title);
        }
        if (context != null) {
            out.add(FIELD).add("context=").add(context);
        }
    }

    /** A source object: {@code base64}/{@code text} data digested, {@code url}, {@code file}, {@code content}. */
    private void sourceBody(String type) throws IOException, ExtractionException {
        switch (type) {
            case "base64", "text" -> {
                String mediaType = null;
                String data = null;
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String f = p.currentName();
                    JsonToken v = p.nextToken();
                    if (f.equals("data")) {
                        requireString(v);
                        data = mediaRef(MEDIA_BASE64);
                    } else if (f.equals("media_type")) {
                        mediaType = optString(v);
                    } else {
                        p.skipChildren();
                    }
                }
                if (data == null) {
                    throw missingField(pathHere() + ".data");
                }
                out.add(type).add(':').add(mediaType == null ? "" : mediaType).add(':').add(data);
            }
            case "url" -> {
                String ref = stringRefField("url", MEDIA_URL);
                out.add("url:").add(ref);
            }
            case "file" -> {
                String ref = stringRefField("file_id", -1);
                out.add("file:").add(ref);
            }
            case "content" -> {
                out.add("content:");
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String f = p.currentName();
                    JsonToken v = p.nextToken();
                    if (f.equals("content")) {
                        anthContent(v);
                    } else {
                        p.skipChildren();
                    }
                }
            }
            default -> {
                StringBuilder sb = new StringBuilder(64);
                canonicalFields(sb, DIGEST_LONG, "type", null);
                out.add(type).add(':').add(sb);
            }
        }
    }

    /** The required string field {@code field} of the current object: a media reference, or as is (kind -1). */
    private String stringRefField(String field, int kind) throws IOException, ExtractionException {
        String ref = null;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String f = p.currentName();
            JsonToken v = p.nextToken();
            if (f.equals(field)) {
                requireString(v);
                ref = kind < 0 ? p.getText() : mediaRef(kind);
            } else {
                p.skipChildren();
            }
        }
        if (ref == null) {
            throw missingField(pathHere() + "." + field);
        }
        return ref;
    }

    private void toolUse(String type) throws IOException, ExtractionException {
        String id = null;
        String name = null;
        String input = null;
        StringBuilder sb = null;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String f = p.currentName();
            JsonToken v = p.nextToken();
            switch (f) {
                case "id" -> id = optString(v);
                case "name" -> name = optString(v);
                case "input" -> {
                    sb = new StringBuilder(64);
                    canonicalValue(sb, 0);
                    input = sb.toString();
                }
                default -> p.skipChildren();
            }
        }
        out.add(ITEM).add(type);
        if (id != null) {
            out.add(FIELD).add("id=").add(id);
        }
        if (name != null) {
            out.add(FIELD).add("name=").add(name);
        }
        if (input != null) {
            out.add(FIELD).add("input=").add(input);
        }
    }

    private void toolResult() throws IOException, ExtractionException {
        out.add(ITEM).add("tool_result");
        String toolUseId = null;
        boolean isError = false;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String f = p.currentName();
            JsonToken v = p.nextToken();
            switch (f) {
                case "content" -> {
                    out.add(FIELD).add("content=");
                    anthContent(v);
                }
                case "tool_use_id" -> toolUseId = optString(v);
                case "is_error" -> isError = optBoolean(v);
                default -> p.skipChildren();
            }
        }
        if (toolUseId != null) {
            out.add(FIELD).add("tool_use_id=").add(toolUseId);
        }
        if (isError) {
            out.add(FIELD).add("is_error=true");
        }
    }

    // ---------------------------------------------------------------- typed objects

    /**
     * Reads the object whose START_OBJECT is the current token, dispatching on its discriminator field
     * ({@code role} for messages, {@code type} otherwise). When the discriminator is the first field the
     * object is read in this pass. Otherwise the object is pre-scanned to find it (values are skipped,
     * not decoded) and then read by a sub-parser starting at the object's first byte; the main parser is
     * left on the object's END_OBJECT either way. Handlers skip the discriminator if they meet it again.
     */
    private void typed(int kind) throws IOException, ExtractionException {
        String key = kind == CHAT_MESSAGE || kind == ANTH_MESSAGE ? "role" : "type";
        JsonToken t = p.nextToken();
        if (t == JsonToken.FIELD_NAME && key.equals(p.currentName())) {
            p.nextToken();
            dispatch(kind, discriminator());
            return;
        }
        if (t == JsonToken.END_OBJECT) {
            throw missingField(pathHere() + "." + key);
        }
        int start = objectStart();
        String value = null;
        do {
            boolean isKey = key.equals(p.currentName());
            p.nextToken();
            if (isKey) {
                value = discriminator();
            } else {
                p.skipChildren();
            }
        } while (p.nextToken() == JsonToken.FIELD_NAME);
        String objectPath = pathHere();
        if (value == null) {
            throw missingField(objectPath + "." + key);
        }
        // Re-reading costs the object's bytes once more; nested re-reads would cost them once per level,
        // so the total is bounded (a body cannot make extraction quadratic).
        long end = baseOffset + p.currentTokenLocation().getByteOffset();
        rereadBudget -= end - start;
        if (rereadBudget < 0) {
            throw new ExtractionException(400, "too_complex", objectPath, "objects whose '" + key
                    + "' is not their first member are nested too deeply at " + objectPath
                    + "; put '" + key + "' first");
        }
        JsonParser mainParser = p;
        int mainOffset = baseOffset;
        String mainPath = basePath;
        JsonParser sub = factory.createParser(body, start, body.length - start);
        p = sub;
        baseOffset = start;
        basePath = objectPath;
        try {
            sub.nextToken();
            dispatch(kind, value);
        } catch (JsonProcessingException e) {
            throw mapJackson(e);
        } finally {
            p = mainParser;
            baseOffset = mainOffset;
            basePath = mainPath;
            sub.close();
        }
    }

    private void dispatch(int kind, String value) throws IOException, ExtractionException {
        switch (kind) {
            case CHAT_MESSAGE -> chatMessageBody(value);
            case CHAT_PART -> chatPartBody(value);
            case ANTH_MESSAGE -> anthMessageBody(value);
            case ANTH_BLOCK -> anthBlockBody(value);
            case ANTH_SOURCE -> sourceBody(value);
            default -> throw new IllegalStateException("kind " + kind);
        }
    }

    private String discriminator() throws IOException, ExtractionException {
        if (p.currentToken() != JsonToken.VALUE_STRING) {
            throw invalidType(pathHere(), "a string");
        }
        return p.getText();
    }

    /** The offset in {@link #body} of the '{' opening the object whose first field name is the current token. */
    private int objectStart() {
        int i = (int) (baseOffset + p.currentTokenLocation().getByteOffset()) - 1;
        while (i >= 0 && (body[i] == ' ' || body[i] == '\n' || body[i] == '\r' || body[i] == '\t')) {
            i--;
        }
        if (i < 0 || body[i] != '{') {
            throw new IllegalStateException("object start not found");
        }
        return i;
    }

    // ---------------------------------------------------------------- media

    /**
     * The key text for the media string that is the current token, without decoding it when it has no
     * escapes: {@code data:<header>,#<digest>} for a data URI; {@code #<digest>} for base64
     * ({@code MEDIA_BASE64}, and {@code MEDIA_FILE_DATA} without a scheme); otherwise the reference
     * itself (a digest beyond {@link #MAX_REF_BYTES}), which is remote media when it has a URI scheme.
     */
    private String mediaRef(int kind) throws IOException, ExtractionException {
        if (rawRange()) {
            if (rawEnd - rawStart > opts.maxStringLength()) {
                throw valueTooLong(pathHere());
            }
            return mediaRef(body, rawStart, rawEnd, kind);
        }
        byte[] b = p.getText().getBytes(StandardCharsets.UTF_8);
        return mediaRef(b, 0, b.length, kind);
    }

    private String mediaRef(byte[] b, int s, int e, int kind) throws ExtractionException {
        if (kind == MEDIA_BASE64) {
            return MediaDigest.of(b, s, e);
        }
        // Python's URL parsing (and so vLLM's) strips leading C0 controls and spaces: so do we, before
        // deciding what the reference is.
        int t = s;
        while (t < e && (b[t] & 0xFF) <= 0x20) {
            t++;
        }
        if (startsWithIgnoreCase(b, t, e, "data:")) {
            int from = t + 5;
            int limit = Math.min(e, from + MAX_DATA_HEADER);
            for (int i = from; i < limit; i++) {
                if (b[i] == ',') {
                    return "data:" + new String(b, from, i - from, StandardCharsets.UTF_8) + ","
                            + MediaDigest.of(b, i + 1, e);
                }
            }
            return "data:," + MediaDigest.of(b, from, e);
        }
        boolean scheme = hasScheme(b, t, e);
        if (!scheme && kind == MEDIA_FILE_DATA) {
            return MediaDigest.of(b, s, e);
        }
        // With the policy set, a URL position may hold only inline data: anything else (any scheme, a
        // bare path, a string the replica might resolve some other way) is refused.
        if (opts.remoteMediaUrlPolicy() != null && (scheme || kind == MEDIA_URL)) {
            String path = pathHere();
            throw new ExtractionException(opts.remoteMediaUrlPolicy(), "remote_media_rejected", path,
                    path + " refers to remote media by URL, which this server does not allow;"
                            + " send the media inline (base64 or a data: URI) instead");
        }
        if (e - s > MAX_REF_BYTES) {
            return MediaDigest.of(b, s, e);
        }
        return new String(b, s, e - s, StandardCharsets.UTF_8);
    }

    private static boolean startsWithIgnoreCase(byte[] b, int s, int e, String prefix) {
        int n = prefix.length();
        if (e - s < n) {
            return false;
        }
        for (int i = 0; i < n; i++) {
            int c = b[s + i];
            if (c >= 'A' && c <= 'Z') {
                c += 'a' - 'A';
            }
            if (c != prefix.charAt(i)) {
                return false;
            }
        }
        return true;
    }

    /** RFC 3986: {@code ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"}, looked for in the first 32 bytes. */
    static boolean hasScheme(byte[] b, int s, int e) {
        if (s >= e || !isAlpha(b[s])) {
            return false;
        }
        int limit = Math.min(e, s + 32);
        for (int i = s + 1; i < limit; i++) {
            byte c = b[i];
            if (c == ':') {
                return true;
            }
            if (!isAlpha(c) && !(c >= '0' && c <= '9') && c != '+' && c != '-' && c != '.') {
                return false;
            }
        }
        return false;
    }

    private static boolean isAlpha(byte c) {
        return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z';
    }

    /**
     * Finds the body bytes of the string that is the current token: sets {@link #rawStart} and
     * {@link #rawEnd} and returns true when the string has no escape (its bytes are then its UTF-8
     * encoding); returns false when it has one or cannot be located. Searches eight bytes at a time.
     */
    private boolean rawRange() {
        long loc = p.currentTokenLocation().getByteOffset();
        if (loc < 0) {
            return false;
        }
        long q = baseOffset + loc;
        byte[] b = body;
        if (q >= b.length || b[(int) q] != '"') {
            return false;
        }
        int i = (int) q + 1;
        int n = b.length;
        for (; i + 8 <= n; i += 8) {
            long w = (long) LONGS.get(b, i);
            long x = w ^ 0x2222222222222222L;
            long y = w ^ 0x5C5C5C5C5C5C5C5CL;
            if (hasZeroByte(x) || hasZeroByte(y)) {
                break;
            }
        }
        for (; i < n; i++) {
            byte c = b[i];
            if (c == '"') {
                rawStart = (int) q + 1;
                rawEnd = i;
                return true;
            }
            if (c == '\\') {
                return false;
            }
        }
        return false;
    }

    /** True when some byte of {@code v} is zero (exact; the classic bit trick). */
    private static boolean hasZeroByte(long v) {
        return ((v - 0x0101010101010101L) & ~v & 0x8080808080808080L) != 0;
    }

    // ---------------------------------------------------------------- canonical JSON

    /**
     * Canonical JSON of the rest of the current object (from its START_OBJECT or from any field on):
     * members sorted by name, no whitespace, strings re-escaped minimally, numbers as written. Skips the
     * member {@code skip}; with {@code DROP_CACHE_CONTROL}, {@code cache_control} too. Long strings become
     * digests under {@code DIGEST_LONG}. {@code mediaKey} names a member that is a media reference (a URL
     * string or an object whose {@code url} is one); {@code SOURCE_IS_MEDIA} makes a {@code source} object
     * an Anthropic source.
     */
    private void canonicalFields(StringBuilder sb, int flags, String skip, String mediaKey)
            throws IOException, ExtractionException {
        int open = sb.length();
        sb.append('{');
        String[] names = null;
        int[] starts = null;
        int n = 0;
        boolean sorted = true;
        int inner = flags & DIGEST_LONG;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken v = p.nextToken();
            if (name.equals(skip) || (flags & DROP_CACHE_CONTROL) != 0 && name.equals("cache_control")) {
                p.skipChildren();
                continue;
            }
            if (names == null) {
                names = new String[8];
                starts = new int[8];
            } else if (n == names.length) {
                names = Arrays.copyOf(names, n * 2);
                starts = Arrays.copyOf(starts, n * 2);
            }
            if (n > 0) {
                sorted &= names[n - 1].compareTo(name) < 0;
                sb.append(',');
            }
            names[n] = name;
            starts[n] = sb.length();
            n++;
            quote(sb, name);
            sb.append(':');
            if (v == JsonToken.VALUE_STRING
                    && (name.equals(mediaKey) || (flags & URL_IS_MEDIA) != 0 && name.equals("url"))) {
                quote(sb, mediaRef(MEDIA_URL));
            } else if (v == JsonToken.START_OBJECT && name.equals(mediaKey)) {
                canonicalFields(sb, inner | URL_IS_MEDIA, null, null);
            } else if (v == JsonToken.START_OBJECT && (flags & SOURCE_IS_MEDIA) != 0 && name.equals("source")) {
                Segment saved = out;
                Segment scratch = new Segment(64);
                out = scratch;
                try {
                    typed(ANTH_SOURCE);
                } finally {
                    out = saved;
                }
                quote(sb, scratch.text());
            } else {
                canonicalValue(sb, inner);
            }
        }
        if (!sorted) {
            String members = sb.substring(open + 1);
            Integer[] order = new Integer[n];
            for (int i = 0; i < n; i++) {
                order[i] = i;
            }
            String[] keys = names;
            Arrays.sort(order, (a, c) -> keys[a].compareTo(keys[c]));
            sb.setLength(open + 1);
            for (int k = 0; k < n; k++) {
                int i = order[k];
                int from = starts[i] - open - 1;
                int to = i + 1 < n ? starts[i + 1] - open - 2 : members.length();
                if (k > 0) {
                    sb.append(',');
                }
                sb.append(members, from, to);
            }
        }
        sb.append('}');
    }

    /** Canonical JSON of the value that is the current token. */
    private void canonicalValue(StringBuilder sb, int flags) throws IOException, ExtractionException {
        switch (p.currentToken()) {
            case START_OBJECT -> canonicalFields(sb, flags & DIGEST_LONG, null, null);
            case START_ARRAY -> {
                sb.append('[');
                boolean first = true;
                while (p.nextToken() != JsonToken.END_ARRAY) {
                    if (!first) {
                        sb.append(',');
                    }
                    first = false;
                    canonicalValue(sb, flags);
                }
                sb.append(']');
            }
            case VALUE_STRING -> {
                if ((flags & DIGEST_LONG) == 0) {
                    quote(sb, p.getText());
                } else if (rawRange()) {
                    if (rawEnd - rawStart > MAX_GENERIC_STRING_BYTES) {
                        sb.append(MediaDigest.of(body, rawStart, rawEnd));
                    } else {
                        quote(sb, p.getText());
                    }
                } else {
                    String s = p.getText();
                    byte[] b = s.getBytes(StandardCharsets.UTF_8);
                    if (b.length > MAX_GENERIC_STRING_BYTES) {
                        sb.append(MediaDigest.of(b, 0, b.length));
                    } else {
                        quote(sb, s);
                    }
                }
            }
            case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> sb.append(p.getText());
            case VALUE_TRUE -> sb.append("true");
            case VALUE_FALSE -> sb.append("false");
            case VALUE_NULL -> sb.append("null");
            default -> throw new IllegalStateException("unexpected token " + p.currentToken());
        }
    }

    private static void quote(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0, n = s.length(); i < n; i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                sb.append('\\').append(c);
            } else if (c < 0x20) {
                sb.append("\\u00").append(Character.forDigit(c >> 4, 16)).append(Character.forDigit(c & 0xF, 16));
            } else {
                sb.append(c);
            }
        }
        sb.append('"');
    }

    /** Canonical JSON of an optional value that must have the given start token (or be null). */
    private String optCanonical(JsonToken v, JsonToken expected, String what) throws IOException, ExtractionException {
        if (v == JsonToken.VALUE_NULL) {
            return null;
        }
        if (v != expected) {
            throw invalidType(pathHere(), what);
        }
        StringBuilder sb = new StringBuilder(64);
        canonicalValue(sb, 0);
        return sb.toString();
    }

    // ---------------------------------------------------------------- scalars and errors

    private String optString(JsonToken v) throws IOException, ExtractionException {
        if (v == JsonToken.VALUE_NULL) {
            return null;
        }
        if (v != JsonToken.VALUE_STRING) {
            throw invalidType(pathHere(), "a string");
        }
        return p.getText();
    }

    private boolean optBoolean(JsonToken v) throws ExtractionException {
        if (v == JsonToken.VALUE_TRUE) {
            return true;
        }
        if (v == JsonToken.VALUE_FALSE || v == JsonToken.VALUE_NULL) {
            return false;
        }
        throw invalidType(pathHere(), "a boolean");
    }

    private void requireString(JsonToken v) throws ExtractionException {
        if (v != JsonToken.VALUE_STRING) {
            throw invalidType(pathHere(), "a string");
        }
    }

    private static ExtractionException invalidType(String path, String what) {
        return new ExtractionException(400, "invalid_type", path, path + " must be " + what);
    }

    private static ExtractionException missingField(String path) {
        return new ExtractionException(400, "missing_field", path, "missing required field " + path);
    }

    /**
     * The JSON path of the current value, e.g. {@code messages[2].content[0].image_url.url}: the
     * sub-parser's base path, then the parser's context chain. On START_OBJECT/START_ARRAY the context
     * is the new container, so its parent names the value; on END_* Jackson has already popped it.
     */
    private String pathHere() {
        JsonStreamContext ctx = p.getParsingContext();
        JsonToken t = p.currentToken();
        if ((t == JsonToken.START_OBJECT || t == JsonToken.START_ARRAY) && ctx != null) {
            ctx = ctx.getParent();
        }
        StringBuilder sb = new StringBuilder(basePath);
        render(sb, ctx);
        return sb.toString();
    }

    private static void render(StringBuilder sb, JsonStreamContext ctx) {
        if (ctx == null || ctx.inRoot()) {
            return;
        }
        render(sb, ctx.getParent());
        if (ctx.inArray()) {
            sb.append('[').append(ctx.getCurrentIndex()).append(']');
        } else {
            String name = ctx.getCurrentName();
            if (name != null) {
                if (sb.length() > 0) {
                    sb.append('.');
                }
                sb.append(name.length() > MAX_PATH_NAME ? name.substring(0, MAX_PATH_NAME) + "..." : name);
            }
        }
    }

    /** Maps a Jackson exception to a typed error without its message, which can quote the input. */
    private ExtractionException mapJackson(JsonProcessingException e) {
        String m = e.getOriginalMessage() == null ? "" : e.getOriginalMessage();
        if (e instanceof StreamConstraintsException) {
            if (m.startsWith("Document nesting depth")) {
                return new ExtractionException(400, "nesting_too_deep", safePath(),
                        "request body nests objects and arrays deeper than " + opts.maxNestingDepth() + " levels");
            }
            if (m.startsWith("String value length") || m.startsWith("Name length") || m.startsWith("Number value length")) {
                String path = safePath();
                return new ExtractionException(400, "value_too_long", path,
                        (path == null || path.isEmpty() ? "a value" : path) + " is longer than allowed");
            }
            return new ExtractionException(400, "limit_exceeded", null, "request body exceeds a parser limit");
        }
        if (m.startsWith("Invalid UTF-8") || m.startsWith("Invalid UTF-32")) {
            return invalidEncoding();
        }
        if (e instanceof JsonParseException && m.startsWith("Duplicate field")) {
            String path = safePath();
            return new ExtractionException(400, "duplicate_key", path,
                    "duplicate key " + (path == null || path.isEmpty() ? "" : path + " ") + "in a JSON object");
        }
        String where = "";
        if (e.getLocation() != null && e.getLocation().getLineNr() > 0) {
            where = " at line " + e.getLocation().getLineNr() + ", column " + e.getLocation().getColumnNr();
        }
        String what = e instanceof JsonEOFException ? "unexpected end of input" : "syntax error";
        return new ExtractionException(400, "invalid_json", null, "request body is not valid JSON: " + what + where);
    }

    private String safePath() {
        try {
            String path = pathHere();
            return path.isEmpty() ? null : path;
        } catch (RuntimeException ignored) {
            return null;
        }
    }
}
