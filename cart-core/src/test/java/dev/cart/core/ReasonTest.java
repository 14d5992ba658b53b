package dev.cart.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.Locale;
import org.junit.jupiter.api.Test;

class ReasonTest {

    /** Logs and metric labels use the code: the name in lower case, the same string on every call. */
    @Test
    void codeIsTheLowerCaseNameMadeOnce() {
        for (Reason r : Reason.values()) {
            assertEquals(r.name().toLowerCase(Locale.ROOT), r.code());
            assertSame(r.code(), r.code());
            assertEquals(r.code(), r.toString());
        }
    }
}
