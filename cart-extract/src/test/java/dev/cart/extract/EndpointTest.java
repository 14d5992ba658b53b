package dev.cart.extract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.Optional;
import org.junit.jupiter.api.Test;

class EndpointTest {

    @Test
    void forPathIsAnExactMatchAndAnswersWithOneOptionalPerEndpoint() {
        for (Endpoint e : Endpoint.values()) {
            Optional<Endpoint> found = Endpoint.forPath(new String(e.path().toCharArray()));
            assertEquals(Optional.of(e), found);
            assertSame(found, Endpoint.forPath(e.path()));
        }
        for (String other : new String[] {null, "", "/", "/v1/chat/completions/", "/V1/messages", "/v1/completion"}) {
            assertEquals(Optional.empty(), Endpoint.forPath(other), String.valueOf(other));
        }
    }
}
