package dev.cart.proxy.netty;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The front takes a plain path target as it is, without {@link URI}: only where URI would parse it into the same raw
 * path, the same decoded path and no query, authority or fragment.
 */
class PlainPathTest {

    /** What URI makes of {@code target}, checked against the front's shortcut. */
    private static void sameAsUri(String target) {
        URI uri;
        try {
            uri = new URI(target);
        } catch (URISyntaxException e) {
            assertFalse(ClientExchange.plainPath(target), "URI refuses " + target);
            return;
        }
        boolean same = target.equals(uri.getRawPath())
                && target.equals(uri.getPath())
                && uri.getRawQuery() == null
                && uri.getRawAuthority() == null
                && uri.getRawFragment() == null
                && uri.getScheme() == null;
        if (ClientExchange.plainPath(target)) {
            assertTrue(same, "taken as a plain path, but URI differs: " + target);
        }
    }

    @Test
    void plainTargetsAreTakenAsTheyAre() {
        for (String t : List.of("/v1/chat/completions", "/v1/messages", "/", "/health", "/a/b.c/d-e_f~g", "/v1/x/")) {
            assertTrue(ClientExchange.plainPath(t), t);
            sameAsUri(t);
        }
    }

    @Test
    void everyOtherTargetGoesToUri() {
        for (String t : List.of(
                "",
                "*",
                "//evil.example/v1/chat/completions",
                "http://evil.example/x",
                "/v1/chat/completions?x=1",
                "/v1/chat/completion%73",
                "/a#frag",
                "/a b",
                "/a:b",
                "/a@b",
                "v1/chat",
                "/\u00e9")) {
            assertFalse(ClientExchange.plainPath(t), t);
        }
    }

    /** Random targets over an alphabet with every character that changes how URI reads a target. */
    @Test
    void randomTargetsAgreeWithUri() {
        String alphabet = "/aZ09-._~?#%:@!$&'()*+,;= \"<>[]\\^`{|}\u00e9";
        SplittableRandom random = new SplittableRandom(47);
        int plain = 0;
        for (int i = 0; i < 200_000; i++) {
            int n = random.nextInt(1, 12);
            StringBuilder b = new StringBuilder(n);
            for (int k = 0; k < n; k++) {
                // mostly the plain characters, so that plain targets come up often
                b.append(
                        random.nextInt(3) == 0
                                ? alphabet.charAt(random.nextInt(alphabet.length()))
                                : alphabet.charAt(random.nextInt(6)));
            }
            String t = b.toString();
            sameAsUri(t);
            if (ClientExchange.plainPath(t)) {
                plain++;
            }
        }
        assertTrue(plain > 1_000, "plain targets generated: " + plain);
    }
}
