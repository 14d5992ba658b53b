package dev.cart.extract;

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonFactoryBuilder;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.ObjectCodec;
import com.fasterxml.jackson.core.io.IOContext;
import com.fasterxml.jackson.core.json.UTF8StreamJsonParser;
import com.fasterxml.jackson.core.sym.ByteQuadsCanonicalizer;
import com.fasterxml.jackson.core.util.BufferRecycler;

/**
 * Jackson's UTF-8 parser over a request body, with two things the extraction needs that the public API
 * does not give: the array offset of the current token, and marking a string as read once
 * {@link JsonText} has decoded it from the body bytes.
 *
 * <p>Why: Jackson reads a string value lazily; when the caller does not ask for its text, the next
 * {@code nextToken} skips it byte by byte. Prompt text is decoded by {@link JsonText} (straight into the
 * key's segment), so without {@link #stringRead} every byte of it would be scanned twice. JsonText accepts
 * exactly the strings Jackson accepts (a valid escape, no raw control character, strict UTF-8) and
 * declines everything else, which Jackson then reads and judges as usual.
 *
 * <p>How: {@code _inputPtr} and {@code _tokenIncomplete} are the protected state Jackson's own
 * {@code _skipString} leaves behind (the pointer past the closing quote, the token complete); the
 * factory below builds this parser where Jackson's builds its own, with the same arguments (a UTF-8 byte
 * order mark skipped as Jackson's encoding detection skips it). Not thread-safe, as any parser.
 */
final class BodyParser extends UTF8StreamJsonParser {

    private BodyParser(
            IOContext ctxt,
            int features,
            ObjectCodec codec,
            ByteQuadsCanonicalizer sym,
            byte[] body,
            int start,
            int end,
            int bytesPreProcessed) {
        super(ctxt, features, null, codec, sym, body, start, end, bytesPreProcessed, false);
    }

    /** The buffers this parser was made with (the extractor's pool's, see {@link BufferPool}). */
    BufferRecycler buffers() {
        return _ioContext.bufferRecycler();
    }

    /** The offset in the body array of the current token's first byte (a string's opening quote). */
    int tokenOffset() {
        // Jackson records the position after the token's first byte (its own location subtracts one too)
        return (int) (_tokenInputTotal - _currInputProcessed) - 1;
    }

    /**
     * Marks the current string token, not yet read by Jackson, as read up to its closing quote at
     * {@code closingQuote} (an offset in the body array), so that the next token is read from there.
     */
    void stringRead(int closingQuote) {
        if (_tokenIncomplete) {
            _inputPtr = closingQuote + 1;
            _tokenIncomplete = false;
        }
    }

    /**
     * Moves the parser, whose current token is a START_ARRAY, to the array's closing bracket at
     * {@code closing} (an offset in the body array), so that the next token is that array's END_ARRAY:
     * for an array whose bytes are known to parse without error (see {@link ToolsCache}). The skipped bytes
     * hold {@code lines} line breaks, the last ending at {@code lastLineStart} (an offset in the body array;
     * ignored when {@code lines} is 0), counted as Jackson counts them, so that the line and column of a
     * later error are the ones a full reading reports.
     */
    void skipArrayTo(int closing, int lines, int lastLineStart) {
        _inputPtr = closing;
        if (lines > 0) {
            _currInputRow += lines;
            _currInputRowStart = lastLineStart;
        }
    }

    /** A {@link JsonFactory} whose byte-array parsers are {@link BodyParser}s. */
    static final class Factory extends JsonFactory {
        private static final long serialVersionUID = 1L;

        Factory(JsonFactoryBuilder builder) {
            super(builder);
        }

        @Override
        protected JsonParser _createParser(byte[] data, int offset, int len, IOContext ctxt) {
            // Bodies are UTF-8 (checked before parsing): no detection beyond a byte order mark, as Jackson's.
            int start = offset;
            if (len >= 3
                    && data[offset] == (byte) 0xEF
                    && data[offset + 1] == (byte) 0xBB
                    && data[offset + 2] == (byte) 0xBF) {
                start += 3;
            }
            ctxt.setEncoding(JsonEncoding.UTF8);
            return new BodyParser(
                    ctxt,
                    _parserFeatures,
                    _objectCodec,
                    _byteSymbolCanonicalizer.makeChild(_factoryFeatures),
                    data,
                    start,
                    offset + len,
                    start - offset);
        }
    }
}
