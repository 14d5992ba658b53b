package dev.cart.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.cart.proxy.core.PassThroughMedia;
import dev.cart.proxy.http.Answer;
import dev.cart.proxy.http.Responses;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code proxy.remote_media_url_policy} holds on the paths the proxy passes through, which a replica may
 * treat as a prompt (vLLM's {@code /invocations} hands a chat body to its chat handler; embeddings and
 * pooling take chat messages; the Responses API has {@code input_image}; SGLang's {@code /generate} takes
 * {@code image_data}): refused with the configured status and an OpenAI-style error, nothing forwarded,
 * nothing left in flight (the harness checks). Before, every one of these reached the replica.
 */
class PassThroughMediaTest {

    static final String CHAT_WITH_REMOTE_IMAGE = "{\"model\":\"fake\",\"messages\":[{\"role\":\"user\",\"content\":["
            + "{\"type\":\"text\",\"text\":\"what is this\"},{\"type\":\"image_url\",\"image_url\":{\"url\":"
            + "\"https://example.com/cat.png\"}}]}]}";

    record Case(String path, String body, String param) {}

    static final List<Case> REMOTE = List.of(
            new Case("/invocations", CHAT_WITH_REMOTE_IMAGE, "messages[0].content[1].image_url.url"),
            new Case("/v1/embeddings", CHAT_WITH_REMOTE_IMAGE, "messages[0].content[1].image_url.url"),
            new Case("/pooling", CHAT_WITH_REMOTE_IMAGE, "messages[0].content[1].image_url.url"),
            new Case(
                    "/v1/responses",
                    "{\"model\":\"fake\",\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_image\","
                            + "\"image_url\":\"  http://10.0.0.1/x.png\"}]}]}",
                    "input[0].content[0].image_url"),
            new Case(
                    "/v1/responses",
                    "{\"model\":\"fake\",\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_file\","
                            + "\"file_url\":\"https://example.com/a.pdf\"}]}]}",
                    "input[0].content[0].file_url"),
            new Case(
                    "/generate",
                    "{\"text\":\"describe\",\"image_data\":[\"data:image/png;base64,AAAA\",\"file:///etc/passwd\"]}",
                    "image_data[1]"),
            new Case(
                    "/v1/messages/count_tokens",
                    "{\"model\":\"fake\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\","
                            + "\"source\":{\"type\":\"url\",\"url\":\"https://example.com/a.png\"}}]}]}",
                    "messages[0].content[0].source.url"));

    static final String INLINE_ONLY = "{\"model\":\"fake\",\"messages\":[{\"role\":\"user\",\"content\":["
            + "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,AAAA\"}},"
            + "{\"type\":\"text\",\"text\":\"see https://example.com, a url in text is just text\"}]}],"
            + "\"url\":\"https://example.com/not-media\"}";

