package dev.cart.proxy.http;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.Test;

/**
 * Which headers cross the proxy: the names compared in place (letter case folded) drop exactly what the rule
 * says, the name in lower case against the hop-by-hop, the side's own and the Connection-named headers.
 */
class HopByHopTest {

    private static final Set<String> REQUEST_OWN = Set.of("host", "content-length", "expect", "http2-settings");
    private static final Set<String> RESPONSE_OWN = Set.of("content-length", "date");

    private static final List<String> NAMES = List.of(
            "Host",
            "HOST",
            "host",
            "Hos",
            "Hostt",
            "Content-Length",
            "content-length",
            "Content-Type",
            "Content-Lengtx",
            "Connection",
            "CONNECTION",
            "Keep-Alive",
            "keep-alive",
            "Proxy-Authorization",
            "proxy-authenticate",
            "Proxy-Connection",
            "Proxy-",
            "proxy",
            "Proxy-Anything",
            "PROXY-X",
            "TE",
            "te",
            "Tf",
            "Trailer",
            "Trailers",
            "Transfer-Encoding",
            "Upgrade",
            "Expect",
            "HTTP2-Settings",
            "Date",
            "Authorization",
            "X-Private",
            "x-private",
            "X-Routed-Peer",
            "x-routed-peer",
            "X-Routed-Peers",
            ":status",
            ":path",
            "",
            "A",
            "x-request-id",
            "Cach\u00e9-Control",
            "\u212Aeep-Alive",
            "Connecti\u0130n",
            "X-\u00c9t\u00e9",
            "x-\u00e9t\u00e9",
            "Accept",
            "User-Agent");

    /** The rule, as the proxy first wrote it: the name in lower case, looked up in the sets. */
    private static boolean reference(String name, boolean request, Set<String> named, String except) {
        String lower = name.toLowerCase(Locale.ROOT);
        boolean hop = HopByHop.HOP_BY_HOP.contains(lower) || lower.startsWith("proxy-") || named.contains(lower);
        if (request) {
            return hop || REQUEST_OWN.contains(lower);
        }
        return lower.startsWith(":") || hop || RESPONSE_OWN.contains(lower) || lower.equals(except);
    }

    private static HeaderView view(List<String> names, List<String> connection) {
        return new HeaderView() {
            @Override
            public String first(String name) {
                return all(name).isEmpty() ? null : all(name).get(0);
            }

            @Override
            public List<String> all(String name) {
                return name.equals("connection") ? connection : List.of();
            }

            @Override
            public void forEach(BiConsumer<String, String> each) {
                for (String n : names) {
                    each.accept(n, "v");
                }
            }
        };
    }

    @Test
    void dropsWhatTheRuleDrops() {
        for (List<String> connection :
                List.of(List.<String>of(), List.of("close, X-Private"), List.of("x-\u00e9t\u00e9"))) {
            Set<String> named = HopByHop.connectionTokens(connection);
            HeaderView from = view(NAMES, connection);
            List<String> expected = new ArrayList<>();
            List<String> got = new ArrayList<>();
            for (String n : NAMES) {
                if (!reference(n, true, named, null)) {
                    expected.add(n);
                }
            }
            HopByHop.forEachRequestHeader(from, (n, v) -> got.add(n));
            assertEquals(expected, got, "request, Connection: " + connection);
            for (String except : new String[] {null, "x-routed-peer"}) {
                List<String> expectedOut = new ArrayList<>();
                List<String> gotOut = new ArrayList<>();
                for (String n : NAMES) {
                    if (!reference(n, false, named, except)) {
                        expectedOut.add(n);
                    }
                }
                HopByHop.forEachResponseHeader(from, except, (n, v) -> gotOut.add(n));
                assertEquals(expectedOut, gotOut, "response, except " + except + ", Connection: " + connection);
            }
        }
    }

    @Test
    void theDroppedNamesAreWhatTheCopyLeavesOut() {
        for (List<String> connection :
                List.of(List.<String>of(), List.of("close, X-Private"), List.of("x-\u00e9t\u00e9"))) {
            HeaderView from = view(NAMES, connection);
            List<String> kept = new ArrayList<>();
            List<CharSequence> dropped = new ArrayList<>();
            HopByHop.forEachRequestHeader(from, (n, v) -> kept.add(n));
            HopByHop.forEachDroppedRequestName(from, dropped::add);
            assertEquals(NAMES, merged(kept, dropped), "request, Connection: " + connection);
            for (String except : new String[] {null, "x-routed-peer"}) {
                List<String> keptOut = new ArrayList<>();
                List<CharSequence> droppedOut = new ArrayList<>();
                HopByHop.forEachResponseHeader(from, except, (n, v) -> keptOut.add(n));
                HopByHop.forEachDroppedResponseName(from, except, droppedOut::add);
                assertEquals(NAMES, merged(keptOut, droppedOut), "response, except " + except + ", " + connection);
            }
        }
    }

    /** The names of {@link #NAMES} in order, each taken from {@code kept} or {@code dropped}: both, and no other. */
    private static List<String> merged(List<String> kept, List<CharSequence> dropped) {
        List<String> out = new ArrayList<>();
        int k = 0;
        int d = 0;
        for (String n : NAMES) {
            if (k < kept.size() && kept.get(k).equals(n)) {
                out.add(kept.get(k++));
            } else if (d < dropped.size() && dropped.get(d).toString().equals(n)) {
                out.add(dropped.get(d++).toString());
            }
        }
        assertEquals(kept.size() + dropped.size(), out.size(), "each name once, kept or dropped: " + kept + dropped);
        return out;
    }

    @Test
    void keepsEndToEndHeadersInOrderWithTheirValues() {
        List<String> seen = new ArrayList<>();
        HopByHop.forEachRequestHeader(
                view(List.of("Authorization", "Connection", "X-Multi", "X-Multi"), List.of("close")),
                (n, v) -> seen.add(n + "=" + v));
        assertEquals(List.of("Authorization=v", "X-Multi=v", "X-Multi=v"), seen);
        assertEquals(Map.of().size(), HopByHop.connectionTokens(List.of()).size());
    }
}
