package dev.cart.extract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.cart.core.PromptKey;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Inline media enters the key as a digest of its content. */
class MediaTest {

    private final PromptExtractor extractor = new PromptExtractor(ExtractOptions.defaults());

    private static String image(int size, long seed) {
        byte[] b = new byte[size];
        new Random(seed).nextBytes(b);
        return Base64.getEncoder().encodeToString(b);
    }

    private static String chat(String url) {
        return "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"What is this?\"},"
                + "{\"type\":\"image_url\",\"image_url\":{\"url\":\"" + url + "\"}}]}]}";
    }

    private static String anthropic(String data) {
        return "{\"model\":\"c\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\","
                + "\"source\":{\"type\":\"base64\",\"media_type\":\"image/jpeg\",\"data\":\"" + data + "\"}}]}]}";
    }

    private static String audio(String data) {
        return "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_audio\",\"input_audio\":{\"data\":\""
                + data + "\",\"format\":\"mp3\"}}]}]}";
    }

    private static String file(String data) {
        return "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"file\",\"file\":{\"filename\":\"a.pdf\",\"file_data\":\""
                + data + "\"}}]}]}";
    }

    private PromptKey key(Endpoint e, String json) throws ExtractionException {
        return extractor.extract(e, json.getBytes(StandardCharsets.UTF_8)).key();
    }

    private String text(Endpoint e, String json) throws ExtractionException {
        return Fixtures.show(extractor.keyText(e, json.getBytes(StandardCharsets.UTF_8)));
    }

    @Test
    void sameBytesSameKeyDifferentBytesDifferentKey() throws Exception {
        String a = image(3000, 1);
        String b = image(3000, 2);
        assertEquals(
                key(Endpoint.CHAT_COMPLETIONS, chat("data:image/png;base64," + a)),
                key(Endpoint.CHAT_COMPLETIONS, chat("data:image/png;base64," + a)));
        assertNotEquals(
                key(Endpoint.CHAT_COMPLETIONS, chat("data:image/png;base64," + a)),
                key(Endpoint.CHAT_COMPLETIONS, chat("data:image/png;base64," + b)));
        assertEquals(key(Endpoint.MESSAGES, anthropic(a)), key(Endpoint.MESSAGES, anthropic(a)));
        assertNotEquals(key(Endpoint.MESSAGES, anthropic(a)), key(Endpoint.MESSAGES, anthropic(b)));
        assertEquals(key(Endpoint.CHAT_COMPLETIONS, audio(a)), key(Endpoint.CHAT_COMPLETIONS, audio(a)));
        assertNotEquals(key(Endpoint.CHAT_COMPLETIONS, audio(a)), key(Endpoint.CHAT_COMPLETIONS, audio(b)));
        assertEquals(key(Endpoint.CHAT_COMPLETIONS, file(a)), key(Endpoint.CHAT_COMPLETIONS, file(a)));
        assertNotEquals(key(Endpoint.CHAT_COMPLETIONS, file(a)), key(Endpoint.CHAT_COMPLETIONS, file(b)));
        // one byte different at the very end
        String c = a.substring(0, a.length() - 4) + (a.endsWith("AAAA") ? "AAAB" : "AAAA");
        assertNotEquals(key(Endpoint.MESSAGES, anthropic(a)), key(Endpoint.MESSAGES, anthropic(c)));
    }

    @Test
    void theMediaTypeIsPartOfTheKeyThePayloadOnlyAsDigest() throws Exception {
        String a = image(100, 3);
        String png = text(Endpoint.CHAT_COMPLETIONS, chat("data:image/png;base64," + a));
        String jpeg = text(Endpoint.CHAT_COMPLETIONS, chat("data:image/jpeg;base64," + a));
        assertNotEquals(png, jpeg);
        assertEquals(png.substring(png.indexOf('#')), jpeg.substring(jpeg.indexOf('#')));
        assertTrue(!png.contains(a.substring(0, 20)), "payload does not enter the key");
        // The digest covers the payload bytes only, so the same image has the same digest in both APIs.
        String anth = text(Endpoint.MESSAGES, anthropic(a));
        assertEquals(
                png.substring(png.indexOf('#'), png.indexOf('#') + 33),
                anth.substring(anth.indexOf('#'), anth.indexOf('#') + 33));
    }

