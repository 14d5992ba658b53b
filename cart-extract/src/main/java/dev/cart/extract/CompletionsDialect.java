package dev.cart.extract;

import static dev.cart.extract.Extraction.FIELD;
import static dev.cart.extract.Extraction.ITEM;
import static dev.cart.extract.Extraction.SEP;

import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;

/**
 * {@code POST /v1/completions}: the prompt, a string or token ids, or a batch of them separated by
 * {@code US} with a boundary after each element. Nothing is required.
 */
final class CompletionsDialect extends Dialect {

    CompletionsDialect(Extraction x, JsonCursor in, ExtractOptions opts) {
        super(x, in, opts);
    }

    @Override
    boolean member(String name, JsonToken v) throws IOException, ExtractionException {
        if (!name.equals("prompt")) {
            return false;
        }
        prompt(v);
        return true;
    }

    @Override
    void end() {}

    private void prompt(JsonToken v) throws IOException, ExtractionException {
        out = x.main;
        switch (v) {
            case VALUE_STRING -> text();
            case VALUE_NULL -> {}
            case START_ARRAY -> {
                JsonToken t = in.next();
                if (t == JsonToken.VALUE_NUMBER_INT) {
                    tokenIds(t); // one prompt of token ids
                    return;
                }
                boolean first = true;
                for (; t != JsonToken.END_ARRAY; t = in.next()) {
                    if (!first) {
                        out.add(SEP);
                    }
                    first = false;
                    if (t == JsonToken.VALUE_STRING) {
                        text();
                    } else if (t == JsonToken.START_ARRAY) {
                        tokenIds(in.next());
                    } else {
                        throw Errors.invalidType(in.path(), "a string or an array of token ids");
                    }
                    out.boundary();
                }
            }
            default ->
                throw Errors.invalidType(
                        in.path(),
                        "a string, an array of strings, an array of token ids, or an array of token-id arrays");
        }
    }

    /** Token ids from the current token to the array's end, each as decimal digits and a comma. */
    private void tokenIds(JsonToken t) throws IOException, ExtractionException {
        out.add(ITEM).add("tokens").add(FIELD);
        char[] digits = new char[10];
        for (; t != JsonToken.END_ARRAY; t = in.next()) {
            if (t != JsonToken.VALUE_NUMBER_INT) {
                throw Errors.invalidType(in.path(), "a token id (a non-negative integer)");
            }
            if (!in.isNonNegativeInt()) {
                throw Errors.invalidValue(in.path(), in.path() + " must be a token id in [0, 2147483647]");
            }
            int id = in.intValue();
            int at = digits.length;
            do {
                digits[--at] = (char) ('0' + id % 10);
                id /= 10;
            } while (id != 0);
            out.add(digits, at, digits.length - at).add(',');
        }
    }
}
