package dev.cart.extract;

import static dev.cart.extract.Extraction.FIELD;
import static dev.cart.extract.Extraction.ITEM;
import static dev.cart.extract.Extraction.LABEL_END;
import static dev.cart.extract.Extraction.SECTION;

import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.util.EnumSet;
import java.util.Set;

/**
 * {@code POST /v1/messages} (Anthropic): tools as canonical JSON without {@code cache_control}, the system
 * prompt, then each message as {@code SOH role STX content}; content blocks (text, thinking, images and
 * documents by source, tool use and results, unknown types) as the module README describes.
 */
final class MessagesDialect extends Dialect {

    private static final Set<CanonicalJson.Option> TOOL_OPTIONS = EnumSet.of(CanonicalJson.Option.DROP_CACHE_CONTROL);
    private static final Set<CanonicalJson.Option> BLOCK_OPTIONS = EnumSet.of(
            CanonicalJson.Option.DIGEST_LONG,
            CanonicalJson.Option.DROP_CACHE_CONTROL,
            CanonicalJson.Option.SOURCE_IS_MEDIA);
    private static final Set<CanonicalJson.Option> DIGEST = EnumSet.of(CanonicalJson.Option.DIGEST_LONG);

    private boolean sawMessages;

    MessagesDialect(Extraction x, JsonCursor in, ExtractOptions opts) {
        super(x, in, opts);
        canon.sources(this::sourceText);
    }

    @Override
    boolean member(String name, JsonToken v) throws IOException, ExtractionException {
        switch (name) {
            case "messages" -> {
                messages(v, this::messageBody);
                sawMessages = true;
            }
            case "system" -> system(v);
            case "tools" -> toolList(v, x.tools(), "tools", TOOL_OPTIONS);
            default -> {
                return false;
            }
        }
        return true;
    }

    @Override
    void end() throws ExtractionException {
        if (!sawMessages) {
            throw Errors.missingField("messages");
        }
    }

    /** The key text of the source object that is the current token (inside canonical JSON). */
    private String sourceText() throws IOException, ExtractionException {
        Segment saved = out;
        Segment scratch = new Segment(64);
        out = scratch;
        try {
            in.typed("type", this::sourceBody);
        } finally {
            out = saved;
        }
        return scratch.text();
    }

    private void system(JsonToken v) throws IOException, ExtractionException {
        if (v == JsonToken.VALUE_NULL) {
            return;
        }
        if (v != JsonToken.VALUE_STRING && v != JsonToken.START_ARRAY) {
            throw Errors.invalidType(in.path(), "a string or an array of text blocks");
        }
        Segment saved = out;
        out = x.system();
        try {
            out.addLabel(SECTION, "system", LABEL_END);
            content(v);
        } finally {
            out = saved;
        }
    }

    private void messageBody(String role) throws IOException, ExtractionException {
        x.lastRole = role;
        out.addLabel(SECTION, role, LABEL_END);
        while (in.next() == JsonToken.FIELD_NAME) {
            String f = in.name();
            JsonToken v = in.next();
            if (f.equals("content")) {
                content(v);
            } else {
                in.skip();
            }
        }
        out.boundary();
    }

    /** Anthropic content: a string or an array of blocks (null tolerated as empty). */
    private void content(JsonToken v) throws IOException, ExtractionException {
        content(v, this::blockBody, "a content block object", "a string or an array of content blocks");
    }

    private void blockBody(String type) throws IOException, ExtractionException {
        switch (type) {
            case "text" -> textField("text");
            case "thinking" -> labelledText("thinking");
            case "redacted_thinking" -> redactedThinking();
            case "image" -> sourceBlock("image", false);
            case "document" -> sourceBlock("document", true);
            case "tool_use", "server_tool_use" -> toolUse(type);
            case "tool_result" -> toolResult();
            default -> genericPart(type, BLOCK_OPTIONS, null);
        }
    }

    private void redactedThinking() throws IOException, ExtractionException {
        String data = requiredString("data", MediaRefs.Kind.BASE64);
        out.add(ITEM).add("redacted_thinking").add(FIELD).add("data=").add(data);
    }

    /** {@code image} and {@code document} blocks: the source, then (documents) title and context. */
    private void sourceBlock(String tag, boolean document) throws IOException, ExtractionException {
        out.add(ITEM).add(tag);
        boolean seen = false;
        String title = null;
        String context = null;
        while (in.next() == JsonToken.FIELD_NAME) {
            String f = in.name();
            JsonToken v = in.next();
            if (f.equals("source")) {
                if (v != JsonToken.START_OBJECT) {
                    throw Errors.invalidType(in.path(), "a source object");
                }
                out.add(FIELD).add("source=");
                in.typed("type", this::sourceBody);
                seen = true;
            } else if (document && f.equals("title")) {
                title = in.optString(v);
            } else if (document && f.equals("context")) {
                context = in.optString(v);
            } else {
                in.skip();
            }
        }
        if (!seen) {
            throw Errors.missingField(in.path() + ".source");
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
                while (in.next() == JsonToken.FIELD_NAME) {
                    String f = in.name();
                    JsonToken v = in.next();
                    if (f.equals("data")) {
                        in.requireString(v);
                        data = media.ref(MediaRefs.Kind.BASE64);
                    } else if (f.equals("media_type")) {
                        mediaType = in.optString(v);
                    } else {
                        in.skip();
                    }
                }
                if (data == null) {
                    throw Errors.missingField(in.path() + ".data");
                }
                out.add(type)
                        .add(':')
                        .add(mediaType == null ? "" : mediaType)
                        .add(':')
                        .add(data);
            }
            case "url" -> {
                String ref = requiredString("url", MediaRefs.Kind.URL);
                out.add("url:").add(ref);
            }
            case "file" -> {
                String ref = requiredString("file_id", null);
                out.add("file:").add(ref);
            }
            case "content" -> {
                out.add("content:");
                while (in.next() == JsonToken.FIELD_NAME) {
                    String f = in.name();
                    JsonToken v = in.next();
                    if (f.equals("content")) {
                        content(v);
                    } else {
                        in.skip();
                    }
                }
            }
            default -> {
                Utf8Builder sb = new Utf8Builder(64);
                canon.fields(sb, DIGEST, "type", null);
                out.add(type).add(':').add(sb);
            }
        }
    }

    private void toolUse(String type) throws IOException, ExtractionException {
        String id = null;
        String name = null;
        Utf8Builder input = null;
        while (in.next() == JsonToken.FIELD_NAME) {
            String f = in.name();
            JsonToken v = in.next();
            switch (f) {
                case "id" -> id = in.optString(v);
                case "name" -> name = in.optString(v);
                case "input" -> {
                    input = new Utf8Builder(64);
                    canon.value(input, CanonicalJson.NONE);
                }
                default -> in.skip();
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
        while (in.next() == JsonToken.FIELD_NAME) {
            String f = in.name();
            JsonToken v = in.next();
            switch (f) {
                case "content" -> {
                    out.add(FIELD).add("content=");
                    content(v);
                }
                case "tool_use_id" -> toolUseId = in.optString(v);
                case "is_error" -> isError = in.optBoolean(v);
                default -> in.skip();
            }
        }
        if (toolUseId != null) {
            out.add(FIELD).add("tool_use_id=").add(toolUseId);
        }
        if (isError) {
            out.add(FIELD).add("is_error=true");
        }
    }
}
