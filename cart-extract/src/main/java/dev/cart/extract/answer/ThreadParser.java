package dev.cart.extract.answer;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.util.BufferRecycler;
import java.io.IOException;
import java.lang.ref.SoftReference;
import org.jspecify.annotations.Nullable;

/**
 * Each thread's parser of small JSON answers ({@link AnswerReader}'s JSON bodies), one body after another, as a
 * streamed answer's parser reads its events: each body is one root value for it, read to its closing brace, and
 * whatever the body holds after it is dropped ({@link JsonParser#releaseBuffered}), as a parser of its own would
 * ignore it. A body that does not parse, or is not read to its closing brace, leaves the parser in no known state:
 * it is closed, and the next body gets a new one. So each body reads as it would with a parser of its own, without
 * making one per body (its context, buffers, symbol table and nested contexts: about 700 bytes and a fifth of
 * reading a 400-byte answer).
 *
 * <p>Which bodies: up to {@link #MAX_BYTES} bytes (the parser's text buffer keeps the size of the longest string it
 * met), starting with an opening brace and a byte that is not zero: UTF-8, as Jackson's own detection would find (a zero
 * there is UTF-16 or UTF-32, read by a parser of its own as before). Only while the factory sets no per-document
 * limit ({@link StreamReadConstraints#getMaxDocumentLength}, {@link StreamReadConstraints#getMaxTokenCount}: a
 * host may change the defaults), which would count every body the parser has read. A parser reads at most
 * {@link #MAX_USES} bodies, then is closed (merging the names it met into the factory's symbol table) and replaced.
 *
 * <p>Concurrency: a thread's parser is used by that thread alone, by one {@link #read} at a time ({@link #read}
 * runs to its end before returning, and nothing it calls reads a body). It is softly held, as Jackson's own
 * thread-local buffers, so that a pool of many threads gives it up under memory pressure.
 */
final class ThreadParser {

    /** Largest body read by the thread's parser. */
    static final int MAX_BYTES = 16 * 1024;
    /** Bodies a parser reads before it is closed and replaced. */
    static final int MAX_USES = 4096;

    /** The factory sets no limit that a parser reading several bodies would count across them. */
    private static final boolean NO_DOCUMENT_LIMIT = noDocumentLimit(AnswerReader.JSON.streamReadConstraints());

    private static final ThreadLocal<SoftReference<ThreadParser>> OWN = new ThreadLocal<>();

    private final AnswerReader.EventInput input = new AnswerReader.EventInput();
    private final BufferRecycler buffers = new BufferRecycler();
    private @Nullable JsonParser parser;
    private int uses;

    private ThreadParser() {}

    static boolean noDocumentLimit(StreamReadConstraints c) {
        return c.getMaxDocumentLength() < 0 && c.getMaxTokenCount() < 0;
    }

    /** Whether the body {@code b[off, off + len)} is read by the thread's parser ({@link #read}). */
    static boolean fits(byte[] b, int off, int len) {
        return NO_DOCUMENT_LIMIT && len >= 2 && len <= MAX_BYTES && b[off] == '{' && b[off + 1] != 0;
    }

    /**
     * Reads the JSON object that the body {@code b[off, off + len)} opens (one that {@link #fits}) with the calling
     * thread's parser, handing it to {@code reader} as {@link AnswerReader} does with a parser of its own; what
     * follows the object is ignored.
     *
     * @return false when the body does not parse
     */
    static boolean read(byte[] b, int off, int len, DialectReader reader) {
        SoftReference<ThreadParser> ref = OWN.get();
        ThreadParser own = ref == null ? null : ref.get();
        if (own == null) {
            own = new ThreadParser();
            OWN.set(new SoftReference<>(own));
        }
        return own.readBody(b, off, len, reader);
    }

    private boolean readBody(byte[] b, int off, int len, DialectReader reader) {
        input.set(b, off, len);
        try {
            JsonParser p = parser;
            if (p == null) {
                p = AnswerReader.JSON.parser(input, buffers);
                parser = p;
            }
            if (p.nextToken() != JsonToken.START_OBJECT) {
                close(); // cannot happen after a brace: the parser is in no known state
                return true;
            }
            reader.read(p);
            if (p.currentToken() != JsonToken.END_OBJECT
                    || !p.getParsingContext().inRoot()
                    || ++uses >= MAX_USES) {
                close(); // not read to its end (the next body starts on a new parser), or used enough
            } else {
                p.releaseBuffered(AnswerReader.DISCARD); // the rest of the body, if any: ignored
            }
            return true;
        } catch (IOException | RuntimeException e) {
            close(); // the parser is in no known state: the next body gets a new one
            return false;
        } finally {
            input.clear();
        }
    }

    private void close() {
        JsonParser p = parser;
        parser = null;
        uses = 0;
        if (p != null) {
            try {
                p.close();
            } catch (IOException e) {
                // closing a parser of bytes already read: nothing to report
            }
        }
    }
}