    @Test
    void remoteMediaOnPassThroughPathsIsRefused() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "proxy:\n  remote_media_url_policy: 451\n")) {
            for (Case c : REMOTE) {
                HttpResponse<String> r = h.post(c.path(), c.body());
                assertEquals(451, r.statusCode(), c.path() + " " + r.body());
                assertTrue(r.headers().firstValue("content-type").orElse("").startsWith("application/json"));
                JsonNode err = Responses.JSON.readTree(r.body()).get("error");
                assertEquals("remote_media_rejected", err.get("code").asText(), r.body());
                assertEquals("invalid_request_error", err.get("type").asText(), r.body());
                assertEquals(c.param(), err.get("param").asText(), r.body());
                assertEquals(0, h.replica(0).count(), c.path() + " reached the replica");
            }
            // an encoded spelling of a pass-through path is the same path to the replica
            String raw = h.rawExchange("POST /invocation%73 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    + "Content-Length: " + CHAT_WITH_REMOTE_IMAGE.length() + "\r\nConnection: close\r\n\r\n"
                    + CHAT_WITH_REMOTE_IMAGE);
            assertEquals(451, HttpBadInputTest.status(raw), raw);
            assertEquals(0, h.replica(0).count());
            // inline media, and URLs that are not in a media position, pass
            for (String path : List.of("/invocations", "/v1/embeddings", "/pooling", "/v1/responses")) {
                HttpResponse<String> ok = h.post(path, INLINE_ONLY);
                assertEquals(200, ok.statusCode(), path + " " + ok.body());
            }
            assertEquals(4, h.replica(0).count());
        }
    }

    @Test
    void anUnreadableJsonBodyIsRefusedAndANonJsonBodyPasses() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "proxy:\n  remote_media_url_policy: 403\n")) {
            HttpResponse<String> bad = h.post("/invocations", "{\"messages\": [1, 2");
            assertEquals(400, bad.statusCode(), bad.body());
            assertEquals(
                    "invalid_json",
                    Responses.JSON.readTree(bad.body()).get("error").get("code").asText());
            assertEquals(0, h.replica(0).count());
            HttpResponse<String> form = h.post("/v1/audio/transcriptions", "--b\r\nContent-Disposition: x\r\n\r\n");
            assertEquals(200, form.statusCode(), form.body());
            assertEquals(1, h.replica(0).count());
        }
    }

    @Test
    void withThePolicyOffPassThroughBodiesAreForwardedAsTheyAre() throws Exception {
        try (ProxyHarness h = ProxyHarness.start(1, "")) {
            HttpResponse<String> r = h.post("/invocations", CHAT_WITH_REMOTE_IMAGE);
            assertEquals(200, r.statusCode(), r.body());
            assertEquals(CHAT_WITH_REMOTE_IMAGE, h.replica(0).last().bodyText());
        }
    }

    /** The scanner alone: positions, encodings, and what passes. */
    @Test
    void theScannerFindsReferencesWhereverAReplicaWouldFetchThem() {
        assertNull(PassThroughMedia.check(bytes(CHAT_WITH_REMOTE_IMAGE), null), "policy off");
        assertNull(PassThroughMedia.check(bytes(INLINE_ONLY), 403));
        assertNull(PassThroughMedia.check(bytes("not json at all"), 403));
        assertNull(PassThroughMedia.check(new byte[0], 403));
        assertNull(PassThroughMedia.check(bytes("{\"x\":NaN,\"image_data\":\"iVBORw0KGgo=\"}"), 403));
        assertNull(PassThroughMedia.check(bytes("{\"file_data\":\"/models/local.png\"}"), 403), "a path, no scheme");
        assertNotNull(PassThroughMedia.check(bytes("{\"a\":{\"b\":[{\"video_url\":\"rtsp://cam\"}]}}"), 403));
        assertNotNull(
                PassThroughMedia.check(bytes("{\"audio_url\":{\"url\":\"\"}}"), 403), "a URL position: inline only");
        assertNotNull(PassThroughMedia.check(bytes("[{\"image_url\":[[\"s3://bucket/x\"]]}]"), 403));
        assertNotNull(
                PassThroughMedia.check(bytes("{\"image_url\":\"x\",\"image_url\":\"data:,\"}"), 403), "duplicates");
        assertNotNull(PassThroughMedia.check(bytes("\uFEFF {\"file_data\":\"https://a/b\"}"), 403), "a BOM");
        byte[] utf16 = "{\"image_url\":\"https://a/b\"}".getBytes(StandardCharsets.UTF_16LE);
        Answer a = PassThroughMedia.check(utf16, 403);
        assertNotNull(a, "UTF-16, which Python's json.loads reads");
        assertEquals(403, a.status());
        Answer trailing = PassThroughMedia.check(bytes("{\"a\":1} {\"image_url\":\"https://a\"}"), 403);
        assertEquals(400, trailing.status(), "two documents: unreadable, refused");
        Answer deep = PassThroughMedia.check(bytes("[".repeat(1200) + "]".repeat(1200)), 403);
        assertEquals(400, deep.status());
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
