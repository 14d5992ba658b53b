package dev.cart.extract.answer;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.SerializableString;
import com.fasterxml.jackson.core.io.SerializedString;
import dev.cart.core.ServedUsage;
import java.io.IOException;

/**
 * Reads one API dialect's answer objects (a whole JSON body, or one event of a stream) for
 * {@link AnswerReader}: the usage the replica reports about its prompt cache, and the answer's text
 * into an {@link AnswerText}. Each object arrives as a parser positioned after its opening brace; the
 * reader consumes it to the end. Not thread-safe: one instance per response.
 */
interface DialectReader {

    /** Reads one JSON object; the parser is just past its {@code START_OBJECT}. */
    void read(JsonParser p) throws IOException;

    /** Reads one usage object (the value of a {@code usage} member); the parser is just past its {@code START_OBJECT}. */
    void readUsage(JsonParser p) throws IOException;

    /** What the replica reported so far, {@link ServedUsage#UNKNOWN} for each field it did not. */
    ServedUsage usage();

    /** {@link #nextField}: the object ended. */
    int END = -2;
    /** {@link #nextField}: a member whose name is not in the order given. */
    int OTHER = -1;

    /** Jackson's form of names for {@link #nextField}. */
    static SerializedString[] names(String... names) {
        SerializedString[] out = new SerializedString[names.length];
        for (int i = 0; i < names.length; i++) {
            out[i] = new SerializedString(names[i]);
        }
        return out;
    }

    /**
     * Moves to the next member of the current object and says which of {@code order} it is: its index,
     * {@link #OTHER}, or {@link #END} at the end of the object. The name expected next ({@code order[expected]},
     * the one servers write next) is matched against the input's bytes by {@link JsonParser#nextFieldName(
     * SerializableString)}, with no symbol-table look-up or {@code String} comparison; any other name is read
     * as usual and looked up in {@code order}. So a member in the usual order costs least, and any order gives
     * the same answer.
     */
    static int nextField(JsonParser p, SerializableString[] order, int expected) throws IOException {
        if (expected < order.length) {
            if (p.nextFieldName(order[expected])) {
                return expected;
            }
        } else {
            p.nextToken();
        }
        if (p.currentToken() != JsonToken.FIELD_NAME) {
            return END;
        }
        String name = p.currentName();
        for (int i = 0; i < order.length; i++) {
            if (order[i].getValue().equals(name)) {
                return i;
            }
        }
        return OTHER;
    }

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
