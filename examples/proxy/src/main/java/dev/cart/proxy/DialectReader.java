package dev.cart.proxy;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import dev.cart.core.ServedUsage;
import java.io.IOException;

/**
 * Reads one API dialect's answer objects (a whole JSON body, or one event of a stream) for
 * {@link ResponseObserver}: the usage the replica reports about its prompt cache, and the answer's text
 * into an {@link AnswerText}. Each object arrives as a parser positioned after its opening brace; the
 * reader consumes it to the end. Not thread-safe: one instance per response.
 */
interface DialectReader {

    /** Reads one JSON object; the parser is just past its {@code START_OBJECT}. */
    void read(JsonParser p) throws IOException;

    /** What the replica reported so far, {@link ServedUsage#UNKNOWN} for each field it did not. */
    ServedUsage usage();

    /** Skips the value at {@code t}; true unless it is null or an empty array. */
    static boolean present(JsonParser p, JsonToken t) throws IOException {
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
}
