package dev.cart.extract;

import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * What the three API dialects ({@link ChatDialect}, {@link CompletionsDialect}, {@link MessagesDialect})
 * share: the cursor they read with, the sections they write to, and the readers of content, text fields,
 * tool lists and parts of unknown type. A dialect reads the top-level members of its API
 * ({@link #member}); the model and stream flag, common to all, are read by {@link Extraction}.
 *
 * <p>Order inside an object: small fields that follow the big one in the key (a message's {@code name},
 * a tool result's id) are held until the object ends, so the order of members never changes the key.
 * Not thread-safe: one per extraction.
 */
abstract class Dialect {

    final Extraction x;
    final JsonCursor in;
    final MediaRefs media;
    final CanonicalJson canon;
    private final int maxStringLength;
    private final ToolsCache toolsCache;
    /** The segment key characters are being written to. */
    Segment out;

    Dialect(Extraction x, JsonCursor in, ExtractOptions opts) {
        this.x = x;
        this.in = in;
        this.media = new MediaRefs(in, opts);
        this.canon = new CanonicalJson(in, media);
        this.maxStringLength = opts.maxStringLength();
        this.toolsCache = x.toolsCache;
        this.out = x.main;
    }

    /** Reads the top-level member {@code name}, whose value {@code v} is the current token; false if unknown. */
    abstract boolean member(String name, JsonToken v) throws IOException, ExtractionException;

    /** Called after the body's last member: fails when a required member was absent. */
    abstract void end() throws ExtractionException;

    /** A non-empty array of messages, each read by {@code message} once its {@code role} is known. */
    final void messages(JsonToken v, JsonCursor.Handler message) throws IOException, ExtractionException {
        if (v != JsonToken.START_ARRAY) {
            throw Errors.invalidType(in.path(), "an array of messages");
        }
        out = x.main;
        int n = 0;
        while (in.next() != JsonToken.END_ARRAY) {
            if (in.token() != JsonToken.START_OBJECT) {
                throw Errors.invalidType(in.path(), "an object");
            }
            in.typed("role", message);
            n++;
        }
        if (n == 0) {
            throw Errors.invalidValue("messages", "messages must contain at least one message");
        }
    }

    /**
     * Writes the string that is the current token into {@link #out}. Jackson checks the length limit only
     * when it joins a string's buffers, which extraction never does, so it is checked here.
     */
    final void text() throws IOException, ExtractionException {
        if (in.text(out) > maxStringLength) {
            throw Errors.valueTooLong(in.path(), maxStringLength);
        }
    }

    /**
     * Message content in either API: a string, null (empty), or an array of typed parts read by {@code part},
     * separated in the key.
     */
    final void content(JsonToken v, JsonCursor.Handler part, String partExpected, String expected)
            throws IOException, ExtractionException {
        switch (v) {
            case VALUE_STRING -> text();
            case VALUE_NULL -> {}
            case START_ARRAY -> {
                boolean first = true;
                while (in.next() != JsonToken.END_ARRAY) {
                    if (in.token() != JsonToken.START_OBJECT) {
                        throw Errors.invalidType(in.path(), partExpected);
                    }
                    if (!first) {
                        out.add(Extraction.SEP);
                    }
                    first = false;
                    in.typed("type", part);
                }
            }
            default -> throw Errors.invalidType(in.path(), expected);
        }
    }

    /** Streams the string field {@code field} of the current object into the key; the field is required. */
    final void textField(String field) throws IOException, ExtractionException {
        boolean seen = false;
        while (in.next() == JsonToken.FIELD_NAME) {
            String f = in.name();
            JsonToken v = in.next();
            if (f.equals(field)) {
                in.requireString(v);
                text();
                seen = true;
            } else {
                in.skip();
            }
        }
        if (!seen) {
            throw Errors.missingField(in.path() + "." + field);
        }
    }

    /** Reads one member of an object: its name, and its value as the current token. */
    interface MemberReader {
        void read(String name, JsonToken v) throws IOException, ExtractionException;
    }

    /**
     * A part holding labelled text (chat {@code refusal}, Anthropic {@code thinking}): {@code ITEM label
     * FIELD}, then the text of the part's member of the same name, which is required.
     */
    final void labelledText(String label) throws IOException, ExtractionException {
        out.add(Extraction.ITEM).add(label).add(Extraction.FIELD);
        textField(label);
    }

    /**
     * Reads the member {@code field} of the current object, which is required and must be an object, one
     * member at a time with {@code inner}; the other members of the current object are skipped.
     */
    final void requiredObject(String field, MemberReader inner) throws IOException, ExtractionException {
        boolean seen = false;
        while (in.next() == JsonToken.FIELD_NAME) {
            String f = in.name();
            JsonToken v = in.next();
            if (!f.equals(field)) {
                in.skip();
                continue;
            }
            if (v != JsonToken.START_OBJECT) {
                throw Errors.invalidType(in.path(), "an object");
            }
            seen = true;
            while (in.next() == JsonToken.FIELD_NAME) {
                String g = in.name();
                inner.read(g, in.next());
            }
        }
        if (!seen) {
            throw Errors.missingField(in.path() + "." + field);
        }
    }

    /**
     * The required string member {@code field} of the current object: a media reference of {@code kind},
     * or the string as it is when {@code kind} is null; the other members are skipped.
     */
    final String requiredString(String field, MediaRefs.@Nullable Kind kind) throws IOException, ExtractionException {
        String ref = null;
        while (in.next() == JsonToken.FIELD_NAME) {
            String f = in.name();
            JsonToken v = in.next();
            if (f.equals(field)) {
                in.requireString(v);
                ref = kind == null ? in.string() : media.ref(kind);
            } else {
                in.skip();
            }
        }
        if (ref == null) {
            throw Errors.missingField(in.path() + "." + field);
        }
        return ref;
    }

    /** A part or block of a type this class does not know: its tag, then its other fields as canonical JSON. */
    final void genericPart(String type, Set<CanonicalJson.Option> options, @Nullable String mediaKey)
            throws IOException, ExtractionException {
        Utf8Builder sb = new Utf8Builder(64);
        canon.fields(sb, options, "type", mediaKey);
        out.add(Extraction.ITEM).add(type).add(Extraction.FIELD).add(sb);
    }

    /**
     * A list of tool definitions: {@code SECTION label LABEL_END}, then each tool's canonical JSON, separated
     * by {@code SEP}. A list whose bytes were seen recently by this extractor is not parsed again
     * ({@link ToolsCache}).
     */
    final void toolList(JsonToken v, Segment seg, String label, Set<CanonicalJson.Option> options)
            throws IOException, ExtractionException {
        if (v == JsonToken.VALUE_NULL) {
            return;
        }
        if (v != JsonToken.START_ARRAY) {
            throw Errors.invalidType(in.path(), "an array");
        }
        int start = in.tokenOffset();
        byte[] body = in.body();
        int end = in.bodyEnd();
        boolean located = start >= in.bodyFrom() && start < end && body[start] == '[';
        ToolsCache.Hit hit = located ? toolsCache.find(body, start, end, label, options) : null;
        if (hit != null) {
            in.skipArrayTo(start + hit.rawLength() - 1, hit.lines(), hit.lastLineStart());
            if (in.next() != JsonToken.END_ARRAY) {
                throw new IllegalStateException("cached tool list did not end where it ended before");
            }
            // the cached text by reference (it never changes); the list's bytes equal a list of strict UTF-8
            seg.addRef(hit.text(), 0, hit.text().length, hit.units());
            in.checkedUtf8(start, start + hit.rawLength());
            return;
        }
        Utf8Builder all = new Utf8Builder(256);
        boolean first = true;
        while (in.next() != JsonToken.END_ARRAY) {
            if (first) {
                all.ascii(Extraction.SECTION).string(label).ascii(Extraction.LABEL_END);
                first = false;
            } else {
                all.ascii(Extraction.SEP);
            }
            if (in.token() == JsonToken.START_OBJECT) {
                canon.fields(all, options, null, null);
            } else {
                canon.value(all, CanonicalJson.NONE);
            }
        }
        seg.add(all);
        int closing = in.tokenOffset();
        if (located && closing > start && closing < end && body[closing] == ']') {
            toolsCache.put(body, start, closing + 1, label, options, all.bytes(), all.length());
        }
    }
}
