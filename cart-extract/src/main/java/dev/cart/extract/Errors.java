package dev.cart.extract;

import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import com.fasterxml.jackson.core.io.JsonEOFException;

/**
 * Every {@link ExtractionException} extraction raises, made in one place: the typed errors, and
 * Jackson's exceptions mapped to them. None carries prompt text or a client-supplied value: messages
 * name paths and limits, and Jackson's own messages (which can quote the input) are never passed on.
 */
final class Errors {

    private Errors() {}

    static ExtractionException invalidEncoding() {
        return new ExtractionException(400, "invalid_encoding", null, "request body must be UTF-8 encoded JSON");
    }

    static ExtractionException invalidJson(String what) {
        return new ExtractionException(400, "invalid_json", null, "request body is not valid JSON" + what);
    }

    static ExtractionException invalidType(String path, String what) {
        return new ExtractionException(400, "invalid_type", path, path + " must be " + what);
    }

    static ExtractionException missingField(String path) {
        return new ExtractionException(400, "missing_field", path, "missing required field " + path);
    }

    static ExtractionException invalidValue(String path, String message) {
        return new ExtractionException(400, "invalid_value", path, message);
    }

    static ExtractionException valueTooLong(String path, int maxStringLength) {
        return new ExtractionException(
                400, "value_too_long", path, path + " is longer than " + maxStringLength + " characters");
    }

    /** Maps a Jackson exception to a typed error without its message, which can quote the input. */
    static ExtractionException mapJackson(JsonProcessingException e, JsonCursor in, int maxNestingDepth) {
        String m = e.getOriginalMessage() == null ? "" : e.getOriginalMessage();
        if (e instanceof StreamConstraintsException) {
            if (m.startsWith("Document nesting depth")) {
                return new ExtractionException(
                        400,
                        "nesting_too_deep",
                        in.safePath(),
                        "request body nests objects and arrays deeper than " + maxNestingDepth + " levels");
            }
            if (m.startsWith("String value length")
                    || m.startsWith("Name length")
                    || m.startsWith("Number value length")) {
                String path = in.safePath();
                return new ExtractionException(
                        400,
                        "value_too_long",
                        path,
                        (path == null || path.isEmpty() ? "a value" : path) + " is longer than allowed");
            }
            return new ExtractionException(400, "limit_exceeded", null, "request body exceeds a parser limit");
        }
        if (m.startsWith("Invalid UTF-8") || m.startsWith("Invalid UTF-32")) {
            return invalidEncoding();
        }
        if (e instanceof JsonParseException && m.startsWith("Duplicate field")) {
            String path = in.safePath();
            return new ExtractionException(
                    400,
                    "duplicate_key",
                    path,
                    "duplicate key " + (path == null || path.isEmpty() ? "" : path + " ") + "in a JSON object");
        }
        String where = "";
        if (e.getLocation() != null && e.getLocation().getLineNr() > 0) {
            where = " at line " + e.getLocation().getLineNr() + ", column "
                    + e.getLocation().getColumnNr();
        }
        String what = e instanceof JsonEOFException ? "unexpected end of input" : "syntax error";
        return invalidJson(": " + what + where);
    }
}
