package dev.cart.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.ArrayDeque;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class NormaliseTest {

    /** The rule written out plainly: split on '/', drop empty and '.' segments, '..' drops the one before. */
    private static String reference(String decoded) {
        if (decoded == null || decoded.isEmpty()) {
            return "/";
        }
        ArrayDeque<String> segments = new ArrayDeque<>();
        for (String seg : decoded.split("/", -1)) {
            if (seg.isEmpty() || seg.equals(".")) {
                continue;
            }
            if (seg.equals("..")) {
                segments.pollLast();
                continue;
            }
            segments.addLast(seg);
        }
        if (segments.isEmpty()) {
            return "/";
        }
        StringBuilder b = new StringBuilder();
        for (String seg : segments) {
            b.append('/').append(seg);
        }
        return b.toString();
    }

    @Test
    void everyPathNormalisesAsTheRuleSays() {
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