    @Test
    void escapedAndUnescapedSpellingsOfOneImageAgree() throws Exception {
        String a = image(600, 4);
        assertTrue(a.contains("/"), "test image should contain a slash");
        String escaped = a.replace("/", "\\/");
        assertEquals(
                key(Endpoint.CHAT_COMPLETIONS, chat("data:image/png;base64," + a)),
                key(Endpoint.CHAT_COMPLETIONS, chat("data:image\\/png;base64," + escaped)));
        assertEquals(key(Endpoint.MESSAGES, anthropic(a)), key(Endpoint.MESSAGES, anthropic(escaped)));
        assertEquals(
                key(Endpoint.CHAT_COMPLETIONS, audio(a)),
                key(Endpoint.CHAT_COMPLETIONS, audio(String.format("\\u%04x", (int) a.charAt(0)) + a.substring(1))));
        assertEquals(
                key(Endpoint.CHAT_COMPLETIONS, file("data:application/pdf;base64," + a)),
                key(Endpoint.CHAT_COMPLETIONS, file("data:application\\/pdf;base64," + escaped)));
    }

    @Test
    void aFiveMegabyteImageGivesAShortKey() throws Exception {
        String big = image(5 * 1024 * 1024 * 3 / 4, 5); // about 5 MB of base64
        assertTrue(big.length() >= 5_000_000);
        PromptKey small = key(Endpoint.CHAT_COMPLETIONS, chat("data:image/png;base64,AAAA"));
        PromptKey k = key(Endpoint.CHAT_COMPLETIONS, chat("data:image/png;base64," + big));
        assertEquals(small.length(), k.length(), "the part's size does not depend on the payload's");
        assertTrue(k.length() < 200, "key length " + k.length());
        PromptKey ka = key(Endpoint.MESSAGES, anthropic(big));
        assertTrue(ka.length() < 200, "key length " + ka.length());
        PromptKey kb = key(Endpoint.CHAT_COMPLETIONS, audio(big));
        assertTrue(kb.length() < 200, "key length " + kb.length());
    }

    @Test
    void fileDataWithoutADataUriIsBase64() throws Exception {
        String a = image(200, 6);
        assertTrue(text(Endpoint.CHAT_COMPLETIONS, file(a)).matches(".*<F>file_data=#[0-9a-f]{32}\\|"));
    }

    @Test
    void longRemoteUrlsEnterAsDigest() throws Exception {
        String url = "https://example.com/" + "p".repeat(MediaRefs.MAX_REF_BYTES);
        String t = text(Endpoint.CHAT_COMPLETIONS, chat(url));
        assertTrue(t.matches(".*<I>image_url<F>url=#[0-9a-f]{32}\\|"), t);
        String shortUrl = "https://example.com/cat.png";
        assertTrue(text(Endpoint.CHAT_COMPLETIONS, chat(shortUrl)).endsWith("url=" + shortUrl + "|"));
    }

    @Test
    void mediaDigestIsStableAndSensitive() {
        byte[] b = new byte[1000];
        new Random(9).nextBytes(b);
        String d = MediaDigest.of(b, 0, b.length);
        assertEquals(MediaDigest.LENGTH, d.length());
        assertEquals(d, MediaDigest.of(b.clone(), 0, b.length));
        for (int len = 0; len < 40; len++) {
            assertNotEquals(MediaDigest.of(b, 0, len), MediaDigest.of(b, 0, len + 1), "length " + len);
        }
        for (int i = 0; i < b.length; i += 37) {
            byte[] c = b.clone();
            c[i] ^= 1;
            assertNotEquals(d, MediaDigest.of(c, 0, c.length), "bit flip at " + i);
        }
        byte[] zeros = new byte[16];
        assertNotEquals(MediaDigest.of(zeros, 0, 8), MediaDigest.of(zeros, 0, 16));
    }
}
