package dev.cart.extract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** {@code remoteMediaUrlPolicy}: unset allows media by URL; set, it rejects it with that status, naming the part. */
class RemoteMediaPolicyTest {

    private static final String URL = "https://secret.example.com/private/token=abc123/image.png";

    private final PromptExtractor allow = new PromptExtractor(ExtractOptions.defaults());
    private final PromptExtractor reject = new PromptExtractor(
            ExtractOptions.builder().remoteMediaUrlPolicy(403).build());
    private final PromptExtractor reject422 = new PromptExtractor(
            ExtractOptions.builder().remoteMediaUrlPolicy(422).build());

    private void rejected(Endpoint e, String json, String param) throws Exception {
        byte[] body = json.getBytes(StandardCharsets.UTF_8);
        allow.extract(e, body); // allowed when unset
        ExtractionException x = assertThrows(ExtractionException.class, () -> reject.extract(e, body));
        assertEquals(403, x.status());
        assertEquals("remote_media_rejected", x.code());
        assertEquals(param, x.param());
        assertEquals("invalid_request_error", x.type());
        assertTrue(x.getMessage().contains(param), x.getMessage());
        assertFalse(x.getMessage().contains("secret.example.com"), "never echo the URL: " + x.getMessage());
        assertFalse(x.getMessage().contains("http"), x.getMessage());
        assertEquals(
                422,
                assertThrows(ExtractionException.class, () -> reject422.extract(e, body))
                        .status());
    }

