package dev.cart.proxy.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class NormaliseTest {

    /** The long way, for every path: the scan only decides when it may be skipped. */
    private static String reference(String decoded) {
        return decoded == null || decoded.isEmpty() ? "/" : ProxyCore.rebuilt(decoded);
    }

    @Test
    void everyPathNormalisesAsTheLongWaySays() {
        String[] fixed = {
            null,
            "",
            "/",
            "//",
            "/.",
            "/..",
            "/./",
            "/../a",
            "a",
            "a/b",
            "/v1/chat/completions",
            "/v1/chat/completions/",
            "/v1//chat",
            "/v1/./chat",
            "/v1/x/../chat",
            "/.a",
            "/a.",
            "/..a",
            "/a..",
            "/...",
            "/a/.",
            "/a/..",
            "/a/.../b",
            "/.well-known/x"
        };
        for (String p : fixed) {
            assertEquals(reference(p), ProxyCore.normalise(p), String.valueOf(p));
        }
        char[] alphabet = {'/', '/', '.', '.', 'a', 'b'};
        SplittableRandom rnd = new SplittableRandom(7);
        for (int i = 0; i < 200_000; i++) {
            char[] c = new char[1 + rnd.nextInt(9)];
            for (int k = 0; k < c.length; k++) {
                c[k] = alphabet[rnd.nextInt(alphabet.length)];
            }
            String p = new String(c);
            assertEquals(reference(p), ProxyCore.normalise(p), p);
        }
    }

    @Test
    void aPathAlreadyNormalIsGivenBackAsItIs() {
        String p = "/v1/chat/completions";
        assertSame(p, ProxyCore.normalise(p));
    }
}
