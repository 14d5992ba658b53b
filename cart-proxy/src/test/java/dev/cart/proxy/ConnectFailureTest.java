package dev.cart.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.cart.proxy.upstream.ConnectFailure;
import java.net.ConnectException;
import java.net.UnknownHostException;
import org.junit.jupiter.api.Test;

/** The words a 502 and the warning use for each way a connection to a replica fails: never a class name. */
class ConnectFailureTest {

    @Test
    void eachFailureInPlainWords() {
        assertEquals(
                "refused the connection (connection refused)",
                ConnectFailure.describe(
                        new ConnectException("finishConnect(..) failed: Connection refused: /127.0.0.1:1")));
        assertEquals(
                "timed out connecting (nothing answered within proxy.connect_timeout_secs)",
                ConnectFailure.describe(new io.netty.channel.ConnectTimeoutException(
                        "connection timed out after 2000 ms: /10.0.0.1:80")));
        assertEquals(
                "could not be reached: could not resolve host 'nosuch.invalid'",
                ConnectFailure.describe(new UnknownHostException("nosuch.invalid: Name or service not known")));
        assertEquals(
                "could not be reached (boom)",
                ConnectFailure.describe(new RuntimeException(new IllegalStateException("java.io.IOException: boom"))));
    }
}
