package dev.cart.extract;

import static dev.cart.extract.Extraction.ATTR;
import static dev.cart.extract.Extraction.FIELD;
import static dev.cart.extract.Extraction.ITEM;
import static dev.cart.extract.Extraction.LABEL_END;
import static dev.cart.extract.Extraction.SECTION;

import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.util.EnumSet;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * {@code POST /v1/chat/completions}: tools (and legacy functions) as canonical JSON, then each message as
 * {@code SOH role STX content attributes} with a boundary after it; content parts (text, refusal, media
 * by URL or inline, input audio, files, unknown types) as the module README describes.
 */
final class ChatDialect extends Dialect {

    private static final Set<CanonicalJson.Option> PART_OPTIONS =
            EnumSet.of(CanonicalJson.Option.DIGEST_LONG, CanonicalJson.Option.DROP_CACHE_CONTROL);

    private boolean sawMessages;

    ChatDialect(Extraction x, JsonCursor in, ExtractOptions opts) {
        super(x, in, opts);
    }

    @Override
    boolean member(String name, JsonToken v) throws IOException, ExtractionException {
        switch (name) {
            case "messages" -> {
                messages(v, this::messageBody);
                sawMessages = true;
            }
            case "tools" -> toolList(v, x.tools(), "tools", CanonicalJson.NONE);
            case "functions" -> toolList(v, x.functions(), "functions", CanonicalJson.NONE);
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

    private void messageBody(String role) throws IOException, ExtractionException {
        x.lastRole = role;
        out.addLabel(SECTION, role, LABEL_END);
        String name = null;
        String refusal = null;
        Utf8Builder functionCall = null;
        Utf8Builder toolCalls = null;
        String toolCallId = null;
        while (in.next() == JsonToken.FIELD_NAME) {
            String f = in.name();
            JsonToken v = in.next();
            switch (f) {
                case "content" -> content(v);
                case "name" -> name = in.optString(v);
                case "refusal" -> refusal = in.optString(v);
                case "tool_call_id" -> toolCallId = in.optString(v);
                case "tool_calls" -> toolCalls = canon.optional(v, JsonToken.START_ARRAY, "an array of tool calls");
                case "function_call" -> functionCall = canon.optional(v, JsonToken.START_OBJECT, "an object");
                default -> in.skip();
            }
        }
        attr("name", name);
        attr("refusal", refusal);
        attr("function_call", functionCall);
        attr("tool_calls", toolCalls);
        attr("tool_call_id", toolCallId);
        out.boundary();
    }

    private void attr(String name, @Nullable String value) {
        if (value != null) {
            out.add(ATTR).add(name).add(FIELD).add(value);
        }
    }

    private void attr(String name, @Nullable Utf8Builder value) {
        if (value != null) {
            out.add(ATTR).add(name).add(FIELD).add(value);
        }
    }

    private void content(JsonToken v) throws IOException, ExtractionException {
        content(v, this::partBody, "a content part object", "a string, an array of content parts, or null");
    }

    private void partBody(String type) throws IOException, ExtractionException {
        switch (type) {
            case "text" -> textField("text");
            case "refusal" -> labelledText("refusal");
            case "image_url", "audio_url", "video_url" -> urlPart(type);
            case "input_audio" -> inputAudioPart();
            case "file" -> filePart();
            default -> genericPart(type, PART_OPTIONS, type);
        }
    }

    /** {@code image_url}, {@code audio_url}, {@code video_url}: {@code {url, detail?}} or a bare URL string. */
    private void urlPart(String type) throws IOException, ExtractionException {
        String ref = null;
        String detail = null;
        while (in.next() == JsonToken.FIELD_NAME) {
            String f = in.name();
            JsonToken v = in.next();
            if (!f.equals(type)) {
                in.skip();
            } else if (v == JsonToken.VALUE_STRING) {
                ref = media.ref(MediaRefs.Kind.URL);
            } else if (v == JsonToken.START_OBJECT) {
                while (in.next() == JsonToken.FIELD_NAME) {
                    String g = in.name();
                    JsonToken w = in.next();
                    if (g.equals("url")) {
                        in.requireString(w);
                        ref = media.ref(MediaRefs.Kind.URL);
                    } else if (g.equals("detail")) {
                        detail = in.optString(w);
                    } else {
                        in.skip();
                    }
                }
                if (ref == null) {
                    throw Errors.missingField(in.path() + ".url");
                }
            } else {
                throw Errors.invalidType(in.path(), "an object with a url");
            }
        }
        if (ref == null) {
            throw Errors.missingField(in.path() + "." + type);
        }
        out.add(ITEM).add(type).add(FIELD).add("url=").add(ref);
        if (detail != null) {
            out.add(FIELD).add("detail=").add(detail);
        }
    }

    /** {@code input_audio: {data: <base64>, format}}. */
    private void inputAudioPart() throws IOException, ExtractionException {
        String[] dataAndFormat = new String[2];
        requiredObject("input_audio", (g, w) -> {
            if (g.equals("data")) {
                in.requireString(w);
                dataAndFormat[0] = media.ref(MediaRefs.Kind.BASE64);
            } else if (g.equals("format")) {
                dataAndFormat[1] = in.optString(w);
            } else {
                in.skip();
            }
        });
        String data = dataAndFormat[0];
        String format = dataAndFormat[1];
        if (data == null) {
            throw Errors.missingField(in.path() + ".input_audio.data");
        }
        out.add(ITEM).add("input_audio").add(FIELD).add("data=").add(data);
        if (format != null) {
            out.add(FIELD).add("format=").add(format);
        }
    }

    /** {@code file: {file_id?, file_data?, filename?}}. */
    private void filePart() throws IOException, ExtractionException {
        String[] idNameData = new String[3];
        requiredObject("file", (g, w) -> {
            switch (g) {
                case "file_id" -> idNameData[0] = in.optString(w);
                case "filename" -> idNameData[1] = in.optString(w);
                case "file_data" -> {
                    if (w != JsonToken.VALUE_NULL) {
                        in.requireString(w);
                        idNameData[2] = media.ref(MediaRefs.Kind.FILE_DATA);
                    }
                }
                default -> in.skip();
            }
        });
        String fileId = idNameData[0];
        String filename = idNameData[1];
        String fileData = idNameData[2];
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
}