    private void allowed(Endpoint e, String json) throws Exception {
        reject.extract(e, json.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void urlsDisguisedWithLeadingControlsOrSpacesOrNoSchemeAreRefused() throws Exception {
        // Python's urlsplit strips leading C0 controls and spaces, so the replica would see https here.
        for (String prefix : new String[] {" ", "\\t", "\\u0000", "\\u001f ", "\\n"}) {
            rejected(
                    Endpoint.CHAT_COMPLETIONS,
                    "{\"messages\":[{\"role\":\"user\",\"content\":["
                            + "{\"type\":\"image_url\",\"image_url\":{\"url\":\"" + prefix + URL + "\"}}]}]}",
                    "messages[0].content[0].image_url.url");
        }
        // A URL position that is not inline data is refused whatever it looks like.
        rejected(
                Endpoint.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"content\":["
                        + "{\"type\":\"image_url\",\"image_url\":{\"url\":\"//secret.example.com/x.png\"}}]}]}",
                "messages[0].content[0].image_url.url");
        // Inline data stays allowed, also with leading spaces.
        allowed(
                Endpoint.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"content\":["
                        + "{\"type\":\"image_url\",\"image_url\":{\"url\":\" data:image/png;base64,iVBORw0KGgo=\"}}]}]}");
    }

    @Test
    void chatImageUrl() throws Exception {
        rejected(
                Endpoint.CHAT_COMPLETIONS,
                "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"s\"},"
                        + "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"look\"},"
                        + "{\"type\":\"image_url\",\"image_url\":{\"url\":\"" + URL + "\",\"detail\":\"low\"}}]}]}",
                "messages[1].content[1].image_url.url");
        rejected(
                Endpoint.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"content\":[" + "{\"type\":\"image_url\",\"image_url\":\"" + URL
                        + "\"}]}]}",
                "messages[0].content[0].image_url");
        rejected(
                Endpoint.CHAT_COMPLETIONS,
                Json.parse(Fixtures.bytes("chat-image-url"))
                        .toString()
                        .replace("https://upload.wikimedia.org", "https://secret.example.com"),
                "messages[0].content[1].image_url.url");
    }

    @Test
    void chatImageUrlReadOutOfOrder() throws Exception {
        // role and type last: the object is re-read, and the path must still be right
        rejected(
                Endpoint.CHAT_COMPLETIONS,
                "{\"messages\":[{\"content\":\"x\",\"role\":\"user\"},{\"content\":["
                        + "{\"image_url\":{\"detail\":\"auto\",\"url\":\"" + URL
                        + "\"},\"type\":\"image_url\"}],\"role\":\"user\"}],\"model\":\"m\"}",
                "messages[1].content[0].image_url.url");
        rejected(
                Endpoint.MESSAGES,
                "{\"messages\":[{\"content\":[{\"source\":{\"url\":\"" + URL + "\",\"type\":\"url\"},"
                        + "\"type\":\"image\"}],\"role\":\"user\"}]}",
                "messages[0].content[0].source.url");
    }

    @Test
    void vllmAudioAndVideoUrls() throws Exception {
        rejected(
                Endpoint.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"content\":[" + "{\"type\":\"audio_url\",\"audio_url\":{\"url\":\""
                        + URL + "\"}}]}]}",
                "messages[0].content[0].audio_url.url");
        rejected(
                Endpoint.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"content\":[" + "{\"type\":\"video_url\",\"video_url\":{\"url\":\""
                        + URL + "\"}}]}]}",
                "messages[0].content[0].video_url.url");
    }

    @Test
    void chatFileDataByUrl() throws Exception {
        rejected(
                Endpoint.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"content\":["
                        + "{\"type\":\"file\",\"file\":{\"filename\":\"x.pdf\",\"file_data\":\"" + URL + "\"}}]}]}",
                "messages[0].content[0].file.file_data");
    }

    @Test
    void anthropicImageAndDocumentUrls() throws Exception {
        rejected(
                Endpoint.MESSAGES,
                "{\"model\":\"c\",\"max_tokens\":3,\"messages\":[{\"role\":\"user\",\"content\":["
                        + "{\"type\":\"image\",\"source\":{\"type\":\"url\",\"url\":\"" + URL + "\"}}]}]}",
                "messages[0].content[0].source.url");
        rejected(
                Endpoint.MESSAGES,
                "{\"messages\":[{\"role\":\"user\",\"content\":\"q\"},{\"role\":\"assistant\",\"content\":\"a\"},"
                        + "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"read\"},"
                        + "{\"type\":\"document\",\"title\":\"t\",\"source\":{\"type\":\"url\",\"url\":\"" + URL
                        + "\"}}]}]}",
                "messages[2].content[1].source.url");
        rejected(
                Endpoint.MESSAGES,
                "{\"system\":[{\"type\":\"image\",\"source\":{\"type\":\"url\",\"url\":\"" + URL + "\"}}],"
                        + "\"messages\":[{\"role\":\"user\",\"content\":\"q\"}]}",
                "system[0].source.url");
    }

    @Test
    void nestedInToolResultsAndDocumentContent() throws Exception {
        rejected(
                Endpoint.MESSAGES,
                "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\","
                        + "\"content\":[{\"type\":\"text\",\"text\":\"shot:\"},{\"type\":\"image\",\"source\":{\"type\":\"url\",\"url\":\""
                        + URL + "\"}}]}]}]}",
                "messages[0].content[0].content[1].source.url");
        rejected(
                Endpoint.MESSAGES,
                "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"document\",\"source\":"
                        + "{\"type\":\"content\",\"content\":[{\"type\":\"image\",\"source\":{\"type\":\"url\",\"url\":\""
                        + URL + "\"}}]}}]}]}",
                "messages[0].content[0].source.content[0].source.url");
    }

    @Test
    void unknownPartTypesOfTheUsualShapes() throws Exception {
        rejected(
                Endpoint.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"content\":["
                        + "{\"type\":\"input_image\",\"input_image\":{\"url\":\"" + URL + "\"}}]}]}",
                "messages[0].content[0].input_image.url");
        rejected(
                Endpoint.MESSAGES,
                "{\"messages\":[{\"role\":\"user\",\"content\":["
                        + "{\"type\":\"video\",\"source\":{\"type\":\"url\",\"url\":\"" + URL + "\"}}]}]}",
                "messages[0].content[0].source.url");
    }

    @Test
    void anySchemeButDataCountsAsRemote() throws Exception {
        for (String u :
                new String[] {"http://x/y.png", "HTTPS://X/Y.PNG", "file:///etc/passwd", "s3://bucket/k", "ftp://h/f"
                }) {
            byte[] body =
                    ("{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":\""
                                    + u + "\"}}]}]}")
                            .getBytes(StandardCharsets.UTF_8);
            assertEquals(
                    "remote_media_rejected",
                    assertThrows(ExtractionException.class, () -> reject.extract(Endpoint.CHAT_COMPLETIONS, body))
                            .code(),
                    u);
        }
    }

    @Test
    void inlineAndFileIdMediaAreAllowed() throws Exception {
        for (String f : new String[] {
            "chat-image-inline",
            "chat-input-audio",
            "chat-file",
            "messages-image-base64",
            "messages-documents",
            "messages-thinking",
            "chat-system-multiturn"
        }) {
            reject.extract(Fixtures.endpoint(f), Fixtures.bytes(f));
        }
        allowed(
                Endpoint.CHAT_COMPLETIONS,
                "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\","
                        + "\"image_url\":{\"url\":\"DATA:image/png;base64,AAAA\"}}]}]}");
        // A URL in text is just text, and search results name their source without fetching it.
        allowed(Endpoint.CHAT_COMPLETIONS, "{\"messages\":[{\"role\":\"user\",\"content\":\"see " + URL + "\"}]}");
        allowed(
                Endpoint.MESSAGES,
                "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"search_result\",\"source\":\"" + URL
                        + "\",\"title\":\"t\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}]}]}");
    }

    @Test
    void remoteFixturesAreRejected() {
        for (String[] f : new String[][] {
            {"chat-image-url", "messages[0].content[1].image_url.url"},
            {"chat-vllm-media", "messages[0].content[0].video_url.url"},
            {"messages-image-url", "messages[0].content[0].source.url"},
            {"messages-document-url", "messages[0].content[0].source.url"}
        }) {
            ExtractionException x = assertThrows(
                    ExtractionException.class, () -> reject.extract(Fixtures.endpoint(f[0]), Fixtures.bytes(f[0])));
            assertEquals(f[1], x.param(), f[0]);
            assertEquals(403, x.status());
        }
    }
}
